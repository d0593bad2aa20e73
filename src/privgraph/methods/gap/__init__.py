"""GAP: differentially private GNNs by aggregation perturbation (Sajadmanesh, Shamsabadi, Bellet &
Gatica-Perez, USENIX Security 2023, arXiv 2203.00949), as the authors implement it (github
sisaman/GAP, ``core/methods/node/gap/``).

Three modules, trained one after the other (the paper's Fig. 2 and Algorithm 1):

1. **encoder** — an MLP on the node features alone, trained on the training labels (the graph is not
   read); its normalised hidden layer is each node's embedding x⁰ (‖x⁰_v‖ = 1);
2. **aggregation (PMA, Algorithm 1)** — for k = 1 … K: the neighbour sum Aᵀ x^{k−1} plus Gaussian
   noise N(0, σ²Δ²), row-normalised again, x^k = normalize(Aᵀx^{k−1} + N(0, σ²Δ²I)); the K+1
   tables [x⁰, …, x^K] are computed once and cached;
3. **classifier** — a multi-MLP: one MLP per hop table, their outputs concatenated, normalised, and a
   head MLP (the authors' ``MultiMLP`` with ``combine='cat'``), trained on the cached tables.

Edge level (``gap-edp``): one undirected link (u → v and v → u) changes rows u and v of a hop's sum by
unit vectors, Δ = √2 (the authors' code: Δ = 1, one directed entry, which on an undirected graph such as
Facebook protects half a link); the K aggregations with noise σΔ are together one Gaussian of noise
multiplier σ/√K, calibrated exactly
(the analytic Gaussian, :func:`~privgraph.mechanisms.analytic_gaussian_sigma`; the authors: autodp's
``ComposeGaussian`` of ``ExactGaussianMechanism``).  The encoder reads no edge and the classifier
reads only the noisy tables: both are post-processing, so the classifier is trained by :meth:`fit`.

Node level (``gap-ndp``): by default (``degree_cap="soft"``) (ε, δ)-node-DP on every graph — soft-capped hops
(a sender of degree d > D weighted √(D/d), sensitivity Λ√D on covered pairs) behind a Propose-Test-Release test
whose pass bit is released (:mod:`privgraph.mechanisms.soft_cap`, :class:`~privgraph.methods.gap.node.GAPNode`,
docs/methods/gap.md "Node level"); ``degree_cap="enforced"`` is restricted node-DP for an owner who enforces a
cap D (:mod:`privgraph.methods.node_domain`).  The encoder and the classifier are trained with DP-SGD (Poisson
rate q = B/N, clip C, noise σC, ``epochs·N // B`` steps each, as the authors' ``NoisySGD``), N the public
``num_train``; the hops take σ_h = ``hop_noise_ratio``·σ, σ found by bisection on the RDP composition
(:func:`~privgraph.accounting.rdp.composed_epsilon`).  The release then holds the encoder's and the classifier's
weights (``model_state``); :meth:`fit` evaluates them.

*Sensitivity of a hop* (soft cap, Lemma 1: ‖F_G(X) − F_{G−v}(X)‖ ≤ min(LS(G), LS(G − v)); enforced cap: √D
exactly).  Condition on everything released before hop k (adaptive composition): x^{k−1}_u is the same unit
vector on both sides for every u ≠ v.  Row v exists on G only and its law depends on G, so quasi-convexity over
that latent does not apply directly; instead condition on v's own noise draws η_v (the same law on both sides,
unused on G − v), apply adaptive composition for each fixed η_v (DP-SGD, K hops, DP-SGD: v's row enters the
classifier only as v's own example, whose Poisson add/remove bound holds for any content, and the next hop only
as the unit vector x^k_v, counted by the lemma), then use the joint quasi-convexity of the Rényi divergence
over η_v (van Erven & Harremoës 2014); equivalently, give the G − v run a phantom row that nothing reads.

*The training-node count.*  N = ``num_train`` is public (required with ε; the benchmark tasks give the public
split's count, with a note): q = B/N, T = epochs·N // B, σ and the default δ are functions of it alone.  Each
training node of the data is then sampled independently with probability q and the noisy sum divided by the
public qN = B: the Poisson-subsampled Gaussian's add/remove bound depends on q and σ only, not on how many
training nodes the data hold, so a true count other than N changes only the batches' expected size (and the
utility), never the guarantee — no refusal is needed, and the true count (private: the split is withheld)
appears nowhere in the release.

``gap-inf`` is the same pipeline without noise (ε = ∞), the reference line; ``gap-edp`` without an ε
is the same (the tests check equality).

The package: :mod:`.params` (the parameters), :mod:`.delta` (the default δ), :mod:`.method` (the pipeline,
``gap-inf``, ``gap-edp``), :mod:`.node` (``gap-ndp``); the modules are in :mod:`privgraph.nn.gap`, the
aggregation perturbation in :mod:`privgraph.mechanisms.aggregation`, DP-SGD in :mod:`privgraph.train.dpsgd`.
"""

from privgraph.mechanisms.aggregation import (
    AggregationPerturbation,
    AggregationRelease,
    bound_out_degree,
    neighbour_sum,
    noisy_neighbour_sum,
    perturbed_aggregation,
)
from privgraph.methods.gap.delta import AUTO_DELTA_MAX, auto_delta, auto_delta_count
from privgraph.methods.gap.features_only import MLPNode, MLPNodeParams
from privgraph.methods.gap.method import GAPEdge, GAPInf
from privgraph.methods.gap.node import GAPNode
from privgraph.methods.gap.params import GAPNodeParams, GAPParams
from privgraph.nn.gap import GAPClassifier, GAPEncoder, GAPNodeModel, SparseInputLinear, sparse_input

__all__ = [
    "AUTO_DELTA_MAX",
    "AggregationPerturbation",
    "AggregationRelease",
    "GAPClassifier",
    "GAPEdge",
    "GAPEncoder",
    "GAPInf",
    "GAPNode",
    "GAPNodeModel",
    "GAPNodeParams",
    "GAPParams",
    "MLPNode",
    "MLPNodeParams",
    "SparseInputLinear",
    "auto_delta",
    "auto_delta_count",
    "bound_out_degree",
    "neighbour_sum",
    "noisy_neighbour_sum",
    "perturbed_aggregation",
    "sparse_input",
]

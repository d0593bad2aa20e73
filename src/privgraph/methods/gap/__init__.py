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

Node level (``gap-ndp``): bounded-degree node-DP (:mod:`privgraph.methods.node_domain`).  D
(``max_degree``) is a public promise that every out-degree is ≤ D; a graph above it is refused before any
noise (``over_bound="refuse"``, the default) — or, opted into with ``over_bound="sample"``, bounded by the
authors' random per-node sampling (``BoundOutDegree``) with NO node-level guarantee (ε = ∞) on that graph.
On a graph within D nothing is sampled: the aggregation reads the input.  The encoder and the classifier are
trained with DP-SGD (Poisson rate q = B/N, clip C, noise σC, ``epochs·N // B`` steps each, as the authors'
``NoisySGD``), N the public ``num_train``; one noise multiplier σ for the three mechanisms is found by
bisection on their RDP composition (:func:`~privgraph.accounting.rdp.composed_noise_multiplier`, the
authors' ``ComposedNoisyMechanism``).  The release then holds the encoder's and the classifier's weights
(``model_state``); :meth:`fit` evaluates them.

*Sensitivity of a hop within the domain (Δ = √D, exact).*  Fix a neighbouring pair G, G − v, both with
out-degrees ≤ D, and condition on everything released before hop k (the encoder's weights, the previous hops'
noisy sums of the rows w ≠ v; adaptive composition).  Then x^{k−1}_u is the same unit vector on both sides for
every u ≠ v, and the graph aggregated over is the input on both sides, so (Aᵀx^{k−1})_w − (A'ᵀx^{k−1})_w
= x^{k−1}_v·[v → w] for w ≠ v: at most D rows move, each by a unit vector, ‖·‖₂ ≤ √D (attained by a node with
D out-edges).  Row v exists on one side only; its noisy sum is a latent of G's run that later stages read
only as v's own example in the classifier's DP-SGD (whose Poisson add/remove bound holds for any content of
the example) and, normalised, as the unit vector x^k_v in hop k + 1 (counted above), so by quasi-convexity of
the Rényi divergence over that latent the composed bound (DP-SGD, K hops of Δ = √D, DP-SGD) holds for the
released weights.  In-degrees are not bounded by the argument (v's in-edges reach only row v).  Above the
bound every degree-bounding projection fails (:mod:`privgraph.methods.node_domain`: a hub whose N spokes are
at the bound moves ≥ N − D rows), and so does the random sampling: :func:`bound_out_degree`'s freed-slot
cascade.

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
    "SparseInputLinear",
    "auto_delta",
    "auto_delta_count",
    "bound_out_degree",
    "neighbour_sum",
    "noisy_neighbour_sum",
    "perturbed_aggregation",
    "sparse_input",
]

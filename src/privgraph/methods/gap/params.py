"""GAP's parameters: the authors' defaults (``core/methods/node/gap/gap_inf.py``, ``gap_ndp.py``,
``core/methods/node/base.py``) and GAP-NDP's public bound, count and DP-SGD settings."""

from __future__ import annotations

from dataclasses import dataclass

from privgraph.methods.base import MethodParams, param
from privgraph.methods.node_domain import NUM_TRAIN_HELP, OVER_BOUND_HELP, OVER_BOUND_MODES
from privgraph.nn.gap import GAPClassifier, GAPEncoder
from privgraph.param_checks import no_batch_norm, over_bound_enforced, test_delta_below, whole_num_train

DEGREE_CAPS = ("soft", "enforced")


@dataclass(frozen=True)
class GAPParams(MethodParams):
    """The authors' defaults (``core/methods/node/gap/gap_inf.py``, ``core/methods/node/base.py``)."""

    hops: int = param(2, "K: aggregation hops (the authors' -k)", bound=">= 0")
    hidden: int = param(16, "width of every hidden layer and of the embeddings", bound=">= 1")
    encoder_layers: int = param(2, "layers of the encoder MLP (0: the raw features are aggregated)", bound=">= 0")
    base_layers: int = param(1, "layers of each hop's MLP in the classifier", bound=">= 0")
    head_layers: int = param(1, "layers of the classifier's head MLP", bound=">= 1")
    encoder_epochs: int = param(100, "encoder training epochs", bound=">= 0")
    epochs: int = param(100, "classifier training epochs", bound=">= 1")
    lr: float = param(0.01, "Adam learning rate (encoder and classifier)", bound="> 0")
    weight_decay: float = param(0.0, "Adam weight decay", bound=">= 0")
    dropout: float = param(0.0, "dropout rate", bound="in [0, 1)")
    batch_norm: bool = param(True, "batch normalisation in the MLPs (the authors' default; off under node-level DP)")
    batch_size: int | None = param(
        None,
        "training nodes per Adam step of the encoder and the classifier (None: the full batch, the authors' "
        "default; the authors' batch_size option)",
        bound=">= 1",
    )
    delta: float | None = param(
        None,
        "δ; None: 10^-(number of digits) of n(n-1), the directed pairs of the public node set (EDP; the authors "
        "used |E|, private under edge-level DP), or of the training-node count (NDP, the authors' rule)",
        bound="in (0, 1)",
    )

    def encoder(self, in_dim: int, num_classes: int) -> GAPEncoder:
        """The encoder module of these parameters (:class:`~privgraph.nn.gap.GAPEncoder`)."""
        return GAPEncoder(in_dim, num_classes, self.hidden, self.encoder_layers, self.dropout, self.batch_norm)

    def classifier(self, width: int, num_classes: int) -> GAPClassifier:
        """The classification module of these parameters (:class:`~privgraph.nn.gap.GAPClassifier`)."""
        return GAPClassifier(
            width, num_classes, self.hops, self.hidden, self.base_layers, self.head_layers, self.dropout,
            self.batch_norm,
        )  # fmt: skip


@dataclass(frozen=True)
class GAPNodeParams(GAPParams):
    """GAP-NDP's additions (``gap_ndp.py``: max_degree 100, max_grad_norm 1, batch_size 256).  The epochs stay at
    100 + 100 (the authors' ``gap_ndp.py``: 10 + 10), chosen by a measured curve (``benchmarks/gap_ndp_epochs.py``,
    Cora, 5 seeds): the smallest of 10, 25, 50, 100 within 1 point of the best mean accuracy at ε = 1 and 8;
    100 + 100 is 7 points above 10 + 10 and 1.7 above 50 + 50 at both, for a cost linear in the epochs
    (docs/methods/gap.md)."""

    batch_norm: bool = param(False, "batch normalisation: not under DP-SGD (per-example gradients), always false")
    degree_cap: str = param(
        "soft",
        "soft (default): node-DP on EVERY graph: a sender of degree d > D is weighted √(D/d) and a Propose-Test-"
        "Release test (budget ε_t, δ_t, its pass bit released) guards the hops' sensitivity Λ√D; nothing is "
        "refused. enforced: restricted node-DP (holds only between graphs whose degrees are all ≤ D; not "
        "node-DP on arbitrary graphs), for an owner who enforces the cap D, its own ledger unit 'node (degree ≤ D)'",
        choices=DEGREE_CAPS,
    )
    max_degree: int = param(
        400,
        "D: soft: the public degree past which a sender's weight decays as √(D/d) (hop sensitivity Λ√D); "
        "enforced: the cap the data owner enforces (hop sensitivity √D); never read from the data",
        bound=">= 1",
    )
    ptr_lambda: float = param(1.5, "Λ: the hops are calibrated to sensitivity Λ√D (soft)", bound="> 1")
    test_share: float = param(0.1, "ε_t/ε: the PTR test's share of ε (soft)", bound="in (0, 1)")
    test_delta: float | None = param(
        None, "δ_t: the PTR test's δ, P[pass] on an uncovered graph (soft); None: δ/2", bound="in (0, 0.5)"
    )
    hop_noise_ratio: float = param(
        2.0,
        "σ_h/σ: the public rule splitting the noise: each hop's multiplier σ_h is this times DP-SGD's σ "
        "(one σ found for ε; at 2 a hop costs a quarter of the RDP it costs at a shared σ)",
        bound="> 0",
    )
    over_bound: str = param("refuse", OVER_BOUND_HELP + " (degree_cap=enforced only)", choices=OVER_BOUND_MODES)
    num_train: int | None = param(None, NUM_TRAIN_HELP)
    clip: float = param(1.0, "C: DP-SGD's per-example gradient norm bound", bound="> 0")
    batch_size: int = param(256, "B: expected Poisson batch of DP-SGD (rate q = B / num_train)", bound=">= 1")

    rules = (no_batch_norm, whole_num_train, over_bound_enforced, test_delta_below)

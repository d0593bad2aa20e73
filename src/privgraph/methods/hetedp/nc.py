"""HeteDP node classification on the link model's embeddings — the authors' NC pipeline, opt-in.

The paper's NC numbers (Table I) do not come from a classifier trained on the DP features: the
authors' ``topologyDP_nc.py`` (github AixWinnie/HeteDP) trains the link VGAE (``model.TopoDP``,
unsupervised, with their DP-SGD step ``utilsDP.clip_and_accumulate`` + ``add_noise``) and, after
every epoch, embeds every node of the classified type (``TopoDP.inference_nc``: a posterior
*sample* μ + N(0, I)·σ, not μ), standardises the embeddings per dimension over all nodes, fits a
multinomial logistic regression on the 20 % training nodes (``model.compute_acc_unsupervised``)
and scores micro-F1 on validation and test.  The number it prints — and the paper reports — is the
test micro-F1 of the epoch with the best *test* micro-F1 (``if test_mi > best_test_mic``).

``nc_model="link-vgae"`` (a :class:`~privgraph.methods.hetedp.method.HeteDPParams` setting; the
default ``"han"`` is the HAN on the DP features, §IV-A) reproduces that evaluation on *our* link
release (:func:`~privgraph.methods.hetedp.link_release.link_release`: the RGCN-VGAE trained on the
protected relation's edges), recording the classified type's (μ, log σ) after each DP-SGD epoch
(:class:`EpochEmbeddings`; every iterate is covered by DP-SGD's accounting, so this is
post-processing).  :func:`classify_epochs` then picks the epoch:

* ``nc_selection="validation"`` (the default): the epoch with the best validation micro-F1 — an
  honest estimate (the test labels are read once, at the chosen epoch);
* ``nc_selection="best-test"``: **the paper's optimistic selection**, the best test micro-F1 over
  the epochs — it reads the test labels to choose, so it is not an estimate of anything; kept only
  to measure what the paper's numbers rest on.

``nc_embedding``: ``"mean"`` (the default, μ) or ``"sample"`` (the authors' posterior sample, drawn
from the trial seed).  The privacy guarantee is the link release's, unchanged by either choice
(the labels and the split are public in this setting).

``nc_inputs`` (opt-in, **not DP for the features**): what the link model reads.  ``"release"`` (the
default) is the link release's features.  The authors' ``main.py`` instead runs ``featDP.py`` first:
for every node type a HAN over that type's metapath graphs (``model.FeatDP``: GAT per metapath, 8
heads × 8 hidden, semantic attention; Adam, lr 0.005, weight decay 0.001, dropout 0.8, 100 epochs,
every type seeded alike) is trained on the classified type's training *labels* — on the other types
on degree bins (``dataprepro.get_label``) — with the feature noise ``utilsDP.feat_noise`` redrawn at
each epoch, and the embedding it hands on (``featDP.evaluate``) is that of the *clean* features, every
type's input to ``TopoDP``.  :func:`featdp_embedding` is that loop on our HAN
(:class:`~privgraph.nn.hetero.HANClassifier`); ``"authors-han"`` replaces every type the link model
reads, ``"authors-han-target"`` the classified type only.  The embedding is a deterministic function
of the clean features, the graph and the training labels, so the features get no guarantee
(:func:`featdp_guarantee`: ε = ∞).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor

from privgraph.accounting import PrivacyGuarantee, TrustModel, Unit
from privgraph.data.transforms import standardize_columns
from privgraph.device import current_device, to_device
from privgraph.train.link_prediction import LinkInputs

if TYPE_CHECKING:
    from torch_geometric.data import HeteroData

NC_MODELS = ("han", "link-vgae")  # HeteDP NC: a HAN on the DP features (ours), or the authors' topologyDP_nc.py
EPOCH_SELECTIONS = ("validation", "best-test")  # best-test: the paper's optimistic selection (reads test labels)
NC_EMBEDDINGS = ("mean", "sample")  # sample: the authors' TopoDP.inference_nc (μ + N(0, I)·σ)
# the link model's inputs: the release's features, or the authors' featDP.py HAN embeddings (NOT DP) of
# every type it reads / of the classified type only
NC_INPUTS = ("release", "authors-han", "authors-han-target")
# (nc_model, nc_selection, nc_embedding, nc_inputs)
NC_DEFAULTS = (NC_MODELS[0], EPOCH_SELECTIONS[0], NC_EMBEDDINGS[0], NC_INPUTS[0])
CLASSIFIERS = ("logistic", "svm")
# featDP.py with main.py's defaults: FeatDP's 8 heads × hidden_feat 8, dropout_feat 0.8, lr_feat 0.005,
# weight_decay_feat 0.001, 100 epochs (a literal in featDP.py)
FEATDP_HEADS, FEATDP_HIDDEN, FEATDP_DROPOUT, FEATDP_LR, FEATDP_WEIGHT_DECAY, FEATDP_EPOCHS = (
    8,
    64,
    0.8,
    0.005,
    1e-3,
    100,
)


def check_nc_options(model: str, selection: str, embedding: str, inputs: str = NC_INPUTS[0]) -> None:
    """HeteDP's NC settings: the known values, and the link-embedding options only with
    ``model="link-vgae"``."""
    for name, value, allowed in (
        ("nc_model", model, NC_MODELS),
        ("nc_selection", selection, EPOCH_SELECTIONS),
        ("nc_embedding", embedding, NC_EMBEDDINGS),
        ("nc_inputs", inputs, NC_INPUTS),
    ):
        if value not in allowed:
            raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    if model != "link-vgae" and (selection, embedding, inputs) != NC_DEFAULTS[1:]:
        raise ValueError(
            "nc_selection, nc_embedding and nc_inputs choose an epoch, an embedding and the inputs of "
            "the link model: they apply with nc_model='link-vgae' only"
        )


def check_nc_defaults(model: str, selection: str, embedding: str, inputs: str, where: str) -> None:
    """Refuse the node-classification options away from node classification (``where``: what runs
    instead — link prediction, a release): they would be ignored there, and a release never holds
    their epochs, samples or HAN inputs."""
    if (model, selection, embedding, inputs) != NC_DEFAULTS:
        raise ValueError(
            f"hetedp's nc_model, nc_selection, nc_embedding and nc_inputs are node-classification "
            f"parameters: leave them at their defaults for {where}"
        )


def degree_bins(degree: Tensor, num_classes: int) -> Tensor:
    """The authors' pseudo-labels of an unlabelled type (``data/dataprepro.py``, ``get_label``):
    ``num_classes`` equal-width bins of (0, max − min] (sic: the bins start at 0, not at the least
    degree), class i for s·i < degree < s·(i+1) with s = (max − min)/num_classes, the last class for
    degree > s·(num_classes − 1), class 0 for a degree on a boundary."""
    degree = degree.double()
    step = (degree.max() - degree.min()) / num_classes
    labels = torch.zeros(degree.numel(), dtype=torch.long)
    for i in range(num_classes):
        upper = degree < step * (i + 1) if i < num_classes - 1 else torch.ones_like(degree, dtype=torch.bool)
        labels[(degree > step * i) & upper] = i
    return labels


def featdp_embedding(
    x: Tensor, graph: Any, node_type: str, labels: Tensor, train_mask: Tensor, noise_std: float, seed: int
) -> Tensor:
    """The authors' ``featDP.featureLearning`` for one node type on our HAN: a
    :class:`~privgraph.nn.hetero.HANClassifier` over ``graph`` (the type's metapath graphs; 8 heads,
    64 hidden, dropout 0.8) trained by Adam (lr 0.005, weight decay 0.001) on the cross-entropy of
    ``labels`` on ``train_mask`` for 100 epochs, its input x + N(0, noise_std²) with the noise redrawn
    at every epoch (``utilsDP.feat_noise``), the last weights kept.  Returns the embedding of the
    *clean* ``x`` in eval mode (``featDP.evaluate``: what the authors hand on).  Initialisation,
    dropout and noise come from ``seed`` alone (torch's global generator is restored afterwards)."""
    from privgraph.nn.hetero import HANClassifier

    g = torch.Generator().manual_seed(int(seed))  # the noise is drawn on the CPU, then moved
    device = current_device()
    edges = to_device(graph.edge_index_dict, device)
    x, labels, train_mask = x.to(device), labels.to(device), train_mask.to(device)
    with torch.random.fork_rng():
        torch.manual_seed(int(seed))
        model = HANClassifier(
            x.shape[1],
            FEATDP_HIDDEN,
            int(labels.max()) + 1,
            graph.metadata(),
            node_type,
            heads=FEATDP_HEADS,
            dropout=FEATDP_DROPOUT,
        ).to(device)
        opt = torch.optim.Adam(model.parameters(), lr=FEATDP_LR, weight_decay=FEATDP_WEIGHT_DECAY)
        model.train()
        for _ in range(FEATDP_EPOCHS):
            noisy = x + (noise_std * torch.randn(x.shape, generator=g)).to(device) if noise_std > 0 else x
            loss = torch.nn.functional.cross_entropy(model({node_type: noisy}, edges)[train_mask], labels[train_mask])
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            return model.embed({node_type: x}, edges)[node_type].detach().cpu().clone()


def featdp_guarantee(
    types: list[str], target: str, epsilon_f: float | None, delta: float, noise_std: float
) -> PrivacyGuarantee:
    """The node-feature part of a link release whose inputs of ``types`` are the authors' featDP.py
    HAN embeddings (:func:`featdp_embedding`): none — ε = ∞.  The notes say why, and what the label
    use is (``epsilon_f`` None: trained without noise)."""
    noise = (
        "no noise (no ε)"
        if epsilon_f is None
        else f"the noise (std {noise_std:.4g} per coordinate, redrawn at each of the HAN's {FEATDP_EPOCHS} epochs: "
        f"the paper's calibration at ε_f = {epsilon_f:g}, δ = {delta:g}, itself not DP) only perturbs the HAN's "
        "training, and even that would compose over the epochs"
    )
    return PrivacyGuarantee(
        Unit.NODE_FEATURES,
        TrustModel.CENTRAL,
        math.inf,
        0.0,
        f"HeteDP NC inputs: the authors' featDP.py HAN embeddings of the clean features, NOT DP ({', '.join(types)})",
        (
            "NOT differentially private: the link model reads the HAN embedding of the CLEAN inputs of "
            f"{', '.join(types)} "
            f"(featDP.py's evaluate), a deterministic function of the private features; {noise}",
            f"labels: the HAN of the classified type ({target}) is trained on its TRAINING labels (the training "
            "nodes of the classifier that follows; validation and test labels are not read), so its embedding — the "
            "link model's input — carries label information into the embeddings classified; the other types' HANs "
            "are trained on bins of their metapath degree (the authors' get_label)",
            "use nc_inputs='release' (the default) for the link release's features",
        ),
    )


def featdp_inputs(
    tdata: HeteroData, dataset: str, target: str, split: str, trial_seed: int, params: Any
) -> Callable[[float | None, dict[str, Tensor]], ReplacedInputs]:
    """``nc_inputs="authors-han…"``: the authors' ``featDP.py`` as ``link_release``'s
    ``replace_inputs`` for the registered dataset ``dataset`` (its metapaths) and the hetero-nc
    ``split`` — per replaced type (every type the link model reads, or the classified one
    only) a HAN over its metapath graphs (the classified type: the dataset's metapaths, trained on
    the training labels of the task's split; the others: :func:`~privgraph.data.hetero.two_hop_metapaths`, trained on
    :func:`degree_bins` of their metapath degree on the authors'
    20 % training split from the trial seed; all nodes of a type with fewer than 10), noise of the
    paper's calibration at ε_f redrawn every epoch, the embedding of the clean input handed on
    (:func:`featdp_embedding`; not DP, stated)."""
    from privgraph.data.hetero import hetedp_node_split, metapath_graph, two_hop_metapaths
    from privgraph.data.hetero_splits import hetero_node_masks
    from privgraph.mechanisms import derive_seed
    from privgraph.methods.hetedp.features import paper_noise_std

    y = tdata[target].y
    train = hetero_node_masks(tdata, target, trial_seed, split)[0]
    classes = int(y.max()) + 1
    seed = derive_seed(trial_seed, 9)

    def replace(eps_f: float | None, clean: dict[str, Tensor]) -> ReplacedInputs:
        types = [target] if params.nc_inputs == "authors-han-target" else list(clean)
        sigma = 0.0 if eps_f is None else paper_noise_std(eps_f, params.delta)
        out, trained_on = {}, {}
        for t in types:
            if t == target:
                graph, labels, mask = metapath_graph(tdata, dataset, trial_seed), y, train
                trained_on[t] = f"training labels ({int(train.sum())} nodes), metapaths {list(graph.edge_types)}"
            else:
                graph = metapath_graph(tdata, dataset, trial_seed, two_hop_metapaths(tdata, t))
                degree = sum(
                    torch.bincount(ei[1][ei[0] != ei[1]], minlength=clean[t].shape[0])
                    for ei in graph.edge_index_dict.values()
                ) + len(graph.edge_types)
                n = clean[t].shape[0]  # the authors' split needs >= 10 nodes (one validates); else all train
                mask = hetedp_node_split(n, trial_seed)[0] if n >= 10 else torch.ones(n, dtype=torch.bool)
                labels = degree_bins(degree, classes)
                trained_on[t] = f"degree bins ({classes}), metapaths {list(graph.edge_types)}"
            out[t] = featdp_embedding(clean[t], graph, t, labels, mask, sigma, seed)
        details = {
            "nc_inputs": params.nc_inputs,
            "replaced": types,
            "noise_std": sigma,
            "han_trained_on": trained_on,
            "handed_on": "HAN embedding of the CLEAN inputs (featDP.py)",
        }
        return ReplacedInputs(out, featdp_guarantee(types, target, eps_f, params.delta, sigma), details)

    return replace


def fit_embedding_classifier(x: Any, y: Any, kind: str = "logistic") -> Any:
    """The classifier on node embeddings (scikit-learn), fitted on ``(x, y)``: ``logistic`` —
    ``LogisticRegression(max_iter=3000)`` (multinomial for several classes, as the HeteDP authors'
    ``compute_acc_unsupervised``); ``svm`` — ``LinearSVC`` with scikit-learn's defaults (C = 1, squared
    hinge, one-vs-rest) apart from ``dual=False`` (what its ``dual="auto"`` picks when the nodes
    outnumber the dimensions, and what MAGNN's ``svm_test`` passes; the primal solver is
    deterministic), ``max_iter=10000`` (so that it converges) and ``random_state=0`` (unused by
    the primal solver; fixed)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    if kind not in CLASSIFIERS:
        raise ValueError(f"classifier must be one of {CLASSIFIERS}, got {kind!r}")
    if kind == "svm":
        return LinearSVC(dual=False, max_iter=10000, random_state=0).fit(x, y)
    return LogisticRegression(max_iter=3000).fit(x, y)


@dataclass
class ReplacedInputs:
    """Inputs that replace some types' inputs of HeteDP's link model (``nc_inputs``), with the
    node-feature guarantee that then holds (it replaces the release's) and what to record."""

    x: dict[str, Tensor]
    guarantee: PrivacyGuarantee
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class EpochEmbeddings:
    """The classified type's posterior (μ, log σ) after each DP-SGD epoch, recorded by
    :meth:`record` (the link trainer's ``on_epoch``)."""

    node_type: str
    epochs: list[int] = field(default_factory=list)
    mu: list[Tensor] = field(default_factory=list)
    logstd: list[Tensor] = field(default_factory=list)

    @torch.no_grad()
    def record(self, epoch: int, model: torch.nn.Module, inputs: LinkInputs) -> None:
        """Embed every node of ``node_type`` with the current weights (reads no random stream)."""
        x = inputs.x[self.node_type]
        every = torch.arange(x.shape[0], device=x.device)
        mu, logstd = model(self.node_type, *inputs.rows(self.node_type, every))
        self.epochs.append(epoch)
        self.mu.append(mu.detach().cpu().clone())
        self.logstd.append(logstd.detach().cpu().clone())

    def embeddings(self, kind: str, seed: int) -> list[Tensor]:
        """Per epoch: μ (``"mean"``) or the authors' posterior sample μ + N(0, I)·exp(log σ)
        (``"sample"``, one generator from ``seed``, drawn in epoch order)."""
        if not self.mu:
            raise ValueError("no epoch was recorded (train the link model with on_epoch=record)")
        if kind == "mean":
            return list(self.mu)
        if kind != "sample":
            raise ValueError(f"nc_embedding must be one of {NC_EMBEDDINGS}, got {kind!r}")
        g = torch.Generator().manual_seed(int(seed))
        return [m + torch.randn(m.shape, generator=g) * s.exp() for m, s in zip(self.mu, self.logstd)]


def standardize(z: Tensor) -> np.ndarray:
    """Each dimension centred and scaled to unit std over all nodes (no labels read), constant
    dimensions and non-finite values set to 0 — the authors' ``compute_acc_unsupervised`` before its
    logistic regression (their numpy std has ddof 0, ours ddof 1: one common factor √(n/(n−1)) on
    every dimension)."""
    out = standardize_columns(z.double(), unbiased=True).numpy()
    out[~np.isfinite(out)] = 0.0
    return out


def select_epoch(validation: list[float], test: list[float], selection: str) -> int:
    """Index of the chosen epoch: the first best validation score (``"validation"``) or the first
    best test score (``"best-test"``, the paper's optimistic selection: the authors' loop keeps an
    epoch when ``test_mi > best_test_mic``)."""
    if selection not in EPOCH_SELECTIONS:
        raise ValueError(f"nc_selection must be one of {EPOCH_SELECTIONS}, got {selection!r}")
    scores = validation if selection == "validation" else test
    if not scores:
        raise ValueError("no epoch to select from")
    return int(np.argmax(scores))


def classify_epochs(
    recorded: EpochEmbeddings,
    y: Tensor,
    masks: tuple[Tensor, Tensor, Tensor],
    selection: str,
    embedding: str,
    seed: int,
) -> tuple[dict[str, float], float]:
    """The authors' per-epoch evaluation (module docstring): for each recorded epoch, standardised
    embeddings, the logistic regression fitted on the training nodes, micro-F1 on validation and
    test; the epoch chosen by ``selection`` (:func:`select_epoch`).  Returns its metrics — test
    ``micro_f1`` / ``macro_f1``, ``val_micro_f1``, the chosen ``epoch`` and ``selected_on_test``
    (1 for the paper's optimistic selection) — and its validation micro-F1."""
    from sklearn.metrics import f1_score  # on use: keeps the run's start light

    train, val, test = masks
    labels = y.numpy()
    rows = []
    for z in recorded.embeddings(embedding, seed):
        x = standardize(z)
        predicted = fit_embedding_classifier(x[train.numpy()], labels[train.numpy()]).predict(x)
        rows.append(
            {
                "val": float(f1_score(labels[val.numpy()], predicted[val.numpy()], average="micro")),
                "micro": float(f1_score(labels[test.numpy()], predicted[test.numpy()], average="micro")),
                "macro": float(f1_score(labels[test.numpy()], predicted[test.numpy()], average="macro")),
            }
        )
    i = select_epoch([r["val"] for r in rows], [r["micro"] for r in rows], selection)
    metrics = {
        "micro_f1": rows[i]["micro"],
        "macro_f1": rows[i]["macro"],
        "val_micro_f1": rows[i]["val"],
        "epoch": float(recorded.epochs[i]),
        "selected_on_test": float(selection == "best-test"),
    }
    return metrics, rows[i]["val"]


__all__ = [
    "CLASSIFIERS",
    "EPOCH_SELECTIONS",
    "EpochEmbeddings",
    "NC_DEFAULTS",
    "NC_EMBEDDINGS",
    "NC_INPUTS",
    "NC_MODELS",
    "ReplacedInputs",
    "check_nc_defaults",
    "check_nc_options",
    "classify_epochs",
    "degree_bins",
    "featdp_embedding",
    "featdp_guarantee",
    "fit_embedding_classifier",
    "select_epoch",
    "standardize",
]

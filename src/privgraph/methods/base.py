"""The one method abstraction: what a method protects, its typed parameters, and its release.

Every published system and baseline is a :class:`Method` subclass registered
in :data:`privgraph.methods.METHODS` (``@register_method``).  A class states

* ``name``, ``description``, ``unit`` (the privacy unit of its main guarantee,
  :class:`~privgraph.accounting.Unit`), ``task`` (:class:`Task`) and
  ``private`` (whether it takes an ε);
* ``Params``: a frozen dataclass of its parameters, validated when built
  (:class:`MethodParams`; :func:`param` attaches the help text);
* ``private_fields`` — the input fields its unit covers (never copied raw into
  a release) — and ``public_fields`` — the input fields its setting treats as
  public and copies into the release as given.

``privatize(data, request, rng)``, called by :func:`privgraph.api.release` only, is the one release call: the
graph, its :class:`~privgraph.request.ReleaseRequest` (read as a :class:`~privgraph.methods.request_view.RequestView`)
and a random source in, a :class:`~privgraph.release.PrivateRelease` out.  Node-classification methods implement
:meth:`Method.release` (what the server holds: features, graph, guarantee) and inherit ``privatize``; methods that
train to release (PPCVGAE's embeddings, HeteDP's link reconstructor) override it, with the same signature.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from torch_geometric.data import Data

from privgraph.accounting import PrivacyGuarantee, PrivacyReport, Unit
from privgraph.accounting.ledger import Spend, gaussian_event
from privgraph.data.transforms import one_hot_counts, one_hot_degree
from privgraph.data.validation import cleaned_for_release
from privgraph.input_rules import InputRequest, check_data, check_request
from privgraph.mechanisms import RandomSource, check_epsilon
from privgraph.methods.hyperparameters import SEARCH_SPACE as SEARCH_SPACE  # re-exported: methods import it here
from privgraph.methods.hyperparameters import Hyperparameters
from privgraph.methods.hyperparameters import Settings as Settings
from privgraph.methods.label_ldp import check_labels, denoise_labels, label_spend, release_labels, report_labels
from privgraph.methods.registry import RESERVED, MethodRegistry
from privgraph.methods.request_view import RequestView
from privgraph.nn import NodeClassifier
from privgraph.nn.dense import BlockwiseAdjacency
from privgraph.param_checks import check_bound, check_params
from privgraph.progress import ProgressHook, takes_keyword
from privgraph.release import NODE_SET_WITHHELD, PUBLIC, WITHHELD, PrivateRelease, hides_node_set, input_fields

if TYPE_CHECKING:
    from privgraph.train import TrainResult

# the labels and the split: public in every node-classification setting here (labels become private
# only with label LDP, privgraph.privatize(..., label_epsilon=))
SPLIT_FIELDS: tuple[str, ...] = ("y", "train_mask", "val_mask", "test_mask")


class Task(str, enum.Enum):
    """What a method's release is for."""

    NODE_CLASSIFICATION = "node classification"
    LINK_PREDICTION = "link prediction"
    EMBEDDING = "embedding release"


def param(default: Any, help: str, choices: tuple[Any, ...] | None = None, bound: str | None = None) -> Any:
    """A :class:`MethodParams` field with its help text (shown by ``privgraph methods NAME``) and, where its
    values are a fixed set, its ``choices``, where they lie in a range, its ``bound`` (``">= 0"``, ``"in (0, 1)"``:
    :func:`privgraph.param_checks.check_bound`).  Both are checked by :meth:`MethodParams.validate`, and by the
    command line from the catalogue before torch is imported, in the same words (:mod:`privgraph.param_checks`)."""
    if isinstance(default, (list, dict, set)):
        raise TypeError("method parameters are immutable: use a tuple")
    metadata: dict[str, Any] = {"help": help}
    if choices is not None:
        metadata["choices"] = tuple(choices)
    if bound is not None:
        check_bound("default", default, bound)  # a bad form or a default outside it fails at import
        metadata["bound"] = bound
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class MethodParams:
    """Base of every method's parameters: a frozen dataclass whose :meth:`validate`
    runs when it is built (bad values raise ``ValueError`` with the reason)."""

    # the cross-parameter rules (functions of privgraph.param_checks, registered there: torch-free, so the command
    # line applies them from the catalogue before torch); validate applies them after each field's choices and bound
    rules: ClassVar[tuple[Callable[..., None], ...]] = ()

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check the declared rules (each field's ``choices`` and ``bound``, then :attr:`rules`:
        :func:`~privgraph.param_checks.check_params`); subclasses extend it (call ``super().validate()``)."""
        declared = fields(self)
        check_params(
            {f.name: getattr(self, f.name) for f in declared},
            {f.name: f.metadata["choices"] for f in declared if "choices" in f.metadata},
            {f.name: f.metadata["bound"] for f in declared if "bound" in f.metadata},
            [r.__name__ for r in self.rules],
        )

    # renamed parameters, old name: (new name, one-line hint); a user's old name is refused with the hint
    # (never silently mapped: it may have meant something else), a stored record's is re-keyed (rekey)
    renamed: ClassVar[dict[str, tuple[str, str]]] = {}

    @classmethod
    def build(cls, method: str, values: dict[str, Any]) -> MethodParams:
        """``cls(**values)`` with unknown names refused by a clear error (a renamed one: by its hint)."""
        known = {f.name for f in fields(cls)}
        for old in sorted(set(values) & set(cls.renamed)):
            raise ValueError(f"{method!r}: {cls.renamed[old][1]}")
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(
                f"{method!r} has no parameter {', '.join(map(repr, unknown))}; its parameters: "
                f"{', '.join(sorted(known)) or 'none'}"
            )
        return cls(**values)

    @classmethod
    def rekey(cls, values: dict[str, Any]) -> dict[str, Any]:
        """Parameter values read from a stored record, with renamed parameters under their new names."""
        return {cls.renamed[k][0] if k in cls.renamed else k: v for k, v in values.items()}

    @classmethod
    def resolve(cls, owner: str, params: MethodParams | None, values: dict[str, Any]) -> MethodParams:
        """The parameters of a method or attack built from a ``Params`` object or from values, not both."""
        if params is not None and values:
            raise TypeError("give either a Params object or parameter values, not both")
        if params is not None and not isinstance(params, cls):
            raise TypeError(f"{owner} takes {cls.__name__}, got {type(params).__name__}")
        return params if params is not None else cls.build(owner, values)

    @classmethod
    def describe(cls) -> list[dict[str, Any]]:
        """Name, type, default and help of every parameter."""
        return [
            {"name": f.name, "type": str(f.type), "default": f.default, "help": f.metadata.get("help", "")}
            for f in fields(cls)
        ]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


NO_FEATURES_NOTE = (
    "the input has no node features, so the release has none; a classifier trained on it reads a "
    "one-hot encoding of each node's degree in the released graph instead (post-processing)"
)


def public_features(data: Data) -> torch.Tensor | None:
    """``data.x`` as a method that treats the features as public releases it (float32), or None
    when the graph has no features (a link-level release needs none)."""
    return None if data.x is None else data.x.to(torch.float32)


@dataclass
class Release:
    """What the server holds after a node-classification method's one-time collection:
    features (None when the input has none and the method reads none: the guarantee then
    carries :data:`NO_FEATURES_NOTE`), and the graph to train on when the method privatizes it
    (else the data's own).  Internal to the experiment pipeline (:mod:`privgraph.experiments`) and to
    :meth:`Method.privatize`, which turns
    it into a :class:`~privgraph.release.PrivateRelease`."""

    x: torch.Tensor | None
    guarantee: PrivacyGuarantee
    details: dict[str, Any] = field(default_factory=dict)
    edge_index: torch.Tensor | None = None
    edge_weight: torch.Tensor | None = None
    adjacency: BlockwiseAdjacency | None = None  # a dense weight matrix in row blocks (Blink-Soft)
    extra_guarantees: list[PrivacyGuarantee] = field(default_factory=list)  # other units (HeteroRR: private edges)
    # the local reports as the untrusted server received them (link-LDP methods): what the LDP guarantee
    # covers, observed by privgraph.audit; carried to PrivateRelease.reports, never saved
    reports: Any = field(default=None, repr=False)
    # the weights of a model trained inside the release (GAP-NDP's classifier, node-dpsgd): fit evaluates it
    model_state: dict[str, torch.Tensor] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.x is None and self.model_state is None and NO_FEATURES_NOTE not in self.guarantee.notes:
            self.guarantee = self.guarantee.with_note(NO_FEATURES_NOTE)

    @classmethod
    def from_private(cls, release: PrivateRelease) -> Release:
        """The server's view of a node-classification :class:`~privgraph.release.PrivateRelease`: what
        :meth:`Method.fit` trains on (:func:`privgraph.fit` and the experiment pipeline read a release
        only through it).  A graph the release copies as public is read from the data fit is given."""
        data = release.data
        public_graph = release.fields.get("edge_index", "").startswith("public")
        return cls(
            data.get("x"),
            release.report.guarantees[0],
            release.details,
            edge_index=None if public_graph else data.get("edge_index"),
            edge_weight=data.get("edge_weight"),
            adjacency=data.get("dense_adjacency"),
            reports=release.reports,
            model_state=release.model_state,
        )

    def features(self, data: Data) -> torch.Tensor:
        """What the classifier reads: ``x``, or without features the one-hot degree encoding of
        the graph it propagates over (:data:`NO_FEATURES_NOTE`; Blink-Soft: the rounded row sums); a model
        released instead of features (``model_state``) answers on the data's own features."""
        if self.x is not None:
            return self.x
        if self.model_state is not None:
            return data.x.to(torch.float32)
        graph = self.graph(data)
        if isinstance(graph, BlockwiseAdjacency):
            degrees = torch.cat([rows.sum(dim=1) for _, _, rows in graph.blocks()]).round().long()
            return one_hot_counts(degrees)
        return one_hot_degree(graph, data.num_nodes)

    def graph(self, data: Data) -> torch.Tensor | BlockwiseAdjacency:
        """What the model propagates over: the dense operator, the private graph, or the data's own."""
        if self.adjacency is not None:
            return self.adjacency
        return data.edge_index if self.edge_index is None else self.edge_index


class Method:
    """Base class (module docstring).  Subclasses set the class attributes and implement
    :meth:`release` (node classification) or override :meth:`privatize`."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    unit: ClassVar[str] = Unit.NODE_FEATURES
    # the audit definition where the unit alone does not choose it (privgraph.audit.definitions.KINDS)
    audit_kind: ClassVar[str | None] = None
    task: ClassVar[Task] = Task.NODE_CLASSIFICATION
    Params: ClassVar[type[MethodParams]] = MethodParams
    private: ClassVar[bool] = False  # whether it takes an ε
    # who must be trusted for its guarantee (TrustModel values; empty for a non-private method): the column of
    # `privgraph methods`, checked against the trust models its releases report
    trust_models: ClassVar[tuple[str, ...]] = ()
    epsilon_optional: ClassVar[bool] = False  # private, but also runs without ε (PPCVGAE without noise)
    heterogeneous: ClassVar[bool] = False  # takes a HeteroData
    # the unit is a link (adjacency list, private edge): the graph must be undirected, without
    # self-loops (checked, duplicates merged, at the boundary: privgraph.data.validate_graph)
    simple_graph: ClassVar[bool] = False
    needs_private_edges: ClassVar[bool] = False  # reads data.private_edge_mask
    # its release reads data.x (False: the features are public and copied as given, so a graph without
    # them is released without them; training then reads a degree encoding, Release.features)
    needs_features: ClassVar[bool] = True
    # its local feature mechanism's guarantee holds on a declared public feature domain (data.feature_domain):
    # refused without one, in Python and on the command line (--domain LO,HI; input_rules.declared_domain)
    needs_domain: ClassVar[bool] = False
    private_fields: ClassVar[tuple[str, ...]] = ("x",)
    public_fields: ClassVar[tuple[str, ...]] = ("edge_index", *SPLIT_FIELDS)
    tunable: ClassVar[tuple[str, ...]] = ("lr", "weight_decay", "dropout")
    default_model: ClassVar[str] = "gcn"
    # release parameters chosen on validation by --tune when not given (each value is a new release)
    release_search: ClassVar[dict[str, list[Any]]] = {}
    # the parameter that is the δ of its (ε, δ) guarantee (None: pure ε-DP); dp_delta reads it, the
    # ledger records it before the noise and the audit's --delta sets it
    delta_param: ClassVar[str | None] = None
    # its release reads nothing of its unit (random or degree features, the public edges only): ε = 0 declared
    reads_nothing_private: ClassVar[bool] = False
    # its declared spend reads the data (GAP's auto δ from the node count, a count bound known once the data are
    # read): a ledger's budget is checked against it only then; otherwise also before the data are read
    spend_reads_data: ClassVar[bool] = False
    shares: ClassVar[tuple[str, ...]] = ("labels",)  # the request's shared work its privatize reads (Shared)

    def __init__(self, params: MethodParams | None = None, **values: Any):
        self.params = self.Params.resolve(self.name, params, values)

    def __eq__(self, other: object) -> bool:  # the same method with the same parameters
        return type(other) is type(self) and other.params == self.params  # type: ignore[attr-defined]

    def __hash__(self) -> int:  # equal methods hash alike (the parameters need not be hashable)
        return hash(type(self))

    def with_params(self, **changes: Any) -> Method:
        """The same method with some parameters changed (validated)."""
        return type(self)(self.Params.build(self.name, {**self.params.to_dict(), **changes}))

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        """The server's view after the one-time collection (node-classification methods)."""
        raise NotImplementedError(f"{self.name} does not release node features or a graph for node classification")

    def privatize(self, data: Any, request: RequestView, rng: RandomSource) -> PrivateRelease:
        """Release ``data`` once as ``request`` asks (its ε, label ε, progress and :attr:`shares`), drawing from
        ``rng``: called by :func:`privgraph.api.release` only, which resolved the request's randomness and device."""
        return node_classification_release(self, data, request, rng)

    def planned_spend(self, epsilon: float | None, label_epsilon: float | None = None, data: Any = None) -> list[Spend]:
        """What a release at ``epsilon`` spends per unit, declared before any noise is drawn (a
        :class:`~privgraph.accounting.Ledger` checks it against its budget): ε with :meth:`dp_delta` on
        :attr:`unit`, ε = ∞ when no noise is added (a non-private method, or no ε), and ``label_epsilon`` on
        the node labels.  ``data``: the graph to be released, read only for what the method treats as
        public (its node count).  Methods whose report names other units override it."""
        return [self._spend(self.unit, epsilon, data=data), *label_spend(label_epsilon)]

    def dp_delta(self, data: Any = None) -> float:
        """The δ of the release's (ε, δ) guarantee, declared before any noise: the value of the parameter
        :attr:`delta_param` (0 when the method has none: pure ε-DP).  Methods whose δ has a default that
        depends on other parameters (LPGNN's Gaussian) or on public facts of the graph (GAP's auto δ, from
        its node count; ``data``) override it."""
        if self.delta_param is None:
            return 0.0
        value = getattr(self.params, self.delta_param)
        return 0.0 if value is None else float(value)

    def _spend(self, unit: str, epsilon: float | None, delta: float | None = None, data: Any = None) -> Spend:
        """(ε, δ) on ``unit``: ∞ without noise (0 when the release reads nothing of it); δ defaults to
        :meth:`dp_delta`."""
        if self.reads_nothing_private:
            return Spend(unit, 0.0)
        if epsilon is None or not self.private:
            return Spend(unit, math.inf)
        eps, delta = float(epsilon), float(self.dp_delta(data) if delta is None else delta)
        return Spend(unit, eps, delta, self.spend_event(unit, eps, delta, data))

    def spend_event(self, unit: str, epsilon: float, delta: float, data: Any = None) -> dict[str, Any] | None:
        """The mechanism event of the release's spend on ``unit`` at (ε, δ), declared before the noise for the
        ledger's tighter composition (:func:`~privgraph.accounting.gaussian_event`: a Gaussian whose noise
        multiplier follows from public parameters only); None (the default): composed by its (ε, δ) alone."""
        return None

    def kprop_steps(self, hp: Hyperparameters) -> int:
        return 0

    def build_model(
        self, model: str, in_dim: int, num_classes: int, hp: Hyperparameters, release: Release | None = None
    ) -> NodeClassifier:
        """The classifier for ``release``'s graph: weighted layers when it carries
        edge weights, dense ones when it is a :class:`BlockwiseAdjacency`."""
        dense = release is not None and release.adjacency is not None
        weighted = release is not None and release.edge_weight is not None
        return NodeClassifier(
            model,
            in_dim,
            hp.hidden,
            num_classes,
            hp.dropout,
            kprop_steps=self.kprop_steps(hp),
            weighted=weighted,
            dense=dense,
        )

    def fit(
        self,
        release: Release,
        data: Data,
        model: str,
        hp: Hyperparameters,
        seed: int,
        labels: Any = None,
        progress: ProgressHook | None = None,
    ) -> TrainResult:
        """Train this method's classifier on ``release`` (post-processing) with selection on
        validation; ``data`` gives the labels and the split.  With label reports (``labels``,
        :class:`~privgraph.methods.LabelReports`) the server trains on their denoised version
        (K_y = ``hp.label_steps``, or forward correction when 0); the test accuracy is always
        measured on the true test labels.  ``progress``: called after every epoch, with the loss
        (:func:`~privgraph.train.train_node_classifier`).  The node-classification task of
        :mod:`privgraph.experiments` and :func:`privgraph.fit` both call it (through :func:`fit_method`)."""
        from privgraph.train import train_node_classifier

        torch.manual_seed(seed)
        num_classes = int(data.y.max()) + 1 if labels is None else labels.mechanism.k  # label LDP: the declared k
        x = release.features(data)
        net = self.build_model(model, x.shape[1], num_classes, hp, release)
        y_obs, transition = (data.y, None) if labels is None else denoise_labels(data, labels, hp.label_steps)
        result = train_node_classifier(
            net,
            x,
            release.graph(data),
            y_obs,
            data.y,
            data.train_mask,
            data.val_mask,
            data.test_mask,
            lr=hp.lr,
            weight_decay=hp.weight_decay,
            epochs=hp.epochs,
            patience=hp.patience,
            loss_transition=transition,
            edge_weight=release.edge_weight,
            selection=hp.selection,
            progress=progress,
            task=f"training {model} on the {self.name} release",
        )
        result.model = net
        return result

    def answers(self, release: Release, epsilon: float | None) -> str | None:
        """In words, how a model trained on ``release`` answers inference queries, where the graph the
        release holds does not say it (:func:`privgraph.attacks.target.answering_graph`); None: it does."""
        return None

    def check_epsilon_given(self, epsilon: float | None, name: str | None = None) -> float:
        """ε of a private method: given, finite, in (0, MAX_EPSILON]."""
        if epsilon is None:
            raise ValueError(f"method {name or self.name!r} needs an epsilon")
        return check_epsilon(epsilon, f"epsilon of {name or self.name}")

    @classmethod
    def check_input(cls, request: InputRequest | None = None, data: Any = None) -> None:
        """The method's input rules (:mod:`privgraph.input_rules`, the one place they are written): those the
        ``request`` alone decides (the options, the input file's kind: checked before any data is read) and,
        with ``data``, those that need the graph.  ``ValueError`` (``TypeError``: the wrong kind of graph)
        with one line.  The command line applies the same rules to the catalogue's copy of the flags."""
        if request is not None:
            check_request(cls.name, cls, request)
        if data is not None:
            check_data(cls.name, cls, data, request)

    @classmethod
    def info(cls) -> dict[str, Any]:
        """The registry entry: name, description, unit, task, privacy, parameters and defaults."""
        return {
            "name": cls.name,
            "description": cls.description,
            "unit": cls.unit,
            # a non-private baseline that reads the data: no unit is protected (its report states ε = ∞ on ``unit``)
            "no_guarantee": not cls.private and not cls.reads_nothing_private,
            "task": cls.task.value,
            "private": cls.private,
            "trust": list(cls.trust_models) if cls.private else [],
            "epsilon_optional": cls.epsilon_optional,
            "graph": "HeteroData" if cls.heterogeneous else "Data",
            "private_fields": list(cls.private_fields),
            "public_fields": list(cls.public_fields),
            "parameters": cls.Params.describe(),
        }


class HeteroMethod(Method):
    """Base of the methods on a ``HeteroData``: what the heterogeneous evaluation tasks
    (:mod:`privgraph.experiments.tasks`: ``hetero-nc``, ``lp``) ask a method, with the defaults of a
    method that releases features and trains nothing of its own.  A task calls these hooks instead
    of comparing method names."""

    heterogeneous: ClassVar[bool] = True
    shares: ClassVar[tuple[str, ...]] = ()
    # the lp task releases a link model with this method's privatize (HeteDP); otherwise it trains
    # train_link_baseline end to end on the input
    releases_link_model: ClassVar[bool] = False

    def hetero_nc_model(self) -> str:
        """What the hetero-nc task trains on this method's release: ``han`` (a HAN over the dataset's
        metapaths on the released target features), ``link-vgae`` (a logistic regression on a link
        release's embeddings) or a baseline trained end to end (``rgcn``, ``hgt``, ``metapath2vec``)."""
        return "han"

    def hetero_nc_release(self, target: str) -> Method:
        """The method whose ``privatize`` releases what the hetero-nc task's model reads for node type
        ``target`` (default: this one)."""
        return self

    def nc_input_replacement(self, data: Any, dataset: str, target: str, split: str, seed: int) -> Any:
        """``link-vgae``'s ``replace_inputs`` (None: the release's own features)."""
        return None

    def check_hetero_task(self, task: str, split: str) -> None:
        """Refuse, before any work, options the evaluation task ``task`` would ignore (default: none)."""

    def train_link_baseline(
        self, data: Any, task: Any, splits: Any, seed: int, hidden: int, epochs: int
    ) -> tuple[float, float, dict[str, Any]]:
        """The lp task's (validation, test) ROC-AUC of a method that releases no link model, and its
        embeddings of the relation's two endpoint types (their inner product scores a pair)."""
        raise NotImplementedError(f"{self.name} trains no link-prediction model of its own")


METHODS: MethodRegistry[type[Method]] = MethodRegistry()  # the registry: the CLI, the API and the tests all read it


def register_method(cls: type[Method]) -> type[Method]:
    """Class decorator: add ``cls`` to :data:`METHODS` under ``cls.name`` (PyG-style registry)."""
    if not cls.name:
        raise TypeError(f"{cls.__name__} has no name")
    reserved = [f.name for f in fields(cls.Params) if f.name in RESERVED or f.name == "delta" != cls.delta_param]
    if reserved:
        raise TypeError(f"{cls.name}: parameter {reserved[0]!r} is a release request's own keyword: rename it")
    module = METHODS.announced(cls.name)
    if module is not None and cls.__module__ != module and not cls.__module__.startswith(module + "."):
        METHODS.get(cls.name)  # the announced class first: a clash is refused whichever is imported first
    taken = METHODS.loaded(cls.name)
    if taken is not None and taken is not cls:
        raise TypeError(f"method name {cls.name!r} is taken by {taken.__name__}")
    METHODS[cls.name] = cls
    return cls


def gaussian_multiplier_event(
    epsilon: float, delta: float, calibration: str = "analytic", count: int = 1
) -> dict[str, Any]:
    """The event of ``count`` Gaussian releases calibrated to (ε, δ) together: noise multiplier z = σ/Δ of the
    analytic (Balle & Wang) or classical calibration, which depends on ε and δ only (σ is linear in Δ), made
    1e-9 smaller (relative) so that root-finding's tolerance never makes the event less private than the
    release."""
    from privgraph.mechanisms.gaussian import analytic_gaussian_sigma, classical_gaussian_sigma

    sigma = classical_gaussian_sigma if calibration == "classical" else analytic_gaussian_sigma
    return gaussian_event(sigma(epsilon, delta, math.sqrt(count)) * (1 - 1e-9), count)


def _privatized(guarantees: list[PrivacyGuarantee], units: tuple[str, ...]) -> str | None:
    """A field's status from the first guarantee of one of ``units`` (None: none covers it)."""
    for g in guarantees:
        if g.unit in units:
            return ("privatized: " if g.is_private else "derived without protection: ") + g.describe()
    return None


def fit_method(
    method: Method,
    release: Release,
    data: Data,
    model: str,
    hp: Hyperparameters,
    seed: int,
    labels: Any = None,
    progress: ProgressHook | None = None,
) -> TrainResult:
    """``method.fit(...)`` with ``progress`` where the method's ``fit`` takes it (a method whose own ``fit``
    does not yet trains silently)."""
    if progress is not None and takes_keyword(method.fit, "progress"):
        return method.fit(release, data, model, hp, seed, labels, progress=progress)
    return method.fit(release, data, model, hp, seed, labels)


def node_classification_release(method: Method, data: Data, request: RequestView, rng: RandomSource) -> PrivateRelease:
    """:meth:`Method.privatize` of the node-classification methods: the graph validated at the
    boundary, :meth:`Method.release` run once, and a new ``Data`` built from what it released and
    the method's public fields.  With ``request.label_epsilon`` the training and validation nodes report
    their labels by k-ary randomized response (LPGNN's label LDP): the release holds
    ``y_reported`` (−1 where nothing was collected), ``label_epsilon`` and ``num_classes``, never ``y``.
    ``request.shared.labels``: reports already collected from ``data`` (instead of ``label_epsilon``), refused when
    the method's unit holds the labels (``y`` among its private fields: node-level DP).  A private ``x`` that the
    release does not carry (a model release) is withheld."""
    epsilon, label_epsilon, labels = request.epsilon, request.label_epsilon, request.shared.labels
    if (label_epsilon is not None or labels is not None) and "y" in method.private_fields:
        raise ValueError(f"{method.name} protects the labels inside its unit: label LDP does not apply")
    if not isinstance(data, Data):
        raise TypeError(f"{method.name} takes a torch_geometric.data.Data, got {type(data).__name__}")
    method.check_input(data=data)
    data, cleaned, graph_notes = cleaned_for_release(data, simple=method.simple_graph)  # graph_notes: counts
    if label_epsilon is not None:  # the declared label set, and every label in it, before any noise
        check_labels(data)
    release = method.release(data, epsilon, rng, request.progress)
    guarantees = [release.guarantee, *release.extra_guarantees]
    if labels is not None:
        if label_epsilon is not None:
            raise ValueError("give label_epsilon (collect the labels) or labels (collected), not both")
        guarantees.append(labels.guarantee())
    elif label_epsilon is not None:
        labels = report_labels(data, label_epsilon, rng)
        guarantees.append(labels.guarantee())
    guarantees[0] = guarantees[0].with_note(cleaned)  # the same words on every input; the counts: in the details
    hidden = hides_node_set(method.unit)  # node-level DP: no node count, no per-node field in the release
    out = Data() if hidden else Data(num_nodes=data.num_nodes)
    fields = {name: WITHHELD for name in input_fields(data)}
    feature_status = _privatized(guarantees, (Unit.NODE_FEATURES,))
    out.x = release.x  # None (no x in the release) when the input has no features and the method reads none
    if "x" in method.private_fields:
        fields["x"] = (feature_status or "privatized") if release.x is not None else WITHHELD
    elif "x" in data:
        fields["x"] = PUBLIC if method.private else "written in clear: " + (feature_status or "non-private method")
    link = _privatized(guarantees, (Unit.ADJACENCY_LIST, Unit.PRIVATE_EDGE))
    if release.adjacency is not None:
        out.dense_adjacency = release.adjacency
        fields["edge_index"] = (link or "privatized") + " (released as dense_adjacency: Blink-Soft's posterior P)"
    elif release.edge_index is not None:
        out.edge_index = release.edge_index
        if release.edge_weight is not None:
            out.edge_weight = release.edge_weight
        fields["edge_index"] = (link or "privatized") + (
            "; the public edges are written as given" if any(g.unit == Unit.PRIVATE_EDGE for g in guarantees) else ""
        )
    if labels is not None:
        fields["y"] = release_labels(out, labels)
    for name in method.public_fields:
        if name in data and name not in out and not (name == "y" and labels is not None):
            fields[name] = NODE_SET_WITHHELD if hidden else PUBLIC
            if not hidden:
                out[name] = data[name]
    return PrivateRelease(
        method.name,
        method.params.to_dict(),
        epsilon,
        out,
        PrivacyReport(guarantees),
        fields,
        {**release.details, **({"input_graph": graph_notes} if graph_notes else {})},
        reports=release.reports,
        model_state=release.model_state,
    )

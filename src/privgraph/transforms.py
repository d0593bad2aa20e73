"""Privatization as PyTorch Geometric transforms: ``T.Compose([T.NormalizeFeatures(), Privatize("lpgnn", epsilon=1)])``.

Each transform is a ``torch_geometric.transforms.BaseTransform``, so it composes with PyG's own
transforms and serves as a dataset's ``pre_transform`` or ``transform``:

* :class:`Privatize` — a registered node-classification method, released by
  :func:`privgraph.api.release` (the package's one release path, as :func:`privgraph.privatize`);
  it returns the release's ``Data`` (only what the method releases and declares public);
* the bare local randomizers, which replace one field and keep the others as given:
  :class:`MultiBit` (LPGNN's features, Algorithm 1; :class:`PerturbFeatures` for any feature
  mechanism), :class:`LinkLDP` (Blink's randomized response with a Laplace degree, Algorithm 1) and
  :class:`LabelRR` (k-ary randomized response on the training and validation labels).

**The guarantee travels with the graph**: every output carries ``data.privacy_report``, the
:class:`~privgraph.accounting.PrivacyReport` of everything privgraph's transforms spent on it (a
plain object: it survives ``T.Compose``, ``InMemoryDataset`` collation, ``Dataset.__getitem__`` and
``torch.save``; importing this module allow-lists the report's two classes for
``torch.load(weights_only=True)``, so a processed dataset reloads without unpickling code).

**The same input gives the same release; other input with the same protected content is refused.**
PyG reads ``dataset[0]`` as often as it likes (``dataset.num_features`` reads it too), and expects the same
data each time.  A transform that sees an input equal to one it has released (equal values in every field,
whatever object holds them: a dataset's ``__getitem__`` copy, another dtype of the same values) returns
that release again, as post-processing of it: no new noise, no new charge on a ledger.  The releases are
cached in this process by the transform's settings (its ``repr``) and a keyed hash of the whole input, so
a fresh transform of the same settings returns them too.  Two releases of the same protected content with
independent noise reveal more than one (their ε add up; averaging them removes noise), so a transform
raises :class:`RepeatedReleaseError` when

* its input already carries a ``privacy_report`` (a privgraph transform ran on it), or
* it has already released the same protected content (``x`` for the feature randomizers, ``edge_index``
  for :class:`LinkLDP`, ``y`` for :class:`LabelRR`, the method's private fields for :class:`Privatize`)
  in an input that differs elsewhere (an extra attribute, other edges under LPGNN); a changed value (one
  feature scaled by 0.999999) is different data.  The transform keeps a keyed hash of that content in
  memory (:func:`~privgraph.accounting.ledger.content_digest`),

unless built with ``compose=True``: the output's report then holds the earlier guarantees and the
new one, and :meth:`PrivacyReport.by_unit <privgraph.accounting.PrivacyReport.by_unit>` composes
those of the same unit by basic composition (ε and δ add up).  Chaining mechanisms on *different*
fields (``MultiBit`` then ``LabelRR``) also needs ``compose=True`` on the later ones: their
guarantees are then reported side by side (and per node, :attr:`~privgraph.accounting.PrivacyReport.per_node`).

**A ledger limits every release.**  ``ledger=`` (a :class:`~privgraph.Ledger` of the dataset) checks each
release against the ledger's budget and dataset fingerprint before any noise and records it, as
:func:`privgraph.privatize` does: with it, releases of different copies or versions of the graph are
counted too, and a release over the budget raises :class:`~privgraph.accounting.BudgetExceeded` even with
``compose=True``.

**``pre_transform``, not ``transform``.**  A dataset applies ``pre_transform`` once, when it
processes the raw files, and caches the result on disk: ``pre_transform=Privatize(...)`` is a
one-time release, read as often as you like (post-processing).  ``transform`` runs at *every*
``dataset[i]``: the same item gives the same release (above), but the cache is per process:
``DataLoader(num_workers>0)`` copies the transform into each worker, which does not see the others'
releases and draws its own (each a new release, costing ε again).  Use ``pre_transform`` for a dataset
read by several processes.

Randomness (``seed``, ``rng``) as in :func:`privgraph.privatize`: the OS cryptographic source by
default.  A seeded transform draws its first release from the seed itself (the same noise as
``privgraph.privatize(..., seed=seed)``) and its k-th from the seed's stream k
(:func:`~privgraph.mechanisms.release_source`), so it never repeats its noise; a ``torch.Generator``
advances from call to call.  (A seed or generator copied into several DataLoader workers repeats
its draws in each: keep the default source there.)
"""

from __future__ import annotations

import copy
import hashlib
import os
from typing import Any

import torch
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform

from privgraph.accounting import PrivacyGuarantee, PrivacyReport, Unit
from privgraph.accounting.ledger import Ledger, Spend, content_digest
from privgraph.accounting.validation import check_domain
from privgraph.api import release
from privgraph.device import DeviceLike
from privgraph.input_rules import declared_domain
from privgraph.mechanisms import FEATURE_MECHANISMS, RandomSource, check_epsilon, get_feature_mechanism
from privgraph.methods import Task
from privgraph.methods.base import gaussian_multiplier_event
from privgraph.methods.blink.baselines import RandomizedResponseGraph, reported_pairs
from privgraph.methods.blink.client import check_degree_share, link_ldp
from privgraph.methods.blink.method import DEFAULT_DEGREE_SHARE
from privgraph.methods.label_ldp import release_labels, report_labels
from privgraph.request import MethodLike, Randomness, ReleaseRequest

REPORT = "privacy_report"  # the attribute of the returned Data that holds its PrivacyReport

# the report holds strings and floats only: torch.load(weights_only=True) may rebuild it (a processed
# dataset whose pre_transform attached it reloads without PyG's fallback to unpickling code)
torch.serialization.add_safe_globals([PrivacyReport, PrivacyGuarantee])


# The releases made in this process, by (the transform's repr, a keyed hash of the whole input): the same input
# through an equal transform (a dataset item read again, a fresh instance of the same settings) gets the same
# release back, as post-processing of it; the key is drawn per process, so the hashes tell nothing elsewhere.
_CACHE_KEY = os.urandom(16)
_RELEASED_OUTPUTS: dict[tuple[str, bytes], Data] = {}


def _keyed_fingerprint(data: Any, fields: list[str] | None, key: bytes, num_nodes: int) -> bytes:
    """A keyed BLAKE2b of ``data``'s content in ``fields`` (every tensor for None:
    :func:`~privgraph.accounting.ledger.content_digest`) and its node count: the transforms' two memories."""
    digest = content_digest(data, fields, key=key)
    return hashlib.blake2b(repr((digest, num_nodes)).encode(), key=key).digest()


class RepeatedReleaseError(ValueError):
    """A transform was asked to release a graph that already carries a privgraph guarantee, or one it
    has released before (module docstring): pass ``compose=True`` to release again and compose."""


def privacy_report(data: Any) -> PrivacyReport | None:
    """The :class:`~privgraph.accounting.PrivacyReport` a privgraph transform attached to ``data``
    (``data.privacy_report``), or None."""
    report = getattr(data, REPORT, None) if REPORT in data else None
    return report if isinstance(report, PrivacyReport) else None


class PrivacyTransform(BaseTransform):
    """What the privgraph transforms share: the random source of each call, the refusal of a second
    release and the composition of the guarantees (module docstring).  Subclasses implement
    :meth:`release`; each takes these three keyword arguments.

    Args:
        seed: draw the noise from this seed (the first release from the seed, the k-th from its stream k),
            for research only: the seed removes the noise, and the report says so.
        rng: a ``torch.Generator`` or :class:`~privgraph.SecureRandom`; without ``seed`` and ``rng``, the
            OS cryptographic source.
        compose: release a graph that carries a guarantee or was released before, and report the
            composition (else :class:`RepeatedReleaseError`).
        ledger: the dataset's :class:`~privgraph.Ledger`: every release is checked against its budget and
            fingerprint before any noise and recorded (module docstring).
    """

    # the input fields whose content makes "the same data" (module docstring); Privatize: the method's
    protects: tuple[str, ...] = ()

    def __init__(
        self,
        *,
        seed: int | None = None,
        rng: RandomSource | None = None,
        compose: bool = False,
        ledger: Ledger | None = None,
    ):
        Randomness(seed, rng)  # a seed and an rng together, or an rng of the wrong type, fail here
        if ledger is not None and not isinstance(ledger, Ledger):
            raise TypeError(f"ledger must be a privgraph.Ledger, got {type(ledger).__name__}")
        self.seed, self.rng, self.compose, self.ledger = seed, rng, bool(compose), ledger
        self.releases = 0  # how many releases this transform has made (the seed's stream of the next one)
        self._key = os.urandom(16)  # fingerprints are keyed: equal inputs match, nothing else is learnt
        self._released: dict[bytes, list[PrivacyGuarantee]] = {}  # input fingerprint -> guarantees spent on it

    def release(self, data: Data, seed: int | None, rng: RandomSource | None, stream: tuple[int, ...]) -> Data:
        """Release ``data`` once from the given source (the seed, generator and stream of
        :func:`~privgraph.mechanisms.release_source`); the output must carry
        its own report as ``privacy_report`` (the earlier guarantees are added by :meth:`forward`)."""
        raise NotImplementedError

    def forward(self, data: Data) -> Data:
        """One release of ``data`` with the guarantees composed (module docstring).  The same input again (equal
        values in every field, e.g. ``dataset[0]`` read twice through ``transform=``) returns the same release:
        no new noise, no new charge; other input with the same protected content is refused unless
        ``compose``."""
        attached = privacy_report(data)
        fingerprint = self.fingerprint(data)
        whole = (repr(self), self._whole_fingerprint(data))
        if not self.compose and attached is None and whole in _RELEASED_OUTPUTS:
            out = _RELEASED_OUTPUTS[whole].clone()  # post-processing of the earlier release: nothing is spent
            self._released.setdefault(fingerprint, list(getattr(out, REPORT).guarantees))
            return out
        earlier = [*(attached.guarantees if attached else ()), *self._released.get(fingerprint, ())]
        if earlier and not self.compose:
            why = (
                "it already carries a privgraph guarantee (data.privacy_report)"
                if attached
                else f"this {type(self).__name__} has already released the same protected content with other "
                "values elsewhere"
            )
            raise RepeatedReleaseError(
                f"refusing to release this graph again: {why}. A second release with independent noise "
                "spends the budget again (the guarantees compose: ε adds up); pass compose=True to release "
                "and report the composition. For a dataset, release once with pre_transform= instead of transform="
            )
        stream = (self.releases,) if self.seed is not None and self.releases else ()
        self.releases += 1
        out = self.release(data, self.seed, self.rng, stream)
        new = getattr(out, REPORT).guarantees
        self._released[fingerprint] = [*self._released.get(fingerprint, ()), *new]
        out[REPORT] = PrivacyReport([*earlier, *new])
        if not self.compose and attached is None:
            _RELEASED_OUTPUTS[whole] = out.clone()
        return out

    @staticmethod
    def _whole_fingerprint(data: Data) -> bytes:
        """A keyed hash of every tensor of ``data`` and its node count: the key of the release cache."""
        return _keyed_fingerprint(data, None, _CACHE_KEY, int(data.num_nodes or 0))

    def fingerprint(self, data: Data) -> bytes:
        """A keyed hash of the content ``data`` holds in :attr:`protects` and its node count (values, not
        dtypes or the object: :func:`~privgraph.accounting.ledger.content_digest`)."""
        # a HeteroData holds its fields in its node and edge stores, not at the top level: hash them there
        fields = list(self.protects) if hasattr(data, "node_types") else [n for n in self.protects if n in data]
        return _keyed_fingerprint(data, fields, self._key, int(data.num_nodes))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self._settings().items())})"

    def _settings(self) -> dict[str, Any]:
        """The constructor's arguments shown by ``repr`` (PyG compares a ``pre_transform``'s repr)."""
        ledger = {} if self.ledger is None else {"ledger": str(self.ledger.path)}
        return {"seed": self.seed, "compose": self.compose, **ledger}


class Privatize(PrivacyTransform):
    """A registered node-classification method as a transform: one release by
    :func:`privgraph.api.release` of the :class:`~privgraph.ReleaseRequest` it builds, the same request and the
    same noise as ``privgraph.privatize(data, method, epsilon=..., seed=..., ...)``.

    Returns the release's ``Data`` (``PrivateRelease.data``: what the method released and the fields
    it declares public, nothing else of the input) with ``privacy_report``.  The release's other parts
    (the status of every field, the diagnostics) stay with :func:`privgraph.privatize`.

    ``seed``, ``rng`` and ``compose``: as :class:`PrivacyTransform`.

    Args:
        method: a node-classification method of :func:`privgraph.list_methods` (a name with ``**params``, its
            ``Params`` object or a built method).
        epsilon: the privacy budget ε (required by private methods, refused by the baselines).
        delta: the δ of the method's claim (its ``delta_param``; default: the method's own).
        label_epsilon: also release the training and validation labels by k-ary randomized response.
        domain: the features' public range ``(lo, hi)``, declared for every graph the transform sees (as
            ``--domain`` on the command line; otherwise each graph's ``feature_domain``), for a method whose
            local mechanism needs one (LPGNN); e.g. ``(0, 1)`` after ``T.NormalizeFeatures()``.
        device: where the method trains and post-processes (:mod:`privgraph.device`).
        **params: the method's parameters.
    """

    def __init__(
        self,
        method: MethodLike,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        label_epsilon: float | None = None,
        domain: tuple[float, float] | None = None,
        seed: int | None = None,
        rng: RandomSource | None = None,
        device: DeviceLike = None,
        compose: bool = False,
        ledger: Ledger | None = None,
        **params: Any,
    ):
        super().__init__(seed=seed, rng=rng, compose=compose, ledger=ledger)
        # the request of the first release (an unknown name, a bad parameter or ε fails here); later ones: its stream
        self.request = ReleaseRequest.build(
            method, epsilon=epsilon, delta=delta, label_epsilon=label_epsilon, seed=seed, rng=rng, device=device,
            ledger=ledger, **params,
        )  # fmt: skip
        self.method = self.request.method
        # what repr shows (PyG compares a pre_transform's): ε as given, the parameters given by name, else all of them
        self.epsilon, self.label_epsilon = epsilon, label_epsilon
        self.params = {**params, **({} if delta is None else {"delta": delta})} if isinstance(method, str) else None
        self.protects = tuple(self.method.private_fields)
        self.domain = None if domain is None else check_domain(domain)
        if self.domain is not None and not self.method.needs_domain:
            raise ValueError(f"{self.method.name} perturbs no features within a domain: it takes no domain=")
        if self.method.task != Task.NODE_CLASSIFICATION:
            raise ValueError(
                f"{self.method.name} releases for {self.method.task.value}: Privatize takes node-classification "
                "methods (use privgraph.privatize for the others)"
            )

    def release(self, data: Data, seed: int | None, rng: RandomSource | None, stream: tuple[int, ...]) -> Data:
        if self.domain is not None:  # declared here for every graph: the input itself is not changed
            data = copy.copy(data)
            data.feature_domain = self.domain
        rel = release(data, self.request.but(seed=seed, rng=rng, stream=stream))
        out = rel.data
        out[REPORT] = rel.report
        if rel.node_ids is not None:  # the input's own ids (read_graph), released as given: kept on the output
            out.node_ids = rel.node_ids
        return out

    def _settings(self) -> dict[str, Any]:
        return {
            "method": self.method.name,
            "epsilon": self.epsilon,
            "label_epsilon": self.label_epsilon,
            **({} if self.domain is None else {"domain": self.domain}),
            **(self.method.params.to_dict() if self.params is None else self.params),
            **super()._settings(),
        }


class LocalRandomizer(PrivacyTransform):
    """A bare local randomizer on one field: :meth:`randomize` draws from the source its
    :class:`~privgraph.request.Randomness` resolves, and its guarantee is told where the randomness came from, as
    :func:`~privgraph.api.release` tells a method's."""

    def randomize(self, data: Data, source: RandomSource) -> PrivacyGuarantee:
        """Replace the protected field of ``data`` (a shallow copy) by its randomized version; return the guarantee."""
        raise NotImplementedError

    def planned_spend(self, data: Data) -> list[Spend]:
        """What one release spends, declared before the noise (what a ledger checks)."""
        raise NotImplementedError

    def release(self, data: Data, seed: int | None, rng: RandomSource | None, stream: tuple[int, ...]) -> Data:
        if self.ledger is None:
            return self._release(data, seed, rng, stream)
        with self.ledger.recording(self.planned_spend(data), type(self).__name__, self._settings(), data) as receipt:
            out = self._release(data, seed, rng, stream)
            receipt.done(out[REPORT])
        return out

    def _release(self, data: Data, seed: int | None, rng: RandomSource | None, stream: tuple[int, ...]) -> Data:
        source, _, note = Randomness(seed, rng, stream).resolve()
        guarantee = self.randomize(data, source)
        data[REPORT] = PrivacyReport([guarantee.with_note(note) if guarantee.is_private else guarantee])
        return data


class PerturbFeatures(LocalRandomizer):
    """A local feature randomizer (:data:`privgraph.mechanisms.FEATURE_MECHANISMS`) on every node's
    ``x``: ε-LDP per node feature vector, local model.  The other fields are kept as given.

    ``seed``, ``rng`` and ``compose``: as :class:`PrivacyTransform`.

    Args:
        mechanism: ``multibit``, ``onebit``, ``laplace``, ``gaussian``, ``duchi``, ...
        epsilon: ε per node feature vector.
        rectify: return the server's unbiased estimate (as LPGNN releases), else the raw reports.
        domain: the declared feature domain [α, β] (public); default ``data.feature_domain``; refused
            without either (:func:`privgraph.input_rules.declared_domain`, as ``pg.privatize`` and ``--domain``).
        clip: clip values outside the domain instead of refusing them.
        **options: the mechanism's own (``m`` of multi-bit, ``delta`` of the Gaussian mechanism).
    """

    def __init__(
        self,
        mechanism: str,
        epsilon: float,
        *,
        rectify: bool = True,
        domain: tuple[float, float] | None = None,
        clip: bool = False,
        seed: int | None = None,
        rng: RandomSource | None = None,
        compose: bool = False,
        ledger: Ledger | None = None,
        **options: Any,
    ):
        super().__init__(seed=seed, rng=rng, compose=compose, ledger=ledger)
        if mechanism not in FEATURE_MECHANISMS:
            raise ValueError(f"unknown mechanism {mechanism!r}; choose from {', '.join(FEATURE_MECHANISMS)}")
        self.mechanism, self.epsilon, self.rectify = mechanism, epsilon, bool(rectify)
        self.domain, self.clip, self.options = domain, bool(clip), options
        self.build((0.0, 1.0) if domain is None else domain)  # ε and the options are checked here

    def build(self, domain: tuple[float, float]):
        """The mechanism for a declared ``domain``."""
        return get_feature_mechanism(self.mechanism, self.epsilon, domain=domain, clip=self.clip, **self.options)

    protects = ("x",)

    def planned_spend(self, data: Data) -> list[Spend]:
        """ε (with the Gaussian mechanism's δ and event) per node feature vector."""
        g = self.build((0.0, 1.0)).guarantee()
        event = gaussian_multiplier_event(g.epsilon, g.delta) if self.mechanism == "gaussian" else None
        return [Spend(Unit.NODE_FEATURES, g.epsilon, g.delta, event)]

    def randomize(self, data: Data, source: RandomSource) -> PrivacyGuarantee:
        if getattr(data, "x", None) is None:
            raise ValueError(f"{type(self).__name__} needs data.x")
        domain = declared_domain(
            type(self).__name__, data, self.domain, argument=f"{type(self).__name__}(..., domain=(lo, hi))"
        )
        mech = self.build(domain)
        x = data.x.cpu()  # the noise is drawn on the CPU
        released = mech.privatize(x, source) if self.rectify else mech.perturb(x, source).to(torch.float32)
        data.x = released.to(data.x.device)
        return mech.guarantee()

    def _settings(self) -> dict[str, Any]:
        return {
            "mechanism": self.mechanism,
            "epsilon": self.epsilon,
            "rectify": self.rectify,
            "domain": self.domain,
            "clip": self.clip,
            **self.options,
            **super()._settings(),
        }


class MultiBit(PerturbFeatures):
    """LPGNN's multi-bit feature mechanism (Algorithm 1 of Sajadmanesh's talk
    "Privacy-Preserving Deep Learning over Graphs", 2020) as a transform: each node reports ``m``
    of its ``d`` features as ±1 (the others 0), each with ε/m (``m=None``: the optimal m* of
    Proposition 3.5).  ``rectify=True`` (default) gives the server's unbiased estimate, which takes the
    three values ``offset + scale·{−1, 0, 1}`` of :meth:`privgraph.mechanisms.MultiBit.rectifier`;
    ``rectify=False`` the reports in {−1, 0, 1}.  ε-LDP per node feature vector, local model."""

    def __init__(self, epsilon: float, *, m: int | None = None, **kwargs: Any):
        super().__init__("multibit", epsilon, m=m, **kwargs)


class LinkLDP(LocalRandomizer):
    """Blink's client (Blink paper, Algorithm 1) as a transform: every node reports its adjacency list
    by randomized response with ε_a = (1 − s)ε and its degree with Laplace noise, ε_d = sε; ε-link-LDP
    per adjacency list (basic composition), local model.

    Returns the graph as the untrusted server receives it: ``edge_index`` holds a column (i, j) for
    every reported bit Ã_ij = 1 (row i of ``to_dense_adj(edge_index)`` is node i's noisy list: directed,
    i's and j's reports on a pair are independent), ``noisy_degree`` the Laplace degrees (float64; only
    when degree_share > 0).  The input's edge fields (``edge_attr``, ``edge_weight``, ``private_edge_mask``, ...)
    describe the true edges and are dropped; the node fields are kept as given.  About p_flip·n² bits
    are reported (all pairs are scanned): graphs above ``max_nodes`` are refused.

    ``seed``, ``rng`` and ``compose``: as :class:`PrivacyTransform`.

    Args:
        epsilon: ε per adjacency list.
        degree_share: Blink's share s of ε spent on the degree, ∈ [0, 1] (default 0.1, as Blink).
    """

    max_nodes = RandomizedResponseGraph.max_nodes

    def __init__(
        self,
        epsilon: float,
        *,
        degree_share: float = DEFAULT_DEGREE_SHARE,
        seed: int | None = None,
        rng: RandomSource | None = None,
        compose: bool = False,
        ledger: Ledger | None = None,
    ):
        super().__init__(seed=seed, rng=rng, compose=compose, ledger=ledger)
        self.epsilon, self.degree_share = check_epsilon(epsilon), check_degree_share(degree_share)

    protects = ("edge_index",)

    def planned_spend(self, data: Data) -> list[Spend]:
        """ε per adjacency list (pure)."""
        return [Spend(Unit.ADJACENCY_LIST, self.epsilon)]

    def randomize(self, data: Data, source: RandomSource) -> PrivacyGuarantee:
        if getattr(data, "edge_index", None) is None:
            raise ValueError("LinkLDP needs data.edge_index")
        if data.num_nodes > self.max_nodes:
            raise ValueError(
                f"LinkLDP materialises Θ(n²) report bits; refusing n = {data.num_nodes} > {self.max_nodes}"
            )
        reports = link_ldp(data.edge_index, data.num_nodes, self.epsilon, self.degree_share, source)
        i, j = reported_pairs(reports, upper_only=False)
        n = data.num_nodes
        for key in [k for k in data.keys() if data.is_edge_attr(k)]:
            del data[key]
        data.num_nodes = n
        data.edge_index = torch.stack([torch.from_numpy(i), torch.from_numpy(j)]).long()
        if self.degree_share > 0:
            data.noisy_degree = reports.noisy_degrees
        return reports.guarantee()

    def _settings(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "degree_share": self.degree_share, **super()._settings()}


class LabelRR(LocalRandomizer):
    """LPGNN's label LDP (k-ary randomized response, :func:`privgraph.methods.label_ldp.report_labels`) as a
    transform: every training and validation node reports its label, keeping it with probability
    e^ε/(e^ε + k − 1); ε-LDP per node label, local model.  The output holds ``y_reported`` (−1 where no
    label was collected: the test nodes), ``label_epsilon`` and ``num_classes`` instead of ``y``, as a
    release with ``label_epsilon`` does (so :func:`privgraph.fit` can denoise it).

    ``seed``, ``rng`` and ``compose``: as :class:`PrivacyTransform`.

    Args:
        epsilon: ε per node label.
        num_classes: k, the public label set {0, …, k−1} (default: the declared ``data.num_classes``; never
            read from the labels).
    """

    def __init__(
        self,
        epsilon: float,
        *,
        num_classes: int | None = None,
        seed: int | None = None,
        rng: RandomSource | None = None,
        compose: bool = False,
        ledger: Ledger | None = None,
    ):
        super().__init__(seed=seed, rng=rng, compose=compose, ledger=ledger)
        self.epsilon, self.num_classes = check_epsilon(epsilon), num_classes

    protects = ("y",)

    def planned_spend(self, data: Data) -> list[Spend]:
        """ε per node label (pure)."""
        return [Spend(Unit.NODE_LABEL, self.epsilon)]

    def randomize(self, data: Data, source: RandomSource) -> PrivacyGuarantee:
        labels = report_labels(data, self.epsilon, source, self.num_classes)
        del data["y"]
        release_labels(data, labels)
        return labels.guarantee()

    def _settings(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "num_classes": self.num_classes, **super()._settings()}


__all__ = [
    "LabelRR",
    "LinkLDP",
    "LocalRandomizer",
    "MultiBit",
    "PerturbFeatures",
    "PrivacyTransform",
    "Privatize",
    "RepeatedReleaseError",
    "privacy_report",
]

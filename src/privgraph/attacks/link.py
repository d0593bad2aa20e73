"""Link inference: link stealing (He et al., "Stealing Links from Graph Neural Networks", USENIX
Security 2021, arXiv 2005.02131) and LinkTeller (Wu et al., "LinkTeller: Recovering Private Edges
from Graph Neural Networks via Influence Analysis", IEEE S&P 2022, arXiv 2108.06504).

The secret links are the true undirected edges of ``target.truth``; when the truth marks private
edges (``private_edge_mask``: EdgeRR, EdgeRand, LapGraph, HeteroRR), only those are secret: the
public edges are known to the attacker and are never candidates.  Non-links are sampled uniformly
among the node pairs u < v that are not edges, public or private (seeded); on a bipartite truth
(``truth.bipartite`` = b: a relation between two node types, nodes [0, b) of one and [b, n) of the
other, :mod:`privgraph.attacks.hetero`) among the pairs of one node of each type only.

* ``link-stealing``: He et al.'s Attack-0, unsupervised: the closer two nodes' posteriors, the
  likelier a link; eight distances, no training.
* ``link-stealing-aux``: He et al.'s Attack-3, the attacker whose only knowledge is a partial
  graph of the target (their taxonomy crosses three kinds of knowledge, node attributes F, a
  partial graph A* and a shadow dataset D', into Attack-0 … Attack-7; Attack-2 knows F only and
  is unsupervised; the authors' ``attack_3.py`` is the partial-graph one): an MLP on pair features
  of the posteriors, trained on known links and non-links.
* ``link-score``: a link-prediction release's own score of each pair (HeteDP's link model and the
  heterogeneous lp task's baselines): the query such a release answers, on the protected relation.
* ``linkteller``: Wu et al.'s Algorithm 1, influence analysis through the inference API with
  features the attacker chooses.

Every attack's ``pairs(target, seed)`` returns the candidate pairs (codes ``u·n + v``, u < v; see
:meth:`LinkCandidates.split`) and their truth exactly as ``run(target, seed)`` scores them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from privgraph.attacks.base import (
    Attack,
    AttackParams,
    AttackResult,
    Target,
    ThreatModel,
    attack_classifier,
    fit_quietly,
    register_attack,
)
from privgraph.attacks.metrics import LINK_METRICS, attack_metrics, top_k
from privgraph.mechanisms import derive_seed
from privgraph.methods.base import param
from privgraph.progress import ProgressHook, Stages, report

DISTANCES = ("cosine", "euclidean", "correlation", "chebyshev", "braycurtis", "canberra", "cityblock", "sqeuclidean")
MIN_LINKS = 5  # the supervised attack needs at least this many known and as many evaluated links


def pair_distances(a: np.ndarray, b: np.ndarray) -> dict[str, np.ndarray]:
    """The eight distances of He et al. between the rows of ``a`` and ``b`` (SciPy's definitions,
    vectorized; 0/0 terms of Canberra count 0, an undefined cosine/correlation counts 0)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    diff = a - b

    def one_minus_cos(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        norm = np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(norm > 0, 1.0 - (x * y).sum(axis=1) / norm, 0.0)

    sq = (diff**2).sum(axis=1)
    denom = np.abs(a) + np.abs(b)
    with np.errstate(invalid="ignore", divide="ignore"):
        canberra = np.where(denom > 0, np.abs(diff) / denom, 0.0).sum(axis=1)
        total = np.abs(a + b).sum(axis=1)
        bray = np.where(total > 0, np.abs(diff).sum(axis=1) / total, 0.0)
    return {
        "cosine": one_minus_cos(a, b),
        "euclidean": np.sqrt(sq),
        "correlation": one_minus_cos(a - a.mean(axis=1, keepdims=True), b - b.mean(axis=1, keepdims=True)),
        "chebyshev": np.abs(diff).max(axis=1),
        "braycurtis": bray,
        "canberra": canberra,
        "cityblock": np.abs(diff).sum(axis=1),
        "sqeuclidean": sq,
    }


def _entropy(p: np.ndarray) -> np.ndarray:
    q = np.clip(p, 1e-12, 1.0)
    return -(q * np.log(q)).sum(axis=1, keepdims=True)


def _operations(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The four vector operations of He et al.: average, Hadamard, weighted-L1, weighted-L2."""
    return np.concatenate([(a + b) / 2, a * b, np.abs(a - b), (a - b) ** 2], axis=1)


def pair_features(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """He et al.'s supervised features of a pair (``attack_3.py``): the four operations on the two
    posteriors, the eight distances between them, and the four operations on their entropies."""
    dist = pair_distances(a, b)
    return np.concatenate(
        [_operations(a, b), np.stack([dist[d] for d in DISTANCES], axis=1), _operations(_entropy(a), _entropy(b))],
        axis=1,
    )


class LinkCandidates:
    """The secret links and the attacker-known public edges of a truth graph, as undirected pair
    codes ``u·n + v`` (u < v), and seeded sampling of non-links."""

    def __init__(self, target: Target):
        truth = target.truth
        self.n = int(truth.num_nodes)
        ei = truth.edge_index
        keep = ei[0] < ei[1]
        codes = (ei[0] * self.n + ei[1])[keep].numpy()
        private = getattr(truth, "private_edge_mask", None)
        if private is not None:
            mask = private.bool()[keep].numpy()
            self.secret, self.public = np.unique(codes[mask]), np.unique(codes[~mask])
        else:
            self.secret, self.public = np.unique(codes), np.empty(0, dtype=np.int64)
        self.edges = np.union1d(self.secret, self.public)
        bipartite = getattr(truth, "bipartite", None)
        self.bipartite = None if bipartite is None else int(bipartite)
        if self.secret.size == 0:
            raise ValueError("the graph has no secret links to attack (no edges, or none marked private)")

    def non_links(self, count: int, rng: np.random.Generator, exclude: np.ndarray | None = None) -> np.ndarray:
        """``count`` distinct uniform pairs u < v that are not edges (nor in ``exclude``); on a bipartite
        truth, u among the first ``bipartite`` nodes and v among the others."""
        taken = self.edges if exclude is None else np.union1d(self.edges, exclude)
        b = self.bipartite
        pairs = self.n * (self.n - 1) // 2 if b is None else b * (self.n - b)
        if count > pairs - taken.size:
            raise ValueError(f"the graph has fewer than {count} non-linked pairs")
        out = np.empty(0, dtype=np.int64)
        while out.size < count:
            size = 2 * (count - out.size) + 16
            u = rng.integers(0, self.n if b is None else b, size=size)
            v = rng.integers(0 if b is None else b, self.n, size=size)
            lo, hi = np.minimum(u, v), np.maximum(u, v)
            code = (lo * self.n + hi)[lo != hi]
            out = np.union1d(out, code[~np.isin(code, taken)])
        return rng.permutation(out)[:count]

    def split(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The two endpoints (u < v) of each pair code."""
        return codes // self.n, codes % self.n


@dataclass(frozen=True)
class LinkStealingParams(AttackParams):
    distance: str = param(
        "correlation", "the distance scored (all eight are reported as attack_auc_<distance>)", choices=DISTANCES
    )
    representation: str = param(
        "auto",
        "what is compared: posteriors (a model), embeddings (a released "
        "embedding), hidden; auto: posteriors, or the embeddings of an embedding release",
        choices=("auto", "posteriors", "embeddings", "hidden"),
    )
    max_pairs: int | None = param(
        20000, "at most this many candidate pairs, half links (default 20000; none: every secret link)", bound=">= 4"
    )


class _PairAttack(Attack):
    """Link stealing: scores balanced candidate pairs from the two nodes' output vectors alone."""

    family = "link"
    metrics = LINK_METRICS
    needs_model = False  # a released embedding is attacked as well

    def node_vectors(self, target: Target) -> np.ndarray:
        kind = self.params.representation
        if kind == "auto":
            kind = "embeddings" if target.embeddings is not None else "posteriors"
        return target.representation(kind).double().numpy()

    @staticmethod
    def balanced(
        links: LinkCandidates,
        secret: np.ndarray,
        count: int | None,
        rng: np.random.Generator,
        exclude: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Balanced candidates: up to ``count // 2`` of ``secret`` and as many sampled non-links."""
        k = secret.size if count is None else min(secret.size, count // 2)
        pos = rng.permutation(secret)[:k]
        neg = links.non_links(k, rng, exclude)
        return np.concatenate([pos, neg]), np.repeat([1, 0], k)

    def counts(self, links: LinkCandidates, truth: np.ndarray) -> dict[str, int]:
        k = truth.size // 2
        return {
            "candidates": int(truth.size),
            "k": k,
            "secret_links": int(links.secret.size),
            "public_edges": int(links.public.size),
        }

    def pairs(self, target: Target, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """The candidate pair codes and their truth that :meth:`run` scores: balanced, every secret link
        (at most ``max_pairs // 2``, a seeded sample) and as many non-links."""
        links = LinkCandidates(target)
        return self.balanced(links, links.secret, self.params.max_pairs, np.random.default_rng(seed))

    def top_half(
        self,
        target: Target,
        links: LinkCandidates,
        scores: np.ndarray,
        truth: np.ndarray,
        metrics: dict[str, float] | None = None,
        **details: object,
    ) -> AttackResult:
        """The result of ``scores`` on balanced candidates, the top half called links (the attacker knows
        the prior, not the labels); ``metrics`` join :func:`attack_metrics`'."""
        k = truth.size // 2
        predicted = top_k(scores, k)
        return AttackResult(
            self.name,
            scores,
            truth,
            predicted,
            {**attack_metrics(scores, truth, predicted, k), **(metrics or {})},
            self.threat_model(target),
            {**details, **self.counts(links, truth)},
        )


@register_attack
class LinkStealing(_PairAttack):
    """He et al.'s Attack-0 (unsupervised link stealing).

    Threat model: the attacker queries the target's posteriors (or reads the released embeddings)
    of both nodes of each candidate pair, answered by ``target.answers``; it knows nothing else.
    Score = −distance between the two vectors (closer ⇒ likelier link).  The headline
    ``distance`` is correlation: He et al. report it among the best of the eight on most of their
    datasets, and Wu et al.'s link-stealing baseline (LSA2) uses it; all eight AUCs are reported
    as ``attack_auc_<distance>``.  Candidates: the secret links (at most ``max_pairs // 2``, a
    seeded sample) and as many uniformly sampled non-links; decision without labels: the closer
    half (the attacker knows the balanced prior), k = half the candidates."""

    name = "link-stealing"
    description = "link stealing Attack-0: posterior distances, unsupervised (He et al. 2021)"
    threat = ThreatModel(
        queries="the posteriors (or released embeddings) of both nodes of each candidate pair",
        knowledge="nothing else; that half of the candidate pairs are links (its decision rule)",
    )
    Params = LinkStealingParams

    def run(self, target: Target, seed: int, progress: ProgressHook | None = None) -> AttackResult:
        self.check(target)
        vectors = self.node_vectors(target)
        links = LinkCandidates(target)
        codes, truth = self.pairs(target, seed)
        u, v = links.split(codes)
        dist = pair_distances(vectors[u], vectors[v])
        k = truth.size // 2
        per_distance = {
            f"attack_auc_{d}": attack_metrics(-dist[d], truth, top_k(-dist[d], k))["attack_auc"] for d in DISTANCES
        }
        return self.top_half(
            target, links, -dist[self.params.distance], truth, per_distance, distance=self.params.distance
        )


@dataclass(frozen=True)
class SupervisedParams(LinkStealingParams):
    known_fraction: float = param(
        0.5,
        "share of the secret links the attacker knows (its partial graph), with as "
        "many known non-links; the rest are evaluated (He et al.'s code: 0.5)",
        bound="in (0, 1)",
    )
    hidden: int = param(
        32, "hidden units of each of the two layers of the attacker's MLP (He et al.: 32)", bound=">= 1"
    )
    epochs: int = param(50, "training epochs of the attacker's MLP (He et al.'s code: 50)", bound=">= 1")


@register_attack
class LinkStealingSupervised(_PairAttack):
    """He et al.'s Attack-3: supervised link stealing with a partial graph of the target.

    Threat model: the attacker queries the posteriors (or reads the released embeddings) of both
    nodes of each pair, answered by ``target.answers``, and knows a partial graph: a seeded
    ``known_fraction`` of the secret links and as many non-links.  It trains an MLP (two hidden
    layers of ``hidden`` units, ``epochs`` epochs, standardised inputs, as in the authors'
    ``attack_3.py``) on their :func:`pair_features` — the average, Hadamard, weighted-L1 and
    weighted-L2 of the two posteriors, the eight distances, the same four operations on the two
    posteriors' entropies — and scores balanced candidates disjoint from the known pairs (the
    other secret links, non-links never known).  Decision = the MLP's (probability ≥ 0.5),
    k = half the candidates."""

    name = "link-stealing-aux"
    description = "link stealing Attack-3, a partial graph known: an MLP on posterior pair features (He et al. 2021)"
    threat = ThreatModel(
        queries="the posteriors (or released embeddings) of both nodes of each pair",
        knowledge="a partial graph: some secret links and as many non-links (its training pairs)",
    )
    Params = SupervisedParams

    def split_pairs(
        self, links: LinkCandidates, seed: int
    ) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """(known pairs, truth), (evaluated pairs, truth): disjoint, each balanced."""
        p = self.params
        rng = np.random.default_rng(seed)
        secret = rng.permutation(links.secret)
        known = int(round(p.known_fraction * secret.size))
        if known < MIN_LINKS or secret.size - known < MIN_LINKS:
            raise ValueError(
                f"known_fraction={p.known_fraction} of the {secret.size} secret links leaves {known} "
                f"known and {secret.size - known} evaluated: the auxiliary set must leave at least "
                f"{MIN_LINKS} links on each side"
            )
        train = self.balanced(links, secret[:known], p.max_pairs, rng)
        return train, self.balanced(links, secret[known:], p.max_pairs, rng, exclude=train[0])

    def pairs(self, target: Target, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """The evaluated pair codes and their truth that :meth:`run` scores (the known pairs are
        the first element of :meth:`split_pairs`)."""
        return self.split_pairs(LinkCandidates(target), seed)[1]

    def run(self, target: Target, seed: int, progress: ProgressHook | None = None) -> AttackResult:
        self.check(target)
        p = self.params
        vectors = self.node_vectors(target)
        links = LinkCandidates(target)
        (train_codes, train_truth), (codes, truth) = self.split_pairs(links, seed)
        classifier = attack_classifier((p.hidden, p.hidden), derive_seed(seed, 1), max_iter=p.epochs)
        stages = Stages(progress, f"{self.name} attack", ("training the attack classifier", "scoring the pairs"))
        stages.start("training the attack classifier")
        tu, tv = links.split(train_codes)
        fit_quietly(classifier, pair_features(vectors[tu], vectors[tv]), train_truth)
        stages.start("scoring the pairs")
        u, v = links.split(codes)
        scores = classifier.predict_proba(pair_features(vectors[u], vectors[v]))[:, 1]
        stages.finish()
        predicted = (scores >= 0.5).astype(int)
        k = truth.size // 2
        return AttackResult(
            self.name,
            scores,
            truth,
            predicted,
            attack_metrics(scores, truth, predicted, k),
            self.threat_model(target),
            {"known_pairs": int(train_truth.size), **self.counts(links, truth)},
        )


@dataclass(frozen=True)
class LinkScoreParams(AttackParams):
    max_pairs: int | None = param(
        20000, "at most this many candidate pairs, half links (default 20000; none: every secret link)", bound=">= 4"
    )


@register_attack
class LinkScore(_PairAttack):
    """The link predictor's own answer: a release that predicts the protected relation (HeteDP's
    DP-SGD link model, eq. 19's μ_u·μ_v; the lp task's RGCN/HGT/metapath2vec inner products) is
    asked, pair by pair, whether the pair is a link, and its score is the attack's score.  No
    attack model: this is the query the release is built to answer, so its AUC on the training
    edges (the secret links: DP-SGD's examples) against uniform non-links is what DP-SGD's ε_s
    bounds.  Candidates and decision as :class:`LinkStealing` (balanced; the top half are called
    links)."""

    name = "link-score"
    description = "the target link predictor's own score of each candidate pair (link-prediction releases)"
    threat = ThreatModel(
        queries="the link predictor's score of each candidate pair (of the protected relation)",
        knowledge="nothing else; that half of the candidate pairs are links (its decision rule)",
    )
    Params = LinkScoreParams

    def check(self, target: Target) -> None:
        super().check(target)
        if target.pair_score is None:
            raise ValueError(
                f"link-score reads a link predictor's score of a pair; the {target.method} target predicts "
                "no links (use link-stealing: the distance between its nodes' outputs)"
            )

    def run(self, target: Target, seed: int, progress: ProgressHook | None = None) -> AttackResult:
        self.check(target)
        links = LinkCandidates(target)
        codes, truth = self.pairs(target, seed)
        u, v = links.split(codes)
        return self.top_half(target, links, np.asarray(target.pair_score(u, v), dtype=np.float64), truth)


@dataclass(frozen=True)
class LinkTellerParams(AttackParams):
    nodes: int = param(
        500,
        "query nodes V_I, a seeded sample (capped at the graph's size); every pair among "
        "them is a candidate (Wu et al.: 500)",
        bound=">= 2",
    )
    delta: float = param(
        1e-4,
        "Δ: node u's feature row is scaled by (1 + Δ) (Wu et al.'s code: 1e-4; a zero row gets Δ added instead)",
        bound="in (0, 1]",
    )
    density_factor: float = param(1.0, "the attacker's density belief k̂ / k (Wu et al. try 1/4 … 4)", bound="> 0")


@register_attack
class LinkTeller(Attack):
    """LinkTeller (Wu et al. 2022, Algorithm 1; the authors' ``attacker.py``).

    Threat model: the attacker owns the node features and queries the inference API with
    features it chooses; the server's graph answers (``target.answers``).  It knows the features
    of the query nodes V_I (a seeded sample of ``nodes``) and the density of the secret links
    among their pairs, scaled by its belief ``density_factor``.

    For each u in V_I it submits the server's features ``target.x`` with u's row scaled by
    (1 + Δ) (Wu et al.: Δ = 1e-4; a zero row, which scaling leaves unchanged, gets Δ added to
    every entry) and reads how every other query node's output moves: I(u→v) = ‖L'_v − L_v‖ / Δ,
    L the centred log-posteriors (log-softmax minus its mean = the logits up to a per-node
    constant; Wu et al. differentiate the model's log-space output — softmax posteriors would
    shrink the influence on confident nodes).  The forward pass runs in the model's float32; the
    difference, taken in float64, has ~3 significant digits at Δ = 1e-4, ample for a ranking, and
    a node outside u's receptive field gets exactly the same output, so its influence is exactly 0.
    A pair's score is the mean of its two directed influences (Wu et al. read one direction).
    Candidates: every pair of V_I but the public edges; the top k̂ = round(density_factor · k)
    are called links, k the number of secret links among the candidates (LinkTeller's k̂ = k at
    density_factor 1); the AUC is over all candidates.  In a two-layer GCN a node two hops away
    is also influenced, through each common neighbour, about half as much as a direct neighbour:
    the false positives at k̂ = k are two-hop pairs, so precision stays below 1 while the AUC is
    near 1.  Cost: |V_I| + 1 forward passes over the whole graph; an |V_I|² influence matrix."""

    name = "linkteller"
    family = "link"
    description = "LinkTeller: influence analysis through the inference API (Wu et al. 2022)"
    threat = ThreatModel(
        queries="the inference API with node features it chooses (|V_I| + 1 queries)",
        knowledge="the query nodes' features; the density of the secret links (k̂)",
    )
    metrics = LINK_METRICS
    Params = LinkTellerParams
    needs_model = True
    needs_graph = True

    def query_nodes(self, n: int, seed: int) -> np.ndarray:
        """V_I: ``min(nodes, n)`` distinct nodes, sorted, drawn with ``default_rng(seed)``."""
        return np.sort(np.random.default_rng(seed).choice(n, min(self.params.nodes, n), replace=False))

    @staticmethod
    def candidates(links: LinkCandidates, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The candidate pairs of V_I as positions (i < j) in ``nodes``, their codes and truth: every
        pair but the public edges."""
        i, j = np.triu_indices(nodes.size, k=1)
        codes = nodes[i] * links.n + nodes[j]
        keep = ~np.isin(codes, links.public)
        codes = codes[keep]
        return i[keep], j[keep], codes, np.isin(codes, links.secret).astype(int)

    def pairs(self, target: Target, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """The candidate pair codes and their truth that :meth:`run` scores."""
        links = LinkCandidates(target)
        return self.candidates(links, self.query_nodes(links.n, seed))[2:]

    def influence(self, target: Target, nodes: Tensor, progress: ProgressHook | None = None) -> np.ndarray:
        """I[i, j] = ‖L'_{v_j} − L_{v_j}‖ / Δ when the features of v_i are perturbed (class docstring);
        ``progress`` after each query node."""
        x = target.x if target.x is not None else target.truth.x
        delta = self.params.delta

        def centred(q: Tensor) -> Tensor:  # the query written into one buffer: KProp must not cache it
            out = target.log_posteriors_fresh(q)[nodes].double()
            return out - out.mean(dim=1, keepdim=True)

        base = centred(x)
        query = x.clone()
        out = np.empty((nodes.numel(), nodes.numel()))
        for i, u in enumerate(nodes.tolist()):
            query[u] = x[u] * (1 + delta) if bool(x[u].any()) else x[u] + delta
            out[i] = ((centred(query) - base).norm(dim=1) / delta).numpy()
            query[u] = x[u]
            report(progress, "LinkTeller: influence queries (nodes)", i + 1, nodes.numel())
        return out

    def run(self, target: Target, seed: int, progress: ProgressHook | None = None) -> AttackResult:
        self.check(target)
        links = LinkCandidates(target)
        nodes = self.query_nodes(links.n, seed)
        i, j, codes, truth = self.candidates(links, nodes)
        if truth.sum() == 0:
            raise ValueError(f"no secret link among the {nodes.size} query nodes: raise nodes")
        infl = self.influence(target, torch.from_numpy(nodes), progress)
        scores = (infl[i, j] + infl[j, i]) / 2
        k = min(max(int(round(self.params.density_factor * truth.sum())), 1), truth.size)
        predicted = top_k(scores, k)
        return AttackResult(
            self.name,
            scores,
            truth,
            predicted,
            attack_metrics(scores, truth, predicted, k),
            self.threat_model(target),
            {
                "query_nodes": int(nodes.size),
                "candidates": int(truth.size),
                "secret_links_among_candidates": int(truth.sum()),
                "k_hat": k,
                "density": float(truth.mean()),
                "delta": self.params.delta,
                "public_edges": int(links.public.size),
            },
        )


__all__ = [
    "DISTANCES",
    "LinkCandidates",
    "LinkScore",
    "LinkStealing",
    "LinkStealingSupervised",
    "LinkTeller",
    "pair_distances",
    "pair_features",
]

"""Link inference: link stealing (He et al., USENIX Security 2021, arXiv 2005.02131) and
LinkTeller (Wu et al., S&P 2022, arXiv 2108.06504).

The secret links are the true undirected edges of ``target.truth``; when the truth marks private
edges (``private_edge_mask``: EdgeRR, EdgeRand, LapGraph, HeteroRR), only those are secret: the
public edges are known to the attacker and are never candidates.  Non-links are sampled uniformly
among the node pairs that are not edges (seeded).

* ``link-stealing`` (He et al.'s Attack-0, unsupervised): the closer two nodes' posteriors, the
  likelier a link — eight distances, no training;
* ``link-stealing-aux`` (He et al.'s supervised attack with a partial graph — Attack-3 in the
  authors' code): an MLP on pair features of the posteriors, trained on known links and non-links;
* ``linkteller`` (Wu et al. Algorithm 1): influence analysis through the inference API with
  chosen features.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from torch import Tensor

from privgraph.attacks.base import Attack, AttackParams, AttackResult, Target, ThreatModel, register_attack
from privgraph.attacks.metrics import LINK_METRICS, attack_metrics, top_k
from privgraph.mechanisms import derive_seed
from privgraph.methods.base import param

DISTANCES = ("cosine", "euclidean", "correlation", "chebyshev", "braycurtis", "canberra", "cityblock", "sqeuclidean")


def pair_distances(a: np.ndarray, b: np.ndarray) -> dict[str, np.ndarray]:
    """The eight distances of He et al. between the rows of ``a`` and ``b`` (SciPy's definitions,
    vectorized; 0/0 terms of Canberra count 0, an undefined cosine/correlation counts 0)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    diff = a - b

    def one_minus_cos(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        norm = np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(norm > 0, 1.0 - (x * y).sum(axis=1) / norm, 0.0)

    sq = (diff ** 2).sum(axis=1)
    denom = np.abs(a) + np.abs(b)
    with np.errstate(invalid="ignore", divide="ignore"):
        canberra = np.where(denom > 0, np.abs(diff) / denom, 0.0).sum(axis=1)
        total = np.abs(a + b).sum(axis=1)
        bray = np.where(total > 0, np.abs(diff).sum(axis=1) / total, 0.0)
    return {"cosine": one_minus_cos(a, b), "euclidean": np.sqrt(sq),
            "correlation": one_minus_cos(a - a.mean(axis=1, keepdims=True), b - b.mean(axis=1, keepdims=True)),
            "chebyshev": np.abs(diff).max(axis=1), "braycurtis": bray, "canberra": canberra,
            "cityblock": np.abs(diff).sum(axis=1), "sqeuclidean": sq}


def _entropy(p: np.ndarray) -> np.ndarray:
    q = np.clip(p, 1e-12, 1.0)
    return -(q * np.log(q)).sum(axis=1, keepdims=True)


def _operations(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The four vector operations of He et al.: average, Hadamard, weighted-L1, weighted-L2."""
    return np.concatenate([(a + b) / 2, a * b, np.abs(a - b), (a - b) ** 2], axis=1)


def pair_features(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """He et al.'s supervised features of a pair: the four operations on the posteriors, the eight
    distances, and the four operations on the two posteriors' entropies."""
    dist = pair_distances(a, b)
    return np.concatenate([_operations(a, b), np.stack([dist[d] for d in DISTANCES], axis=1),
                           _operations(_entropy(a), _entropy(b))], axis=1)


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
        if self.secret.size == 0:
            raise ValueError("the graph has no secret links to attack (no edges, or none marked private)")

    def non_links(self, count: int, rng: np.random.Generator, exclude: np.ndarray | None = None) -> np.ndarray:
        """``count`` distinct uniform pairs u < v that are not edges (nor in ``exclude``)."""
        taken = self.edges if exclude is None else np.union1d(self.edges, exclude)
        pairs = self.n * (self.n - 1) // 2
        if count > pairs - taken.size:
            raise ValueError(f"the graph has fewer than {count} non-linked pairs")
        out = np.empty(0, dtype=np.int64)
        while out.size < count:
            u = rng.integers(0, self.n, size=2 * (count - out.size) + 16)
            v = rng.integers(0, self.n, size=u.size)
            lo, hi = np.minimum(u, v), np.maximum(u, v)
            code = (lo * self.n + hi)[lo != hi]
            code = code[~np.isin(code, taken)]
            out = np.union1d(out, code) if out.size else np.unique(code)
        return rng.permutation(out)[:count]

    def split(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return codes // self.n, codes % self.n


@dataclass(frozen=True)
class LinkStealingParams(AttackParams):
    distance: str = param("correlation", "the distance scored (all eight are reported as attack_auc_<distance>)")
    representation: str = param("auto", "what is compared: posteriors (a model), embeddings (a released "
                                "embedding), hidden; auto: posteriors, or the embeddings of an embedding release")
    max_pairs: int | None = param(20000, "at most this many candidate pairs, half links (default 20000; none: "
                                  "every secret link)")

    def validate(self) -> None:
        super().validate()
        if self.distance not in DISTANCES:
            raise ValueError(f"distance must be one of {', '.join(DISTANCES)}, got {self.distance!r}")
        if self.representation not in ("auto", "posteriors", "embeddings", "hidden"):
            raise ValueError(f"representation must be auto, posteriors, embeddings or hidden, got "
                             f"{self.representation!r}")
        if self.max_pairs is not None and self.max_pairs < 4:
            raise ValueError(f"max_pairs must be at least 4, got {self.max_pairs}")


class _PairAttack(Attack):
    family = "link"
    metrics = LINK_METRICS
    needs_model = False

    def node_vectors(self, target: Target) -> np.ndarray:
        kind = self.params.representation
        if kind == "auto":
            kind = "embeddings" if target.embeddings is not None else "posteriors"
        return target.representation(kind).double().numpy()

    def balanced(self, links: LinkCandidates, secret: np.ndarray, count: int | None, rng: np.random.Generator,
                 exclude: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Balanced candidates: up to ``count // 2`` of ``secret`` and as many sampled non-links."""
        k = secret.size if count is None else min(secret.size, count // 2)
        pos = rng.permutation(secret)[:k]
        neg = links.non_links(k, rng, exclude)
        return np.concatenate([pos, neg]), np.repeat([1, 0], k)


@register_attack
class LinkStealing(_PairAttack):
    """He et al.'s Attack-0: the attacker queries the posteriors of both nodes of a pair and knows
    nothing else; score = −distance (closer posteriors ⇒ likelier link).  The headline ``distance``
    is correlation (He et al. found it the best or near-best on most datasets); all eight AUCs are
    reported.  Balanced candidates (secret links and as many non-links); decision without labels:
    the closer half (the attacker knows the prior), k = half the candidates."""

    name = "link-stealing"
    description = "link stealing Attack-0: posterior distances, unsupervised (He et al. 2021)"
    threat = ThreatModel(queries="the posteriors (or released embeddings) of both nodes of each candidate pair",
                         knowledge="nothing else; that half of the candidate pairs are links (its decision rule)")
    Params = LinkStealingParams

    def run(self, target: Target, seed: int) -> AttackResult:
        self.check(target)
        vectors = self.node_vectors(target)
        links = LinkCandidates(target)
        rng = np.random.default_rng(seed)
        codes, truth = self.balanced(links, links.secret, self.params.max_pairs, rng)
        u, v = links.split(codes)
        dist = pair_distances(vectors[u], vectors[v])
        scores = -dist[self.params.distance]
        k = truth.size // 2
        metrics = attack_metrics(scores, truth, top_k(scores, k), k)
        metrics.update({f"attack_auc_{d}": attack_metrics(-dist[d], truth, top_k(-dist[d], k))["attack_auc"]
                        for d in DISTANCES})
        return AttackResult(self.name, scores, truth, top_k(scores, k), metrics, self.threat_model(target),
                            {"distance": self.params.distance, "candidates": int(truth.size), "k": k,
                             "secret_links": int(links.secret.size), "public_edges": int(links.public.size)})


@dataclass(frozen=True)
class SupervisedParams(LinkStealingParams):
    known_fraction: float = param(0.5, "share of the secret links the attacker knows (its partial graph), with as "
                                  "many known non-links; the rest are evaluated (He et al.'s code: 0.5)")
    hidden: int = param(32, "hidden units of the attacker's two-layer MLP")

    def validate(self) -> None:
        super().validate()
        if not 0.0 < self.known_fraction < 1.0:
            raise ValueError(f"known_fraction must lie in (0, 1), got {self.known_fraction}")
        if self.hidden < 1:
            raise ValueError("hidden must be >= 1")


@register_attack
class LinkStealingSupervised(_PairAttack):
    """He et al.'s supervised link stealing with a partial graph (Attack-3 in the authors' code): the
    attacker knows ``known_fraction`` of the secret links and as many non-links, trains an MLP on
    their pair features (:func:`pair_features`: the four operations on the posteriors, the eight
    distances, the operations on the entropies; standardised), and scores disjoint balanced
    candidates; decision = the MLP's, k = half the candidates."""

    name = "link-stealing-aux"
    description = "link stealing with a partial graph: an MLP on posterior pair features (He et al. 2021)"
    threat = ThreatModel(queries="the posteriors (or released embeddings) of both nodes of each pair",
                         knowledge="a partial graph: some secret links and as many non-links (its training pairs)")
    Params = SupervisedParams

    def run(self, target: Target, seed: int) -> AttackResult:
        self.check(target)
        p = self.params
        vectors = self.node_vectors(target)
        links = LinkCandidates(target)
        rng = np.random.default_rng(seed)
        secret = rng.permutation(links.secret)
        known = int(round(p.known_fraction * secret.size))
        if known < 2 or secret.size - known < 2:
            raise ValueError(f"known_fraction={p.known_fraction} leaves {known} known and {secret.size - known} "
                             f"evaluated links of {secret.size}: the auxiliary set must leave links on both sides")
        train_codes, train_truth = self.balanced(links, secret[:known], p.max_pairs, rng)
        test_codes, truth = self.balanced(links, secret[known:], p.max_pairs, rng, exclude=train_codes)
        clf = make_pipeline(StandardScaler(), MLPClassifier((p.hidden, p.hidden), max_iter=300,
                                                            random_state=derive_seed(seed, 1) % 2**31))
        tu, tv = links.split(train_codes)
        clf.fit(pair_features(vectors[tu], vectors[tv]), train_truth)
        u, v = links.split(test_codes)
        scores = clf.predict_proba(pair_features(vectors[u], vectors[v]))[:, 1]
        predicted = (scores >= 0.5).astype(int)
        k = truth.size // 2
        return AttackResult(self.name, scores, truth, predicted, attack_metrics(scores, truth, predicted, k),
                            self.threat_model(target),
                            {"known_pairs": int(train_truth.size), "candidates": int(truth.size), "k": k,
                             "secret_links": int(links.secret.size), "public_edges": int(links.public.size)})


@dataclass(frozen=True)
class LinkTellerParams(AttackParams):
    nodes: int = param(500, "query nodes V_I (a seeded sample; every pair among them is a candidate)")
    delta: float = param(1e-4, "Δ: node u's feature row is scaled by (1 + Δ) (Wu et al.'s code; a zero row gets Δ "
                         "added instead)")
    density_factor: float = param(1.0, "the attacker's density belief k̂ / k (LinkTeller: 1/4 … 4)")

    def validate(self) -> None:
        super().validate()
        if self.nodes < 2:
            raise ValueError(f"nodes must be at least 2, got {self.nodes}")
        if not 0.0 < self.delta <= 1.0:
            raise ValueError(f"delta must lie in (0, 1], got {self.delta}")
        if self.density_factor <= 0:
            raise ValueError("density_factor must be > 0")


@register_attack
class LinkTeller(Attack):
    """LinkTeller (Wu et al. 2022, Algorithm 1): for each query node u the attacker submits the
    features with u's row scaled by (1 + Δ) and reads how every other query node's posterior moves;
    influence I(u→v) = ‖L'_v − L_v‖ / Δ on the centred log-posteriors L (the logits up to a
    per-node constant, as Wu et al. read them: raw posteriors would rank pairs by how unsure the
    receiving node is).  A pair's score is the mean of its two directed influences (Wu et al. use
    one direction).  In a two-layer GCN a node two hops away is also influenced, through each common
    neighbour, by about half as much as a direct neighbour: precision at k̂ = k stays well below 1
    on graphs with many triangles, while the AUC is near 1.  It knows the density of the secret links among the candidate pairs
    and calls the top k̂ = density_factor · k pairs links.  The queries are answered by the graph
    the server holds (``target.answers``).  Cost: |V_I| forward passes over the whole graph."""

    name = "linkteller"
    family = "link"
    description = "LinkTeller: influence analysis through the inference API (Wu et al. 2022)"
    threat = ThreatModel(queries="the inference API with node features it chooses (|V_I| + 1 queries)",
                         knowledge="the query nodes' features; the density of the secret links (k̂)")
    metrics = LINK_METRICS
    Params = LinkTellerParams
    needs_model = True
    needs_graph = True

    def influence(self, target: Target, nodes: Tensor) -> np.ndarray:
        """I[i, j] = ‖P'_{v_j} − P_{v_j}‖ / Δ when the features of v_i are perturbed.  A node outside
        v_i's receptive field gets exactly the same output (the same float operations), so its
        influence is exactly 0."""
        x = target.x

        def logits(q: Tensor) -> Tensor:  # centred log-posteriors = the logits minus their mean
            out = target.log_posteriors(q)[nodes].double()
            return out - out.mean(dim=1, keepdim=True)

        base = logits(x)
        out = np.empty((nodes.numel(), nodes.numel()))
        delta = self.params.delta
        for i, u in enumerate(nodes.tolist()):
            q = x.clone()
            row = q[u]
            q[u] = row * (1 + delta) if bool(row.abs().sum() > 0) else row + delta
            out[i] = ((logits(q) - base).norm(dim=1) / delta).numpy()
        return out

    def run(self, target: Target, seed: int) -> AttackResult:
        self.check(target)
        links = LinkCandidates(target)
        rng = np.random.default_rng(seed)
        n = links.n
        if self.params.nodes > n:
            raise ValueError(f"nodes={self.params.nodes} exceeds the graph's {n} nodes")
        nodes = np.sort(rng.choice(n, self.params.nodes, replace=False))
        infl = self.influence(target, torch.from_numpy(nodes))
        i, j = np.triu_indices(nodes.size, k=1)
        codes = nodes[i] * n + nodes[j]
        keep = ~np.isin(codes, links.public)  # the public edges are known: not candidates
        codes, scores = codes[keep], ((infl[i, j] + infl[j, i]) / 2)[keep]
        truth = np.isin(codes, links.secret).astype(int)
        if truth.sum() == 0:
            raise ValueError(f"no secret link among the {nodes.size} query nodes: raise nodes")
        k = int(round(self.params.density_factor * truth.sum()))
        k = min(max(k, 1), truth.size)
        predicted = top_k(scores, k)
        metrics = attack_metrics(scores, truth, predicted, k)
        return AttackResult(self.name, scores, truth, predicted, metrics, self.threat_model(target),
                            {"query_nodes": int(nodes.size), "candidates": int(truth.size),
                             "secret_links_among_candidates": int(truth.sum()), "k_hat": k,
                             "density": float(truth.mean()), "delta": self.params.delta})


__all__ = ["DISTANCES", "LinkCandidates", "LinkStealing", "LinkStealingSupervised", "LinkTeller", "pair_distances",
           "pair_features"]

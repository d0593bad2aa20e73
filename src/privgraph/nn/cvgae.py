"""Conditional variational graph autoencoders (PPCVGAE §4) and the VGAE baseline.

* Case (a), the adversary knows A (§4.1): encoder ``GCN_μ, GCN_σ(A, [X, s])``,
  feature decoder ``GCN_φ(A, [Z, s])`` (``p(x_i | ·) = N(φ_i, I)``), conditional
  prior ``p(z_i | A, s) = N(ν_i(A, s), I)`` with ``ν = GCN_ν(A, s)``; ELBO eq. 3.
* Case (b), the adversary does not know A (§4.2): the same encoder, decoders
  on ``z'_i = [z_i, s_i]`` — features ``N(φ(z'_i), I)``, edges
  ``σ(ψ(z'_i)ᵀψ(z'_j))`` — and the prior ``N(ν(s_i), I)`` with an MLP ν; ELBO
  eq. 4.  The adjacency term is the usual VGAE estimate over the edges and as
  many negative-sampled non-edges (never a dense n×n matrix).
* :class:`VGAEBaseline` — Kipf & Welling (2016): GCN encoder on X, inner-product
  decoder, standard-normal prior (no s).

``loss`` returns the negative ELBO per node — the reconstruction term plus the
KL divergence scaled by ``kl_weight`` (1: the ELBO itself) — and its pieces for
logging.  The privacy penalty Δν (§5.2) is added by the trainer
(:mod:`privgraph.methods.ppcvgae.embedding`), which owns the privacy candidates.

The GCN layers cache their normalised adjacency (as CSR matrices,
:class:`~privgraph.nn.gcn.CachedGCNConv`): a model serves one graph
(transductive embedding), as PyG's ``cached=True`` requires.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from privgraph.nn.gcn import CachedGCNConv


def gaussian_kl(mu: Tensor, logstd: Tensor, prior_mean: Tensor | None = None) -> Tensor:
    """KL(N(μ, diag σ²) ‖ N(ν, I)) per row (summed over the last dimension); ν = 0 by default."""
    diff = mu if prior_mean is None else mu - prior_mean
    return 0.5 * ((2 * logstd).exp() + diff**2 - 1 - 2 * logstd).sum(-1)


class _GCN2(nn.Module):
    """Two GCN layers with a ReLU between them."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int):
        super().__init__()
        self.conv1, self.conv2 = CachedGCNConv(in_dim, hidden), CachedGCNConv(hidden, out_dim)

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        return self.conv2(torch.relu(self.conv1(x, edge_index)), edge_index)


class _GaussianEncoder(nn.Module):
    """GCN → ReLU → two GCN heads: the posterior mean μ and log-std (VGAE's encoder)."""

    def __init__(self, in_dim: int, hidden: int, latent: int):
        super().__init__()
        self.conv = CachedGCNConv(in_dim, hidden)
        self.mu, self.logstd = CachedGCNConv(hidden, latent), CachedGCNConv(hidden, latent)

    def forward(self, x: Tensor, edge_index: Tensor) -> tuple[Tensor, Tensor]:
        h = torch.relu(self.conv(x, edge_index))
        return self.mu(h, edge_index), self.logstd(h, edge_index).clamp(max=10)


def _mlp(in_dim: int, hidden: int, out_dim: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, out_dim))


def reparameterization_noise(mu: Tensor) -> Tensor:
    """The reparameterisation's standard normals, drawn by torch's global CPU generator and moved to
    ``mu``'s device: a seeded training draws the same values on every device (on the CPU, those of
    ``torch.randn_like(mu)``)."""
    return torch.randn(mu.shape, dtype=mu.dtype).to(mu.device)


def edge_keys(edge_index: Tensor, num_nodes: int) -> Tensor:
    """The sorted keys ``i·n + j`` of the edges (i, j): what :func:`sample_non_edges` searches."""
    return torch.sort(edge_index[0] * num_nodes + edge_index[1]).values


def _is_edge(keys: Tensor, pairs: Tensor) -> Tensor:
    """Which of the pair keys are in the sorted ``keys``: binary search of the pairs in sorted
    order (monotone memory access, twice as fast as searching them as drawn on 0.6 M edges)."""
    if keys.numel() == 0:
        return torch.zeros_like(pairs, dtype=torch.bool)
    ordered, order = torch.sort(pairs)
    pos = torch.searchsorted(keys, ordered).clamp(max=keys.numel() - 1)
    found = torch.empty_like(pairs, dtype=torch.bool)
    found[order] = keys[pos] == ordered
    return found


def sample_non_edges(edge_index: Tensor, num_nodes: int, count: int, keys: Tensor | None = None) -> Tensor:
    """About ``count`` uniform random ordered pairs (i ≠ j) that are not edges, vectorised
    (torch's global CPU generator): candidates drawn with 20 % extra, edges and self-pairs
    removed by binary search in the sorted edge keys (``keys``: :func:`edge_keys`, computed
    when not given).  O(count·log |E|), no n×n matrix."""
    keys = edge_keys(edge_index, num_nodes) if keys is None else keys
    draw = int(count * 1.2) + 16
    # drawn on the CPU (torch's global CPU generator), so training draws the same pairs on every device
    cand = torch.randint(0, num_nodes * num_nodes, (draw,)).to(keys.device)
    cand = cand[~_is_edge(keys, cand) & (cand // num_nodes != cand % num_nodes)][:count]
    return torch.stack([cand // num_nodes, cand % num_nodes])


class _AdjacencyNLL:
    """−log p(A | ·) per node, VGAE's estimate: positive edges + as many sampled non-edges.
    Serves one graph (like the cached GCN layers): its edge keys are sorted once."""

    def __init__(self) -> None:
        self.keys: Tensor | None = None

    def __call__(self, h: Tensor, edge_index: Tensor, num_nodes: int) -> Tensor:
        if self.keys is None:
            self.keys = edge_keys(edge_index, num_nodes)
        src, dst = edge_index
        neg_src, neg_dst = sample_non_edges(edge_index, num_nodes, src.numel(), self.keys)
        # index_select rather than h[src]: the same values and gradients, a cheaper backward
        pos = torch.nn.functional.logsigmoid((h.index_select(0, src) * h.index_select(0, dst)).sum(-1)).mean()
        neg = torch.nn.functional.logsigmoid(-(h.index_select(0, neg_src) * h.index_select(0, neg_dst)).sum(-1))
        return -(pos + neg.mean())


class CVGAE(nn.Module):
    """CVGAE for ``case`` "a" (adversary knows A) or "b" (it does not)."""

    def __init__(self, in_dim: int, latent: int = 16, hidden: int = 32, case: str = "a", kl_weight: float = 1.0):
        super().__init__()
        if case not in ("a", "b"):
            raise ValueError(f"case must be 'a' or 'b', got {case!r}")
        if not kl_weight >= 0:
            raise ValueError(f"kl_weight must be >= 0, got {kl_weight}")
        self.case = case
        self.kl_weight = float(kl_weight)
        self.encoder = _GaussianEncoder(in_dim + 1, hidden, latent)
        if case == "a":
            self.prior = _GCN2(1, hidden, latent)
            self.dec_x = _GCN2(latent + 1, hidden, in_dim)
        else:
            self.prior = _mlp(1, hidden, latent)
            self.dec_x = _mlp(latent + 1, hidden, in_dim)
            self.dec_a = _mlp(latent + 1, hidden, latent)
            self.adjacency_nll = _AdjacencyNLL()

    def encode(self, x: Tensor, sens: Tensor, edge_index: Tensor) -> tuple[Tensor, Tensor]:
        return self.encoder(torch.cat([x, sens.float()[:, None]], dim=1), edge_index)

    def prior_mean(self, sens: Tensor, edge_index: Tensor) -> Tensor:
        s = sens.float()[:, None]
        return self.prior(s, edge_index) if self.case == "a" else self.prior(s)

    def loss(self, x: Tensor, sens: Tensor, edge_index: Tensor) -> tuple[Tensor, dict[str, float]]:
        mu, logstd = self.encode(x, sens, edge_index)
        z = mu + reparameterization_noise(mu) * logstd.exp()
        zs = torch.cat([z, sens.float()[:, None]], dim=1)
        phi = self.dec_x(zs, edge_index) if self.case == "a" else self.dec_x(zs)
        recon = 0.5 * ((x - phi) ** 2).sum(-1).mean()
        if self.case == "b":
            recon = recon + self.adjacency_nll(self.dec_a(zs), edge_index, x.shape[0])
        nu = self.prior_mean(sens, edge_index)
        kl = gaussian_kl(mu, logstd, nu).mean()
        return recon + self.kl_weight * kl, {"reconstruction": float(recon.detach()), "kl": float(kl.detach())}


class VGAEBaseline(nn.Module):
    """Kipf & Welling's VGAE (no sensitive attribute): the unsanitised embedding."""

    def __init__(self, in_dim: int, latent: int = 16, hidden: int = 32, kl_weight: float | None = None):
        super().__init__()
        self.encoder = _GaussianEncoder(in_dim, hidden, latent)
        self.kl_weight = kl_weight  # None: 1/N, Kipf & Welling's (and PyG's) weighting
        self.adjacency_nll = _AdjacencyNLL()

    def encode(self, x: Tensor, sens: Tensor | None, edge_index: Tensor) -> tuple[Tensor, Tensor]:
        return self.encoder(x, edge_index)

    def loss(self, x: Tensor, sens: Tensor | None, edge_index: Tensor) -> tuple[Tensor, dict[str, float]]:
        mu, logstd = self.encode(x, sens, edge_index)
        z = mu + reparameterization_noise(mu) * logstd.exp()
        recon = self.adjacency_nll(z, edge_index, x.shape[0])
        kl = gaussian_kl(mu, logstd).mean()
        weight = 1.0 / x.shape[0] if self.kl_weight is None else self.kl_weight
        return recon + weight * kl, {"reconstruction": float(recon.detach()), "kl": float(kl.detach())}

"""DP-GCN's disentangled representation learning (Hu et al., WWW'22), the
PPCVGAE paper's baseline for case (a).

This follows the published design of Hu et al.'s paper as we read it: two
linear maps of the (standardised) features, a sensitive one ``Z_s = X W_s``
trained to predict s on the nodes whose s is known (the public nodes Q) and a non-sensitive one ``Z_n = X W_n``, kept
orthogonal (``‖W_sᵀ W_n‖_F² → 0``) while ``[W_s, W_n]`` reconstructs X
(``‖X − X W Wᵀ‖²``).  The released representation is ``Z_n``; the node
representation module (a GCN on ``(A, Z_n)``) is the evaluation GCN of
:mod:`privgraph.attacks.attribute`.  Removing a linear subspace leaves any
nonlinear dependence on s in place — the paper's point against it.  No
formal guarantee.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from privgraph.device import current_device


class OrthogonalDisentangler(nn.Module):
    def __init__(self, in_dim: int, sensitive_dim: int = 2):
        super().__init__()
        if not 1 <= sensitive_dim < in_dim:
            raise ValueError(f"sensitive_dim must lie in [1, {in_dim - 1}], got {sensitive_dim}")
        w = torch.linalg.qr(torch.randn(in_dim, in_dim))[0]
        self.w_s = nn.Parameter(w[:, :sensitive_dim].clone())
        self.w_n = nn.Parameter(w[:, sensitive_dim:].clone())
        self.head = nn.Linear(sensitive_dim, 1)

    def loss(
        self,
        x: Tensor,
        sens: Tensor,
        known: Tensor,
        reconstruction_weight: float = 1.0,
        orthogonality_weight: float = 10.0,
    ) -> Tensor:
        z_s = x @ self.w_s
        attribute = F.binary_cross_entropy_with_logits(self.head(z_s[known]).squeeze(-1), sens[known].float())
        w = torch.cat([self.w_s, self.w_n], dim=1)
        reconstruction = ((x - x @ w @ w.T) ** 2).sum(-1).mean()
        orthogonality = (self.w_s.T @ self.w_n).pow(2).sum()
        return attribute + reconstruction_weight * reconstruction + orthogonality_weight * orthogonality

    def nonsensitive(self, x: Tensor) -> Tensor:
        return x @ self.w_n


def disentangle(
    x: Tensor, sens: Tensor, known: Tensor, seed: int, epochs: int = 300, lr: float = 0.01, sensitive_dim: int = 2
) -> tuple[Tensor, dict[str, float]]:
    """Train the disentangler on the known attributes (on :func:`~privgraph.device.current_device`);
    return ``Z_n`` (on the CPU) and diagnostics."""
    torch.manual_seed(seed)
    device = current_device()
    model = OrthogonalDisentangler(x.shape[1], sensitive_dim).to(device)
    x, sens, known = x.to(device), sens.to(device), known.to(device)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    for _ in range(epochs):
        opt.zero_grad()
        loss = model.loss(x, sens, known)
        loss.backward()
        opt.step()
    with torch.no_grad():
        z_n = model.nonsensitive(x)
        overlap = float((model.w_s.T @ model.w_n).abs().max())
    return z_n.cpu(), {"final_loss": float(loss.detach()), "max_orthogonality_residual": overlap}

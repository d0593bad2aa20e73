"""Work-in-progress probe for PPCVGAE (issue 5): how the KL weight and the Δν
penalty trade utility against attribute hiding in the encoder mean μ.

    PRIVGRAPH_DATA=../shared/datasets python benchmarks/ppcvgae_probe.py --dataset german

Trains VGAE and CVGAE (cases a, b) for 300 full-batch Adam epochs (torch and
Python's random seeded with 0) and
probes μ with logistic regressions: utility = test accuracy on y (50/30/20
split), attack = accuracy on s of the private nodes, trained on the public
nodes' s.  Not the paper's evaluation (GCN/MLP on (A, Z, s_Q)); a diagnostic.
"""

from __future__ import annotations

import argparse
import random

import torch
from sklearn.linear_model import LogisticRegression

from privgraph.data import load_sensitive
from privgraph.methods.ppcvgae.privacy import flip_candidate
from privgraph.nn.cvgae import CVGAE, VGAEBaseline


def probe(d, z) -> tuple[float, float]:
    z = z.detach().numpy()
    pub, s, y = ~d.private_mask.numpy(), d.sens.numpy(), d.y.numpy()
    attack = LogisticRegression(max_iter=2000).fit(z[pub], s[pub]).score(z[~pub], s[~pub])
    tr, te = d.train_mask.numpy(), d.test_mask.numpy()
    utility = LogisticRegression(max_iter=2000).fit(z[tr], y[tr]).score(z[te], y[te])
    return utility, attack


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="german")
    ap.add_argument("--epochs", type=int, default=300)
    ap.add_argument("--kl-weights", nargs="+", type=float, default=[-1, 0.01, 0.1, 1.0], help="-1: 1/N")
    ap.add_argument("--penalties", nargs="+", type=float, default=[0.0, 100.0])
    args = ap.parse_args()
    d = load_sensitive(args.dataset)
    candidate = flip_candidate(d.sens, d.private_mask)
    runs = [("VGAE", None, 0.0)] + [(c, k, w) for c in "ab" for k in args.kl_weights for w in args.penalties]
    print(f"| model | KL weight | penalty | utility acc | attack acc | (majority s on P: "
          f"{1 - float(d.sens[d.private_mask].float().mean()):.3f}) |")
    print("|---|---|---|---|---|---|")
    for case, k, w in runs:
        torch.manual_seed(0)
        random.seed(0)  # PyG's negative sampling draws from Python's random module
        m = VGAEBaseline(d.x.shape[1]) if case == "VGAE" else CVGAE(d.x.shape[1], case=case,
                                                                      kl_weight=None if k == -1 else k)
        opt = torch.optim.Adam(m.parameters(), lr=0.01)
        for _ in range(args.epochs):
            opt.zero_grad()
            loss, _ = m.loss(d.x, d.sens, d.edge_index, [candidate] if w else [], w)
            loss.backward()
            opt.step()
        mu, _ = m.encode(d.x, d.sens, d.edge_index)
        u, a = probe(d, mu)
        kl = "—" if k is None else ("1/N" if k == -1 else f"{k:g}")
        print(f"| {case} | {kl} | {w:g} | {u:.3f} | {a:.3f} | |", flush=True)


if __name__ == "__main__":
    main()

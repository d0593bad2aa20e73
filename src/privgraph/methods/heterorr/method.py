"""HeteroRR's methods for ``privgraph run``: feature level, edge level, both.

Release options (``options`` of :meth:`Method.release`, set by the command line):

* feature level — ``gamma`` (eq. 7, default 0.5), ``bins`` (k, default 2),
  ``public_fraction`` (share of the training nodes declared public for the
  SHAP importance model, default 0.1; ``data.public_node_mask`` wins when set),
  ``sensitive_features`` (indices; none: uniform sensitivity), ``debias``
  (server-side unbiased estimate of the binned values, default True; False
  trains on the raw reports u/k as the paper does);
* edge level — ``mcmc_share`` (ε₁/ε_e, default 0.5), ``mcmc_steps``
  (default 1000·n), ``threshold`` (τ of Alg. 3, default 0.02);
* ``epsilon_f`` / ``epsilon_e`` fix one budget of ``heterorr``; the swept ε
  fills the other (both, when neither is fixed).
"""

from __future__ import annotations

from typing import Any

import torch
from torch_geometric.data import Data

from privgraph.accounting import PrivacyGuarantee
from privgraph.data.annotations import sample_public_nodes
from privgraph.mechanisms import RandomSource, check_epsilon
from privgraph.mechanisms.feature_rr import FeatureRR
from privgraph.mechanisms.randomness import integers
from privgraph.methods.base import Hyperparameters, Method, Release
from privgraph.methods.heterorr.edges import edge_rand, edge_rr, lap_graph
from privgraph.methods.heterorr.scores import budget_shares, importance_scores, sensitivity_scores
from privgraph.methods.lpgnn import LPGNN


def feature_rr_release(data: Data, epsilon: float, rng: RandomSource,
                       options: dict[str, Any]) -> tuple[torch.Tensor, PrivacyGuarantee, dict[str, Any]]:
    """Algorithm 1 on every node: shares θ from public nodes, then the calibrated randomizer."""
    epsilon = check_epsilon(epsilon, "epsilon_f")
    seed = int(integers(2**31, (1,), rng)[0])
    public = getattr(data, "public_node_mask", None)
    if public is None:
        public = sample_public_nodes(data.train_mask, options.get("public_fraction") or 0.1, seed)
    public = torch.as_tensor(public, dtype=torch.bool)
    alpha = importance_scores(data.x[public], data.y[public], seed)
    beta, declared = sensitivity_scores(data.x[public], options.get("sensitive_features"))
    gamma = options.get("gamma")
    theta = budget_shares(alpha, beta, 0.5 if gamma is None else gamma)
    domain = tuple(getattr(data, "feature_domain", (0.0, 1.0)))
    debias = options.get("debias", True)
    mech = FeatureRR(epsilon, torch.from_numpy(theta), bins=options.get("bins") or 2, domain=domain,
                     clip=options.get("clip", False), debias=debias)
    x = mech.privatize(data.x, rng)
    g = mech.guarantee().with_note(
        f"importance α from a SHAP-explained logistic regression on {int(public.sum())} public nodes, whose "
        "features are not protected; the guarantee covers every other node")
    if not declared:
        g = g.with_note("no sensitive features declared: uniform sensitivity β_i = 1/d")
    details = {"mechanism": "featurerr", "bins": mech.k, "gamma": 0.5 if gamma is None else float(gamma),
               "public_nodes": int(public.sum()), "budget_max": float(mech.budgets.max()),
               "budget_min": float(mech.budgets.min()), "sensitivity_declared": declared, "debiased": debias}
    return x, g, details


class FeatureRRMethod(Method):
    name = "featurerr"
    description = "FeatureRR (HeteroRR): feature-LDP with per-feature budgets from SHAP importance and sensitivity"
    private = True

    def release(self, data: Data, epsilon: float | None, rng: RandomSource, hp: Hyperparameters,
                options: dict[str, Any]) -> Release:
        eps = self.check_epsilon_given(epsilon, self.name)
        x, g, details = feature_rr_release(data, eps, rng, options)
        return Release(x, g, details)


class FeatureLDP(LPGNN):
    """Any ``--mechanism`` (Duchi, Piecewise, Hybrid, Three-output, PM-SUB, multi-bit, …),
    its unbiased estimate fed to the GNN as it is — LPGNN's release without KProp:
    HeteroRR's feature baselines."""

    name = "featureldp"
    description = "GNN on features released by --mechanism (unbiased estimate, no KProp)"
    tunable = ("lr", "weight_decay", "dropout")

    def kprop_steps(self, hp: Hyperparameters) -> int:
        return 0


class _EdgeMethod(Method):
    private = True
    simple_graph = True
    all_private = False
    needs_private_edges = True

    def edges(self, data: Data, epsilon: float, rng: RandomSource, options: dict[str, Any]):
        raise NotImplementedError

    def release(self, data: Data, epsilon: float | None, rng: RandomSource, hp: Hyperparameters,
                options: dict[str, Any]) -> Release:
        eps = self.check_epsilon_given(epsilon, self.name)
        edge_index, g, details = self.edges(data, eps, rng, options)
        return Release(data.x.to(torch.float32), g, details, edge_index)


def _edge_rr_options(options: dict[str, Any]) -> dict[str, Any]:
    out = {k: options[k] for k in ("mcmc_share", "threshold") if options.get(k) is not None}
    if options.get("mcmc_steps") is not None:
        out["steps"] = int(options["mcmc_steps"])
    out["progress"] = options.get("progress")
    return out


class EdgeRRMethod(_EdgeMethod):
    name = "edgerr"
    description = "EdgeRR (HeteroRR): private pHRG MCMC for the private edges, public edges kept"

    def edges(self, data, epsilon, rng, options):
        return edge_rr(data, epsilon, rng, all_private=self.all_private, **_edge_rr_options(options))


class PrivHRG(EdgeRRMethod):
    name = "privhrg"
    description = "privHRG (Xiao et al. KDD'14): private HRG with every edge private"
    all_private = True
    needs_private_edges = False


class EdgeRand(_EdgeMethod):
    name = "edgerand"
    description = "EdgeRand (Wu et al. S&P'22): randomized response on the private-eligible pairs"

    def edges(self, data, epsilon, rng, options):
        return edge_rand(data, epsilon, rng)


class LapGraph(_EdgeMethod):
    name = "lapgraph"
    description = "LapGraph (Wu et al. S&P'22): Laplace on every private-eligible pair, top-T̃ kept"

    def edges(self, data, epsilon, rng, options):
        return lap_graph(data, epsilon, rng)


class HeteroRR(Method):
    name = "heterorr"
    description = "HeteroRR: FeatureRR features + EdgeRR graph (feature-LDP and private-edge DP)"
    private = True
    simple_graph = True
    needs_private_edges = True

    def release(self, data: Data, epsilon: float | None, rng: RandomSource, hp: Hyperparameters,
                options: dict[str, Any]) -> Release:
        eps_f = options.get("epsilon_f") or epsilon
        eps_e = options.get("epsilon_e") or epsilon
        eps_f = self.check_epsilon_given(eps_f, "heterorr (epsilon_f)")
        eps_e = self.check_epsilon_given(eps_e, "heterorr (epsilon_e)")
        x, g_f, d_f = feature_rr_release(data, eps_f, rng, options)
        edge_index, g_e, d_e = edge_rr(data, eps_e, rng, **_edge_rr_options(options))
        details = {"mechanism": "heterorr", "epsilon_f": eps_f, "epsilon_e": eps_e, "features": d_f, "edges": d_e}
        return Release(x, g_f, details, edge_index, extra_guarantees=[g_e])

"""Blink as a node-classification method: link-LDP reports → posterior → graph → GNN."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import ClassVar

from torch_geometric.data import Data

from privgraph.accounting import TrustModel, Unit
from privgraph.mechanisms import RandomSource
from privgraph.methods.base import (
    SPLIT_FIELDS,
    Method,
    MethodParams,
    Release,
    param,
    public_features,
    register_method,
)
from privgraph.methods.blink.client import LinkLDPReports, link_ldp
from privgraph.methods.blink.server import LOCAL, BlockRunner, beta_mle, clip_degrees, hard_graph, hybrid_graph
from privgraph.methods.blink.soft import soft_graph
from privgraph.progress import ProgressHook, Stages

VARIANTS = ("hard", "soft", "hybrid")
# a release's stages, as its progress shows them: Algorithm 1 on every node, Algorithm 2, the variant's graph (§4.2.3)
BLINK_STAGES = ("client: randomized response + Laplace degrees", "server: β-MLE", "server: the estimated graph")
SERVERS = ("local", "ray")
DEFAULT_DEGREE_SHARE = 0.1


@dataclass(frozen=True)
class BlinkParams(MethodParams):
    """Blink's settings: the graph-estimation variant (§4.2.3), the degree share s (degree_share) of Algorithm 1
    (ε_d = sε on the degree, ε_a = (1 − s)ε on the adjacency list, §4.1), and Blink-Soft's truncation
    on large graphs (an implementation limit, not in the paper: :mod:`~privgraph.methods.blink.soft`)."""

    renamed: ClassVar[dict[str, tuple[str, str]]] = {
        "delta": (
            "degree_share",
            "`delta` is now `degree_share` (the share of ε spent on the degree); DP's δ is 0 here: Blink is "
            "pure ε-link-LDP",
        )
    }

    variant: str = param("hard", "hard, soft or hybrid (§4.2.3)", choices=VARIANTS)
    degree_share: float | None = param(
        None,
        "share s of ε spent on the degree (default 0.1; chosen among "
        "{0.1, …, 0.9} on validation by privgraph run --tune when not given)",
        bound="in [0, 1]",
    )
    soft_exact_limit: int = param(20_000, "Soft: exact dense P up to this many nodes, truncated above", bound=">= 1")
    soft_min_probability: float = param(1e-3, "Soft: truncation τ of P above soft_exact_limit nodes", bound="in (0, 1)")
    server: str = param(
        "local",
        "where the server (β-MLE, posterior, graph) runs: local (this process) or ray (blocks of nodes as Ray "
        "tasks; the same graph, bit for bit)",
        choices=SERVERS,
    )
    workers: int | None = param(None, "server=ray: workers of a local Ray cluster (default: all CPUs)")
    address: str | None = param(
        None, "run the server on the Ray cluster at this address (`ray start --head` prints it; implies server=ray)"
    )

    def validate(self) -> None:
        super().validate()  # the variant among VARIANTS, the declared bounds
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
        if self.server == "local" and self.workers is not None and not self.address:
            raise ValueError("workers sizes the server's Ray cluster: give server=ray too")


@register_method
class Blink(Method):
    """Blink-Hard / Blink-Soft / Blink-Hybrid (§4.2.3): Algorithm 1 on every node, the
    β-model MLE and the posterior (Alg. 2–3) on the server.  Node features and labels are
    used as they are: Blink protects links only.

    Releases the server's estimated graph: Hard keeps the pairs with P_ij > 0.5, Soft weights every pair
    by P_ij (eq. 9), Hybrid keeps the top ‖P‖_{1,1} pairs weighted by P_ij.  Privacy unit: one node's
    adjacency list, ε-link-LDP in the local model (untrusted server; Theorem 4.1); the denoising is
    post-processing, so running the server on Ray (``server=ray``: blocks of nodes as tasks, the same graph
    bit for bit, :mod:`~privgraph.methods.blink.distributed`) leaves the guarantee unchanged."""

    trust_models = (TrustModel.LOCAL,)

    name = "blink"
    description = "Blink: link LDP (randomized response + Laplace degree), Bayesian denoising"
    unit = Unit.ADJACENCY_LIST
    Params = BlinkParams
    private = True
    simple_graph = True
    private_fields = ("edge_index",)
    public_fields = ("x", *SPLIT_FIELDS)
    needs_features = False  # x is public: copied as given, or absent
    release_search = {"degree_share": [0.1, 0.3, 0.5, 0.7, 0.9]}  # the paper's grid (Appendix B.2)

    @property
    def variant(self) -> str:
        return self.params.variant

    def release(
        self, data: Data, epsilon: float | None, rng: RandomSource, progress: ProgressHook | None = None
    ) -> Release:
        """The raw features with the estimated graph (edges and weights, or Soft's dense posterior operator)."""
        eps = self.check_epsilon_given(epsilon)
        p = self.params
        degree_share = DEFAULT_DEGREE_SHARE if p.degree_share is None else float(p.degree_share)
        stages = Stages(progress, f"blink-{self.variant} release", BLINK_STAGES)
        stages.start(BLINK_STAGES[0])
        reports = link_ldp(data.edge_index, data.num_nodes, eps, degree_share, rng)
        with self._runner() as runner:
            return self._serve(data, reports, degree_share, runner, stages)

    def _runner(self) -> AbstractContextManager[BlockRunner]:
        """Where the server runs (``server``): this process, or Ray tasks (started here, shut down after)."""
        p = self.params
        if p.server == "local" and not p.address:
            return nullcontext(LOCAL)
        from privgraph.methods.blink.distributed import RayRunner

        return RayRunner(p.workers, p.address)

    def _serve(
        self, data: Data, reports: LinkLDPReports, degree_share: float, runner: BlockRunner, stages: Stages
    ) -> Release:
        """Algorithms 2–3 on the reports and the variant's graph, in ``runner``'s blocks: post-processing of
        the reports, so the guarantee is theirs wherever it runs."""
        p = self.params
        stages.start(BLINK_STAGES[1])
        fit = beta_mle(
            clip_degrees(reports.noisy_degrees, data.num_nodes),
            tol=1e-6,
            runner=runner,
            on_iteration=lambda it, change: stages.start(BLINK_STAGES[1], f"iteration {it}, change {change:.1e}"),
        )
        stages.start(BLINK_STAGES[2], self.variant)
        details = {
            "mechanism": f"blink-{self.variant}",
            "variant": self.variant,
            "degree_share": degree_share,
            "mle_iterations": fit.iterations,
            "mle_converged": fit.converged,
        }
        adjacency = None
        if self.variant == "soft":
            soft = soft_graph(reports, fit.beta, p.soft_exact_limit, p.soft_min_probability, runner)
            adjacency, graph = soft.adjacency, soft.graph
            details.update(soft.details)
        elif self.variant == "hard":
            graph = hard_graph(reports, fit.beta, runner)
        else:
            graph = hybrid_graph(reports, fit.beta, runner=runner)
        stages.finish()
        if graph is not None:
            details.update(edges=int(graph.edge_index.shape[1]), visited_pairs=graph.visited_pairs)
        guarantee = reports.guarantee().with_note(
            "node features and labels are not protected (Blink's setting: only links are private)"
        )
        if graph is None:
            return Release(public_features(data), guarantee, details, adjacency=adjacency, reports=reports)
        return Release(public_features(data), guarantee, details, graph.edge_index, graph.edge_weight, reports=reports)

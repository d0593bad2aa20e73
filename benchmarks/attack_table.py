"""Attack success against ε beside utility against ε: link stealing and LinkTeller against the
link-private methods, membership inference against GCN and LPGNN.

    python benchmarks/attack_table.py run --datasets cora citeseer --epsilons 1 4 8 --trials 2
    python benchmarks/attack_table.py table

``run`` runs every (dataset, target, attack, ε) through the experiment pipeline (``privgraph
attack``: the target trained exactly as ``privgraph run`` trains it, the attack against it, both
in one trial record of the JSON-lines store ``--db``) and writes the summaries — mean and standard
deviation over the trials of the target's utility and of every attack metric — to
``--results`` (``benchmarks/results/attacks.json``, committed).  ``table`` reads that file and
the published figures (``src/privgraph/published/attacks.toml``) and writes the documentation page
``docs/benchmarks/attacks.md`` and its plots: nothing in the page is typed by hand.

Targets (the issue's grid): link attacks against the non-private GCN, the MLP (a model that never
saw the graph: the floor the features alone give), Blink Hard/Soft/Hybrid, RR, L-DpGCN, EdgeRand,
LapGraph, EdgeRR and HeteroRR (the private-edge methods with ``--private-ratio`` ρ: only the
private edges are secret, the public ones are known to the attacker); membership inference
against the non-private GCN, LPGNN (features private, graph public) and LPGNN with label LDP
(ε_y = ε).  Default hyperparameters, no tuning.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import tomllib

from privgraph.experiments import ExperimentSpec, ResultsStore, run_experiment

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "attacks.json"
PUBLISHED = ROOT / "src" / "privgraph" / "published" / "attacks.toml"
PAGE = ROOT / "docs" / "benchmarks" / "attacks.md"

# label -> (method, params, private ratio)
LINK_TARGETS: dict[str, tuple[str, dict, float | None]] = {
    "GCN (non-private)": ("gcn-raw", {}, None),
    "MLP (no graph)": ("mlp", {}, None),
    "Blink-Hard": ("blink", {"variant": "hard"}, None),
    "Blink-Soft": ("blink", {"variant": "soft"}, None),
    "Blink-Hybrid": ("blink", {"variant": "hybrid"}, None),
    "RR": ("rr", {}, None),
    "L-DpGCN": ("ldpgcn", {}, None),
    "GCN on public edges (private dropped)": ("gcn-public", {}, 0.2),
    "EdgeRand": ("edgerand", {}, 0.2),
    "LapGraph": ("lapgraph", {}, 0.2),
    "EdgeRR": ("edgerr", {}, 0.2),
    "HeteroRR": ("heterorr", {}, 0.2),
}
# label -> (method, label LDP)
MIA_TARGETS: dict[str, tuple[str, bool]] = {
    "GCN (non-private)": ("gcn-raw", False),
    "LPGNN": ("lpgnn", False),
    "LPGNN + label LDP (ε_y = ε)": ("lpgnn", True),
}
LINK_ATTACKS = ("link-stealing", "link-stealing-aux", "linkteller")
MIA_ATTACKS = ("membership-confidence", "membership-shadow")
SHOWN = {
    "link-stealing": ("attack_auc", "attack_precision"),
    "link-stealing-aux": ("attack_auc", "attack_precision"),
    "linkteller": ("attack_auc", "attack_precision"),
    "membership-confidence": ("attack_auc", "attack_advantage"),
    "membership-shadow": ("attack_auc", "attack_advantage"),
}


def _settings(args: argparse.Namespace) -> list[dict]:
    """Every (dataset, target, attack, ε) of the grid, as ExperimentSpec fields plus a label."""
    out = []
    for dataset in args.datasets:
        for attack in args.attacks:
            if attack in LINK_ATTACKS:
                for label, (method, params, ratio) in LINK_TARGETS.items():
                    if label not in args.targets or (attack == "linkteller" and method == "mlp"):
                        continue  # LinkTeller against a model without a graph is refused: chance by construction
                    private = method not in ("gcn-raw", "mlp", "gcn-public")
                    eps_list = args.edgerand_epsilons if method == "edgerand" else args.epsilons
                    for eps in eps_list if private else [None]:
                        out.append(
                            dict(
                                label=label,
                                dataset=dataset,
                                method=method,
                                params=params,
                                attack=attack,
                                epsilons=[] if eps is None else [eps],
                                private_ratio=ratio,
                            )
                        )
            else:
                for label, (method, label_ldp) in MIA_TARGETS.items():
                    if label not in args.targets:
                        continue
                    for eps in [None] if method == "gcn-raw" else args.epsilons:
                        out.append(
                            dict(
                                label=label,
                                dataset=dataset,
                                method=method,
                                params={},
                                attack=attack,
                                epsilons=[] if eps is None else [eps],
                                label_epsilon=eps if label_ldp else None,
                            )
                        )
    return out


def run(args: argparse.Namespace) -> None:
    store = ResultsStore(args.db)
    results = json.loads(Path(args.results).read_text()) if Path(args.results).exists() else []
    settings = _settings(args)
    for i, s in enumerate(settings, 1):
        label = s.pop("label")
        spec = ExperimentSpec(trials=args.trials, seed=args.seed, data_root=args.data_root, **s)
        start = time.perf_counter()
        try:
            result = run_experiment(spec, store)
        except (ValueError, RuntimeError, MemoryError) as err:  # recorded, not hidden
            print(f"[{i}/{len(settings)}] {label} {s['attack']} on {s['dataset']}: FAILED: {err}", file=sys.stderr)
            continue
        metrics = {
            m: {"mean": float(np.mean(v)), "std": float(np.std(v, ddof=1)) if len(v) > 1 else 0.0}
            for m in result.metrics
            for v in [[r.metrics[m] for r in result.records]]
        }
        row = {
            "dataset": result.records[0].dataset,
            "target": label,
            "method": s["method"],
            "params": s["params"],
            "attack": s["attack"],
            "epsilon": s["epsilons"][0] if s["epsilons"] else None,
            "label_epsilon": s.get("label_epsilon"),
            "private_ratio": s.get("private_ratio"),
            "trials": args.trials,
            "seed": args.seed,
            "metrics": metrics,
            "threat_model": result.attack["threat_model"],
            "seconds": round(time.perf_counter() - start, 1),
        }
        key = ("dataset", "target", "attack", "epsilon")
        results = [r for r in results if tuple(r[k] for k in key) != tuple(row[k] for k in key)] + [row]
        Path(args.results).parent.mkdir(parents=True, exist_ok=True)
        Path(args.results).write_text(json.dumps(results, indent=1) + "\n")  # after every setting: resumable
        shown = ", ".join(f"{m} {metrics[m]['mean']:.3f}" for m in (result.metrics[0], *SHOWN[s["attack"]]))
        print(
            f"[{i}/{len(settings)}] {label} {s['attack']} on {row['dataset']} ε={row['epsilon']}: {shown} "
            f"({row['seconds']}s)",
            flush=True,
        )


def _answers(text: str) -> str:
    return "release" if text.startswith("the graph the server holds") else "input graph"


def _cell(metrics: dict, name: str) -> str:
    m = metrics.get(name)
    return "" if m is None else f"{100 * m['mean']:.1f} ± {100 * m['std']:.1f}"


def _eps(e: float | None) -> str:
    return "—" if e is None else f"{e:g}"


def table(args: argparse.Namespace) -> None:
    rows = json.loads(Path(args.results).read_text())
    published = tomllib.loads(Path(args.published).read_text()) if Path(args.published).exists() else {}
    lines = [
        "# Attacks against the methods",
        "",
        "<!-- generated by `python benchmarks/attack_table.py table` from benchmarks/results/attacks.json "
        "and src/privgraph/published/attacks.toml: do not edit by hand -->",
        "",
        "Attack success against ε beside the target's utility against ε. Each row is one setting run by",
        "`privgraph attack` (the target trained exactly as `privgraph run` trains it); cells are mean ± std",
        "over the trials, in %. Utility is the target's test accuracy. The commands that produced the",
        "stored results are at the bottom of the page.",
        "",
    ]
    for attack in (*LINK_ATTACKS, *MIA_ATTACKS):
        subset = [r for r in rows if r["attack"] == attack]
        if not subset:
            continue
        threat = subset[0]["threat_model"]
        lines += [f"## {attack}", "", f"Threat model: queries {threat['queries']}; knows {threat['knowledge']}.", ""]
        shown = SHOWN[attack]
        for dataset in dict.fromkeys(r["dataset"] for r in subset):
            lines += [
                f"### {dataset}",
                "",
                "| target | ε | utility | " + " | ".join(m.replace("attack_", "") for m in shown) + " | answered by |",
                "|---" * (4 + len(shown)) + "|",
            ]
            order = list(LINK_TARGETS if attack in LINK_ATTACKS else MIA_TARGETS)
            for r in sorted(
                (r for r in subset if r["dataset"] == dataset),
                key=lambda r: (order.index(r["target"]) if r["target"] in order else 99, r["epsilon"] or 0),
            ):
                util = _cell(r["metrics"], "accuracy")
                lines.append(
                    f"| {r['target']} | {_eps(r['epsilon'])} | {util} | "
                    + " | ".join(_cell(r["metrics"], m) for m in shown)
                    + f" | {_answers(r['threat_model'].get('answers', ''))} |"
                )
            lines.append("")
            if args.plot:
                png = _plot(subset, dataset, attack, Path(args.out).parent)
                lines += [f"![{attack} on {dataset}]({png.name})", ""]
    lines += _findings(rows)
    lines += _published_section(published)
    lines += [
        "## Reproduce",
        "",
        "The stored results come from these commands (each row of the results file "
        "records its trials, seed and wall time):",
        "",
        "```bash",
        *COMMANDS,
        "```",
        "",
    ]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines))
    print(f"wrote {args.out}")


COMMANDS = (  # the runs behind benchmarks/results/attacks.json
    "PRIVGRAPH_DATA=../shared/datasets python benchmarks/attack_table.py run --datasets cora citeseer "
    "--attacks membership-confidence membership-shadow --epsilons 1 4 8 --trials 2",
    "PRIVGRAPH_DATA=../shared/datasets python benchmarks/attack_table.py run --datasets cora citeseer "
    "--attacks link-stealing linkteller --epsilons 1 4 8 --trials 2",
    "PRIVGRAPH_DATA=../shared/datasets python benchmarks/attack_table.py run --datasets facebook --attacks "
    "link-stealing linkteller membership-confidence --targets 'GCN (non-private)' 'MLP (no graph)' Blink-Hard "
    "Blink-Hybrid LPGNN --epsilons 1 8 --trials 1",
    "python benchmarks/attack_table.py table",
)
MARGIN = 0.02  # |ΔAUC| within which a target is called "at" a reference


PUBLIC_FLOOR = "GCN on public edges (private dropped)"


def _findings(rows: list[dict]) -> list[str]:
    """Sentences computed from the stored results: where each private target's attack AUC stands
    against its reference at its smallest and largest ε.  References: for the private-edge methods
    the GCN on the public edges alone (what the public part gives, ε_e = 0); for link stealing on
    the others the MLP (what the features alone give); else 0.5."""
    out = [
        "## What the numbers say",
        "",
        f'Computed from the stored results ("at" means within {MARGIN:.2f} AUC). Link stealing compares '
        "posteriors, and in these homophilous graphs linked nodes have similar features, so even a model "
        "that never saw the graph links them above chance: its reference is the MLP floor, not 0.5. "
        "LinkTeller reads influence through the graph that answers the queries, so its reference is 0.5. "
        "For the private-edge methods (EdgeRand, LapGraph, EdgeRR, HeteroRR; ρ = 0.2 of the edges "
        "private) the public edges answer the queries too, and the features and the public edges predict "
        "many private edges (shared neighbours, communities): their reference is the GCN on the public "
        "edges alone (`gcn-public`, the private edges dropped, ε_e = 0). That inference from the rest of "
        "the graph is not bounded by ε_e-DP, which bounds what one private edge changes in the release. "
        "A link-private method bounds what the *links* reveal; the features it leaves in clear are not "
        "covered. An AUC *below* its reference is information too (the attacker's rule points the wrong "
        "way, e.g. members less confident than non-members): read the distance from the reference, and the "
        "trials' spread in the tables.",
        "",
    ]
    for attack in (*LINK_ATTACKS, *MIA_ATTACKS):
        for dataset in dict.fromkeys(r["dataset"] for r in rows if r["attack"] == attack):
            sub = [r for r in rows if r["attack"] == attack and r["dataset"] == dataset]

            def auc_of(label: str) -> float | None:
                return next((r["metrics"]["attack_auc"]["mean"] for r in sub if r["target"] == label), None)

            mlp, public = auc_of("MLP (no graph)"), auc_of(PUBLIC_FLOOR)
            plain = auc_of("GCN (non-private)")
            head = (
                f"- **{attack}, {dataset}**: "
                + ", ".join(
                    f"{name} {v:.2f}"
                    for name, v in (("non-private GCN", plain), ("MLP floor", mlp), ("public-edges floor", public))
                    if v is not None
                )
                + ". "
            )
            parts = []
            for target in dict.fromkeys(r["target"] for r in sub if r["epsilon"] is not None):
                edge_level = any(r["target"] == target and r.get("private_ratio") for r in sub)
                if edge_level and public is not None:
                    ref, name = public, "the public-edges floor"
                elif attack.startswith("link-stealing") and mlp is not None:
                    ref, name = mlp, "the MLP floor"
                else:
                    ref, name = 0.5, "chance"
                pts = sorted(
                    (r["epsilon"], r["metrics"]["attack_auc"]["mean"])
                    for r in sub
                    if r["target"] == target and r["epsilon"] is not None
                )
                (e0, a0), (e1, a1) = pts[0], pts[-1]

                def where(a: float) -> str:
                    return (
                        f"at {name}"
                        if abs(a - ref) <= MARGIN
                        else (f"{a - ref:+.2f} above {name}" if a > ref else f"{ref - a:.2f} below {name}")
                    )

                parts.append(
                    f"{target} {a0:.2f} at ε={e0:g} ({where(a0)})"
                    + (f", {a1:.2f} at ε={e1:g} ({where(a1)})" if len(pts) > 1 else "")
                )
            out.append(head + "; ".join(parts) + ".")
    return out + [""]


def _md(text: object) -> str:
    """Free text from the TOML as Markdown text: brackets escaped (``I[i, j]`` is not a link)."""
    return str(text).replace("[", "\\[").replace("]", "\\]")


def _published_section(published: dict) -> list[str]:
    if not published:
        return []
    lines = [
        "## Published figures",
        "",
        "From the papers, for comparison; their datasets, splits and models differ from ours (each entry's "
        "note says how).",
        "",
    ]
    for key, entry in published.items():
        lines += [f"### {_md(entry.get('paper', key))}", ""]
        if entry.get("where"):
            lines.append(f"Source: {_md(entry['where'])}" + (f" (<{entry['url']}>)" if entry.get("url") else "") + ".")
        if entry.get("note"):
            lines.append(_md(entry["note"]))
        lines.append("")
        for name, value in entry.items():
            if isinstance(value, dict):
                lines += _flatten(name, value)
        lines.append("")
    return lines


def _flatten(prefix: str, table: dict) -> list[str]:
    out = []
    for k, v in table.items():
        if isinstance(v, dict):
            out += _flatten(f"{prefix} / {k}", v)
        else:
            out.append(f"- {_md(prefix)} / {_md(k)}: {_md(v)}")
    return out


def _plot(rows: list[dict], dataset: str, attack: str, folder: Path) -> Path:
    """Two panels: the attack's AUC against ε, the target's utility against ε (non-private targets as lines)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, metric, title in ((axes[0], "attack_auc", f"{attack} AUC"), (axes[1], "accuracy", "target utility")):
        for target in dict.fromkeys(r["target"] for r in rows if r["dataset"] == dataset):
            pts = sorted(
                (r["epsilon"], r["metrics"][metric]["mean"])
                for r in rows
                if r["dataset"] == dataset
                and r["target"] == target
                and r["epsilon"] is not None
                and metric in r["metrics"]
            )
            flat = [
                r["metrics"][metric]["mean"]
                for r in rows
                if r["dataset"] == dataset and r["target"] == target and r["epsilon"] is None and metric in r["metrics"]
            ]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=target)
            elif flat:
                ax.axhline(
                    flat[0],
                    linestyle="--",
                    label=target,
                    color={"MLP (no graph)": "grey", PUBLIC_FLOOR: "tab:cyan"}.get(target, "black"),
                )
        if metric == "attack_auc":
            ax.axhline(0.5, linestyle=":", color="red", label="chance")
        ax.set_xscale("log")
        eps = sorted({r["epsilon"] for r in rows if r["epsilon"] is not None})
        ax.set_xticks(eps, [f"{e:g}" for e in eps])
        ax.minorticks_off()
        ax.set_xlabel("ε")
        ax.set_title(f"{title} — {dataset}")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    path = folder / f"attacks_{attack}_{dataset.lower()}.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run the grid into the store and the results file")
    r.add_argument("--datasets", nargs="+", default=["cora", "citeseer", "facebook"])
    r.add_argument(
        "--attacks",
        nargs="+",
        default=["link-stealing", "linkteller", *MIA_ATTACKS],
        choices=[*LINK_ATTACKS, *MIA_ATTACKS],
    )
    r.add_argument("--targets", nargs="+", default=[*LINK_TARGETS, *MIA_TARGETS], help="target labels")
    r.add_argument("--epsilons", nargs="+", type=float, default=[1, 4, 8])
    r.add_argument(
        "--edgerand-epsilons",
        nargs="+",
        type=float,
        default=[4, 8],
        help="EdgeRand's ε (its graph has ~n²/(2(1+e^ε)) edges: small ε is slow)",
    )
    r.add_argument("--trials", type=int, default=2)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--data-root", default=None)
    r.add_argument("--db", default="benchmarks/out/attacks.jsonl")
    r.add_argument("--results", default=str(RESULTS))
    t = sub.add_parser("table", help="write the docs page from the stored results")
    t.add_argument("--results", default=str(RESULTS))
    t.add_argument("--published", default=str(PUBLISHED))
    t.add_argument("--out", default=str(PAGE))
    t.add_argument("--no-plot", dest="plot", action="store_false")
    args = ap.parse_args()
    if args.command == "run":
        run(args)
    else:
        table(args)


if __name__ == "__main__":
    main()

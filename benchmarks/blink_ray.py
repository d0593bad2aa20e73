"""Blink's server on Ray (β-MLE, Blink-Hard, Blink-Hybrid as blocks of nodes, Ray tasks) against the
single-process server, on the synthetic SBM graphs of ``benchmarks/blink_scale.py`` (average degree ≈ 10,
ε = 4, degree share 0.1).

    python benchmarks/blink_ray.py run --sizes 1000000 --workers 1 2 4
    python benchmarks/blink_ray.py run --sizes 1000000 --workers 4 --address HOST:6379   # a cluster
    python benchmarks/blink_ray.py table

``run`` measures each size in its own process: the client's reports once, then the single-process
server (numba on all this machine's cores) and, for each worker count, a Ray cluster of that many CPUs
(or the one at ``--address``) whose workers run one block each at a time on one thread.  Each stage
records wall seconds; CPU seconds of the driver, of the tasks (their workers' user + system time) and of
every process of the local Ray cluster (driver, workers, raylet, GCS: Ray's own cost included; psutil);
the driver's own peak RSS and each worker's peak RSS during the stage (Linux VmHWM, reset when a task
starts: it includes the worker's import of privgraph — torch, PyG, numba — and the object-store pages it
read).  Each stage's output is hashed: the table says whether Ray's equals the single process's.  Rows
merge into ``--results`` (``benchmarks/results/blink_ray.json``); ``table`` writes
``docs/benchmarks/blink_ray.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from blink_scale import _own_peak_mib, _reset_peak, _shown  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "blink_ray.json"
PAGE = ROOT / "docs" / "benchmarks" / "blink_ray.md"
SCALE_RESULTS = ROOT / "benchmarks" / "results" / "blink_scale.json"
SCALE_PAGE = ROOT / "docs" / "scale.md"
TARGET_EDGES = 10**9  # the extrapolation's graph: 10⁹ directed edges, average degree 10 (n = 10⁸)
STAGES = ("mle", "hard", "hybrid")


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _cluster_cpu() -> float:
    """CPU seconds of this process and every process under it (a local Ray cluster's raylet, GCS, workers)."""
    import psutil

    total = 0.0
    me = psutil.Process()
    for p in [me, *me.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system + t.children_user + t.children_system
        except psutil.Error:
            pass
    return total


def _digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        if a is not None:
            h.update(a.numpy().tobytes() if hasattr(a, "numpy") else a.tobytes())
    return h.hexdigest()[:16]


def _shmem_mib() -> float | None:
    """This process's resident shared memory now (RssShmem: on Ray, the object store's pages it has touched)."""
    try:
        line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith("RssShmem:"))
    except (OSError, StopIteration):
        return None
    return int(line.split()[1]) / 1024


def one(
    n: int,
    workers: list[int],
    eps: float,
    degree_share: float,
    address: str | None,
    local: bool,
    partial: Path | None = None,
) -> dict:
    import numpy as np
    import torch

    from privgraph.data.synthetic import sbm_edges
    from privgraph.mechanisms import make_generator
    from privgraph.methods.blink import beta_mle, clip_degrees, hard_graph, hybrid_graph, link_ldp
    from privgraph.methods.blink.server import LOCAL

    torch.set_num_threads(2)
    small = sbm_edges([15_000, 15_000], 0.0007, 0.0003, np.random.default_rng(1))
    r0 = link_ldp(small, 30_000, eps, degree_share, make_generator(0))

    def warm(runner) -> None:  # compile or load the kernels (readonly arrays on Ray: their own signatures)
        b0 = beta_mle(clip_degrees(r0.noisy_degrees, 30_000), tol=1e-6, runner=runner).beta
        hard_graph(r0, b0, runner), hybrid_graph(r0, b0, runner=runner)

    warm(LOCAL)
    blocks = 10
    edges = sbm_edges(
        [n // blocks] * blocks, 10 * 0.7 / (n / blocks), 10 * 0.3 / (n * (1 - 1 / blocks)), np.random.default_rng(0)
    )
    reports = link_ldp(edges, n, eps, degree_share, make_generator(0))
    out: dict = {"n": n, "edges": int(edges.shape[1]), "epsilon": eps, "degree_share": degree_share, "runs": []}
    del edges
    reports.csr(), reports.is_symmetric()  # the server's view of the reports, made once

    def serve(runner, label: str, count: int | None) -> dict:
        run: dict = {"server": label, "workers": count}
        stats = getattr(runner, "stats", None)

        def stage(name: str, fn):
            _reset_peak()
            if stats is not None:
                stats.clear()
            wall, cpu, all_cpu = time.perf_counter(), _cpu(), _cluster_cpu()
            value = fn()
            row = {
                "wall_s": time.perf_counter() - wall,
                "driver_cpu_s": _cpu() - cpu,
                "all_cpu_s": _cluster_cpu() - all_cpu,
                "driver_peak_rss_mib": _own_peak_mib(),
                "driver_shmem_mib": _shmem_mib(),
            }
            if stats is not None:
                peaks: dict[float, float] = {}
                for s in stats:
                    peaks[s["pid"]] = max(peaks.get(s["pid"], 0.0), s["peak_rss_mib"])
                row.update(
                    tasks=len(stats),
                    task_cpu_s=sum(s["cpu_s"] for s in stats),
                    task_wall_s=sum(s["wall_s"] for s in stats),
                    worker_peak_rss_mib=sorted(peaks.values(), reverse=True),
                )
            run[name] = row
            return value

        fit = stage("mle", lambda: beta_mle(clip_degrees(reports.noisy_degrees, n), tol=1e-6, runner=runner))
        run["mle"].update(iterations=fit.iterations, digest=_digest(fit.beta))
        hard = stage("hard", lambda: hard_graph(reports, fit.beta, runner))
        run["hard"].update(edges=int(hard.edge_index.shape[1]), digest=_digest(hard.edge_index))
        del hard
        hybrid = stage("hybrid", lambda: hybrid_graph(reports, fit.beta, runner=runner))
        run["hybrid"].update(
            edges=int(hybrid.edge_index.shape[1]),
            visited_pairs=hybrid.visited_pairs,
            digest=_digest(hybrid.edge_index, hybrid.edge_weight),
        )
        run["total_wall_s"] = sum(run[s]["wall_s"] for s in STAGES)
        run["total_all_cpu_s"] = sum(run[s]["all_cpu_s"] for s in STAGES)
        print(json.dumps(run), file=sys.stderr, flush=True)
        return run

    def keep(run: dict) -> None:  # each run as it ends: a run stopped later keeps what finished
        out["runs"].append(run)
        if partial is not None:
            partial.write_text(json.dumps(out))

    if local:
        keep(serve(LOCAL, "local", None))
    from privgraph.methods.blink.distributed import RayRunner
    from privgraph.methods.blink.shards import SHARD_BYTES

    store = 2 * (40 * n + 16 * out["edges"]) + 4 * max(workers) * SHARD_BYTES + 2**28  # shared arrays, shards in flight
    for count in workers:
        start = time.perf_counter()
        with RayRunner(count, address, object_store_bytes=store) as runner:
            warm(runner)
            warm(runner)  # the second time on every worker, most likely
            started = time.perf_counter() - start
            run = serve(runner, "ray", count)
            run["start_and_warm_s"] = started
            keep(run)
    return out


def run(args: argparse.Namespace) -> None:
    results = Path(args.results)
    results.parent.mkdir(parents=True, exist_ok=True)
    for n in args.sizes:
        load = os.getloadavg()
        cmd = [sys.executable, __file__, "--child", str(n), "--workers", *map(str, args.workers)]
        cmd += ["--epsilon", str(args.epsilon), "--degree-share", str(args.degree_share)]
        cmd += ["--address", args.address] if args.address else []
        cmd += [] if args.local else ["--no-local"]
        partial = results.with_name(f"{results.stem}.{n}.partial.json")
        partial.unlink(missing_ok=True)
        cmd += ["--partial", str(partial)]
        res = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        if res.returncode:
            if not partial.exists():
                sys.exit(f"n = {n} failed")
            row = json.loads(partial.read_text())  # the runs that finished before it stopped
            row["incomplete"] = True
            print(f"n = {n} stopped (exit {res.returncode}): keeping {len(row['runs'])} finished run(s)", flush=True)
        else:
            row = json.loads(res.stdout.strip().splitlines()[-1])
        partial.unlink(missing_ok=True)
        row["load_before"], row["load_after"] = load[0], os.getloadavg()[0]
        row["measured"] = time.strftime("%Y-%m-%d")
        row["address"] = args.address
        row["command"] = (
            f"python benchmarks/blink_ray.py run --sizes {n} --workers {' '.join(map(str, args.workers))}"
            + (f" --address {args.address}" if args.address else "")
            + ("" if args.local else " --no-local")
            + ("" if results.resolve() == RESULTS else f" --results {_shown(results)}")
        )
        # read again just before merging: another size's run may have written meanwhile
        rows = {r["n"]: r for r in json.loads(results.read_text())["rows"]} if results.exists() else {}
        rows[n] = row
        results.write_text(
            json.dumps(
                {
                    "commands": [rows[k]["command"] for k in sorted(rows)],
                    "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared)",
                    "rows": [rows[k] for k in sorted(rows)],
                },
                indent=1,
            )
            + "\n"
        )
        print(f"n = {n}: merged into {results}", flush=True)


def table() -> str:
    data = json.loads(RESULTS.read_text())
    lines = [
        "# Blink's server on Ray",
        "",
        "<!-- generated by `python benchmarks/blink_ray.py table` from benchmarks/results/blink_ray.json -->",
        "",
        "Blink's server — β-MLE (Algorithm 2), Blink-Hard, Blink-Hybrid — in one process and as blocks of",
        "nodes on a local Ray cluster of 1, 2 and 4 workers (one CPU and one numba thread each), on the",
        "synthetic SBM graphs of [Blink at scale](blink_scale.md) (average degree ≈ 10, ε = 4), on",
        f"{data['machine']}. Measured by",
        "",
        "```bash",
        *data["commands"],
        "python benchmarks/blink_ray.py table",
        "```",
        "",
        "*CPU, all* is the CPU time of every process of the run (driver, Ray workers, raylet, GCS: psutil",
        "over the driver's process tree), *CPU, tasks* the workers' time inside the blocks, *worker peak* each",
        "worker's largest resident memory during the stage (VmHWM, reset when a task starts: it includes the",
        "worker's import of privgraph — torch, PyG, numba — and the object-store pages it read; the largest",
        "worker first). The machine is shared (load average listed): wall time on 2 cores with 4 workers",
        "measures contention, not speed-up; the CPU seconds and memory are what carry over to a cluster.",
        "*Same output* compares each stage's output (β, Hard's edges, Hybrid's edges and weights) with the",
        "single-process server's, by hash. *Driver store MiB*: the object store's pages the driver has mapped",
        "at the end of the stage (RssShmem: the shared arrays and rows it put, the results it read; part of",
        "its peak).",
        "",
        "On a cluster: start Ray there (`ray start --head` on one machine prints its address, `HEAD:6379` by",
        "default; `ray start --address HEAD:6379` on the others), then measure with `--address HOST:PORT`",
        "(and `--no-local` where the driver's machine should not run the single-process server):",
        "`python benchmarks/blink_ray.py run --sizes 10000000 --workers 64 --address HEAD:6379 --no-local`.",
        "",
    ]
    for r in data["rows"]:
        runs = r["runs"]
        base = next((x for x in runs if x["server"] == "local"), None)
        lines += [
            f"## n = {r['n']:,} ({r['edges']:,} directed edges; load {r['load_before']:.1f} → {r['load_after']:.1f})",
            "",
            "| server | stage | wall s | CPU, all s | CPU, tasks s | tasks | driver peak MiB | driver store MiB "
            "| worker peak MiB | same output |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for x in runs:
            who = "one process" if x["server"] == "local" else f"Ray, {x['workers']} worker(s)"
            for s in STAGES:
                st = x[s]
                same = "—" if base is None or x is base else ("yes" if st["digest"] == base[s]["digest"] else "**no**")
                peaks = st.get("worker_peak_rss_mib")
                tasks = f"{st['task_cpu_s']:.1f} | {st['tasks']}" if "tasks" in st else "— | —"
                workers = " / ".join(f"{p:,.0f}" for p in peaks) if peaks else "—"
                shm = st.get("driver_shmem_mib") if x["server"] == "ray" else None
                store = "—" if shm is None else f"{shm:,.0f}"
                lines.append(
                    f"| {who} | {s} | {st['wall_s']:.1f} | {st['all_cpu_s']:.1f} | {tasks} | "
                    f"{st['driver_peak_rss_mib']:,.0f} | {store} | {workers} | {same} |"
                )
            lines.append(f"| {who} | **total** | {x['total_wall_s']:.1f} | {x['total_all_cpu_s']:.1f} | | | | | | |")
        hybrid = runs[0]["hybrid"]
        if r.get("incomplete"):
            lines += ["", "Stopped before every run of the command had finished: the runs above are those that did."]
        lines += [
            "",
            f"Hybrid kept {hybrid['edges']:,} directed edges after visiting {hybrid['visited_pairs']:,} candidate"
            f" pairs; the β-MLE took {runs[0]['mle']['iterations']} iterations.",
        ]
        starts = [f"{x['workers']}: {x['start_and_warm_s']:.0f} s" for x in runs if "start_and_warm_s" in x]
        if starts:
            lines.append(
                "Starting each Ray cluster and warming its workers (importing privgraph, loading the compiled "
                "kernels), not in the table: " + ", ".join(starts) + " (by worker count)."
            )
        lines.append("")
    return "\n".join(lines)


def _fit_line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares (intercept, slope) of y on x."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - slope * mx, slope


def scale_page() -> str:
    """docs/scale.md: the cost model from blink_scale.json (one process, 10⁵–10⁷ nodes) and blink_ray.json
    (Ray, 1–4 workers), and what 10⁹ edges would need — extrapolated, and said so."""
    single = json.loads(SCALE_RESULTS.read_text())
    rows = [r for r in single["rows"] if all(s in r for s in ("client", "mle", "hard", "hybrid"))]
    ray = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"rows": []}
    lines = [
        "# Past one machine: Blink's server on Ray, and what it costs",
        "",
        "<!-- generated by `python benchmarks/blink_ray.py scale` from benchmarks/results/blink_scale.json and",
        "benchmarks/results/blink_ray.json -->",
        "",
        "Blink's server (β-MLE, posterior, Blink-Hard, Blink-Hybrid, truncated Blink-Soft) runs in one process",
        "by default. With `--param server=ray` (and `--param workers=N`), or `privgraph release blink --address",
        "HOST:PORT` on a cluster started by `ray start --head`, it runs as blocks of nodes on Ray tasks",
        "(`privgraph.methods.blink.distributed`):",
        "",
        "* **β-MLE** (Algorithm 2): each iteration maps the sums E_i(β) = Σ_{j≠i} σ(β_i + β_j) over blocks of",
        "  nodes (exact up to 20,000 nodes, else interpolated from a binned table built once per iteration on",
        "  the driver); the Anderson step runs on the driver.",
        "* **Hard, Hybrid, truncated Soft, ‖P‖**: for each pass the nodes sorted by β are cut into blocks of",
        "  about equal pairs in the pass's window of β-sums; the driver draws each block's reported bits and",
        "  submits its task, at most 2 per worker in flight. Each block returns its passing pairs chunk by",
        "  chunk; the driver fetches each block as its task ends, copies its pairs to their places in one",
        "  output (the order of one pass) and releases it, chooses Hybrid's threshold and top-k, and adds the",
        "  per-row sums of ‖P‖ in row order. The exact ‖P‖ (n ≤ 20,000) maps over blocks of rows.",
        "",
        "What each task receives (Blink's trust model is an untrusted server: ε-link-LDP per node). The driver",
        "plays the clients: the true edges and the nodes' secret PRF keys never leave it. A task gets only",
        "the clients' reports and public parameters:",
        "",
        "* the β-MLE's tasks: β (a function of the noisy degrees), its rows' range, the binned table;",
        "* a pass over pairs: its block's report shard (`privgraph.methods.blink.shards.ReportShard`: for",
        "  each sorted row, its partner range and the two reported bits Ã_ij, Ã_ji of each pair in the",
        "  pass's window, 2 bits per pair, at most 64 MiB a shard), the sorted-β order and sorted β (shared",
        "  once), the pass's thresholds and ε_a;",
        "* the exact ‖P‖: every node's whole report Ã_i· (n²/8 bytes, ≤ 50 MB at 20,000 nodes), β and ε_a.",
        "",
        "`tests/methods/blink/test_blink_ray_server.py` captures every object put in the store and every task",
        "argument and finds no key and no true-edge CSR in them. The cost: the pairs' PRF draws (in a",
        "deployment, each node's own work) run on the driver, and the tasks only threshold the bits. A task",
        "whose worker is lost is run again (up to 3 times; the same result, the tasks are deterministic); one",
        "that still fails stops the release with one line naming the node and what to do.",
        "",
        "The output equals the single-process server's bit for bit — β, Hard's edges, Hybrid's edges and",
        "weights, Soft's graph and its stated dropped mass — for any cut",
        "(`tests/methods/blink/test_blink_ray_server.py`:",
        "2 Ray workers and 7 blocks in one process against one block). The server draws no randomness (the",
        "noise is the client's), and every sum is reduced in an order that does not depend on the cut.",
        "Privacy is unchanged: the server is post-processing of the nodes' ε-link-LDP reports (Theorem 4.1),",
        "wherever it runs.",
        "",
        "## Measured costs, one process",
        "",
        f"From [Blink at scale](benchmarks/blink_scale.md) (`{single['command']}`, {single['machine']};",
        "SBM graphs of average degree ≈ 10, ε = 4; measured at an earlier commit — the next section measures",
        "the current server, whose Hybrid costs less per pair). Per directed edge of the input: the client",
        "(Algorithm 1)",
        "and Hard (at these sizes Hard keeps almost nothing, so its time is the server's view of the reports:",
        "sorting β and the edges into sorted-β rows); per visited candidate pair: Hybrid.",
        "",
        "| n | directed edges | client µs/edge | Hard µs/edge | β-MLE s (iterations) | Hybrid pairs visited / node "
        "| Hybrid ns/pair | Hybrid pairs visited / kept edge | peak RSS B/edge | load |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        e, n, h = r["edges"], r["n"], r["hybrid"]
        peak = max(r[s]["peak_rss_mib"] for s in ("client", "mle", "hard", "hybrid")) * 2**20
        lines.append(
            f"| {n:,} | {e:,} | {r['client']['cpu_s'] / e * 1e6:.2f} | {r['hard']['cpu_s'] / e * 1e6:.2f} | "
            f"{r['mle']['cpu_s']:.1f} ({r['mle']['iterations']}) | {h['visited_pairs'] / n:,.0f} | "
            f"{h['cpu_s'] / h['visited_pairs'] * 1e9:.1f} | {h['visited_pairs'] / h['edges']:,.0f} | "
            f"{peak / e:,.0f} | {r['load_before']:.1f} → {r['load_after']:.1f} |"
        )
    big = [r for r in rows if r["n"] >= 1_000_000] or rows
    mem0, mem_edge = _fit_line(
        [r["edges"] for r in big],
        [max(r[s]["peak_rss_mib"] for s in ("client", "mle", "hard", "hybrid")) * 2**20 for r in big],
    )
    last = rows[-1]
    n_last = last["n"]
    pairs_node = last["hybrid"]["visited_pairs"] / n_last
    lines += [
        "",
        "The model: **time ≈ a·E + b·V**, E the directed edges, V the candidate pairs Hybrid visits, and",
        f"V ≈ {pairs_node:,.0f}·n at average degree 10 and ε = 4 (V/n grows slowly with n: the band of β-sums",
        "that can pass widens with the spread of β, which the noisy degrees set); Hybrid's pairs are",
        f"{last['hybrid']['cpu_s'] / (last['total_cpu_s']):.0%} of the CPU time at n = {n_last:,}.",
        f"Memory in one process ≈ {mem0 / 2**30:.2f} GiB + {mem_edge:.0f} B per directed edge (least squares on",
        "the peak RSS at n ≥ 10⁶: the input graph, the reports — keys, edge keys, CSR — the sorted-β rows, and",
        "Hybrid's candidate pairs and output).",
        "",
    ]
    lines += ["## Measured on Ray", ""]
    ray_rows = ray["rows"]
    if ray_rows:
        lines += [
            "Measured before the tasks were restricted to the reports (CHANGELOG): then every task read the",
            "nodes' keys and the true edges and drew its pairs' bits itself, spread over the workers. Now the",
            "driver draws them (Hybrid's PRF draws, most of its CPU, no longer divide by the workers) and each",
            "shard holds 2 bits per visited pair (≈ 22 GB over Hybrid's rounds at n = 10⁷, at most 64 MiB a",
            "shard and 2 per worker at once). The tables and the extrapolation below are those of the earlier",
            "design until `python benchmarks/blink_ray.py run` measures them again.",
            "",
        ]
    if not ray_rows:
        lines += ["Not measured yet: `python benchmarks/blink_ray.py run` fills this section.", ""]
    for r in ray_rows:
        runs = r["runs"]
        base = next((x for x in runs if x["server"] == "local"), None)
        lines += [
            f"n = {r['n']:,} ({r['edges']:,} directed edges), `{r['command']}`, load {r['load_before']:.1f} → "
            f"{r['load_after']:.1f} ({ray['machine']}; the full table: "
            "[Blink's server on Ray](benchmarks/blink_ray.md)):",
            "",
            "| server | CPU, all processes s | of which the driver s | wall s | Hybrid CPU / one process "
            "| driver peak MiB | worker peak MiB (largest) | same output |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for x in runs:
            who = "one process" if x["server"] == "local" else f"Ray, {x['workers']} worker(s)"
            driver = sum(x[s]["driver_cpu_s"] for s in STAGES)
            ratio = "1" if x is base else "—"
            if base is not None and x is not base:
                ratio = f"{x['hybrid']['all_cpu_s'] / base['hybrid']['all_cpu_s']:.2f}"
            dpeak = max(x[s]["driver_peak_rss_mib"] for s in STAGES)
            wpeaks = [p for s in STAGES for p in x[s].get("worker_peak_rss_mib", [])]
            same = (
                "—"
                if base is None or x is base
                else ("yes" if all(x[s]["digest"] == base[s]["digest"] for s in STAGES) else "**no**")
            )
            worker = f"{max(wpeaks):,.0f}" if wpeaks else "—"
            lines.append(
                f"| {who} | {x['total_all_cpu_s']:.1f} | {driver:.1f} | {x['total_wall_s']:.1f} | {ratio} | "
                f"{dpeak:,.0f} | {worker} | {same} |"
            )
        lines.append("")
    if ray_rows and max(r["n"] for r in ray_rows) < 10_000_000:
        lines += [
            "n = 10⁷ was not measured on Ray here: on this machine (2 cores and 24 GiB shared with other jobs)",
            "the driver alone needs about what one process needs there (8.4 GiB,",
            "[Blink at scale](benchmarks/blink_scale.md)), and each run would take most of an hour of wall time.",
            "",
        ]
    lines += _extrapolation(rows, ray_rows)
    lines += [
        "## Training past one machine",
        "",
        "The server releases the graph; the model is trained on it. The out-of-core pipelines",
        "(`privgraph.methods.outofcore`: node tables in files, aggregation over row blocks of the CSR, mini-batch",
        "training) release and train GAP-EDP, LPGNN and Blink-Hard at 10⁷ nodes and 10⁸ edges on one machine:",
        "[Out-of-core node classification at scale](benchmarks/outofcore_scale.md) (time, peak memory, disk), and",
        "[their accuracy against the full-batch path](benchmarks/outofcore_accuracy.md). Past one machine the",
        "classifier trains data-parallel over `torch.distributed` (`privgraph.train.distributed.train_ddp`:",
        "each process reads its partition of the training rows from the tables and DDP averages the gradients",
        "before every step; the pipelines' `processes` > 1), tested in `tests/train/test_ddp_training.py` (two",
        "processes take the full-batch steps of one; GAP-EDP's classifier learns on two). Training reads only",
        "what the release published, so neither the server's blocks nor the training's processes change the",
        "guarantee.",
        "",
    ]
    lines += [
        "## How to run on a cluster",
        "",
        "Start Ray on every machine — `ray start --head` on one (it prints the address, `HEAD:6379` by default),",
        "`ray start --address HEAD:6379` on the others — and pass that address with `--address HOST:PORT`",
        "(Blink's `address` parameter; it implies `server=ray`); `ray status --address HEAD:6379` lists the",
        "CPUs the server will cut its blocks for, `ray stop` ends Ray on a machine. Without `--address` the",
        "server starts a local cluster of `--param workers=N` CPUs and shuts it down after the release.",
        "",
        "```bash",
        "ray start --head                      # on the head machine; `ray start --address HEAD:6379` on the others",
        "privgraph release blink --dataset DATASET --epsilon 4 --param variant=hybrid --address HEAD:6379 -o g.pt",
        "python benchmarks/blink_ray.py run --sizes 10000000 --workers 64 --address HEAD:6379 --no-local",
        "```",
        "",
        "Every machine needs privgraph installed (the workers import it), and the driver's machine the memory",
        "above.",
        "",
    ]
    return "\n".join(lines)


def _extrapolation(rows: list[dict], ray_rows: list[dict]) -> list[str]:
    """The section on 10⁹ directed edges: the client's cost per edge (blink_scale.json, its largest n); the
    server's costs — β-MLE per node, Hard per edge, Hybrid per visited pair, memory per edge — from the
    current server in one process at the largest n measured beside Ray (blink_ray.json; blink_scale.json's
    where none); Ray's overhead, the driver's serial CPU and the driver's and workers' peaks from the Ray
    runs at the largest n.  Extrapolated, and said so."""
    last = rows[-1]
    n_t = TARGET_EDGES // 10
    cpu_client = last["client"]["cpu_s"] / last["edges"] * TARGET_EDGES
    with_local = [r for r in ray_rows if any(x["server"] == "local" for x in r["runs"])]
    if with_local:
        ref = max(with_local, key=lambda r: r["n"])
        one = next(x for x in ref["runs"] if x["server"] == "local")
        src_n, src_e, cpu = ref["n"], ref["edges"], {s: one[s]["all_cpu_s"] for s in STAGES}
        visited = one["hybrid"]["visited_pairs"]
        mem_pts = [
            (r["edges"], max(x[s]["driver_peak_rss_mib"] for s in STAGES) * 2**20)
            for r in with_local
            if r["n"] >= 1_000_000
            for x in r["runs"]
            if x["server"] == "local"
        ]
        source = f"the current server in one process at n = {src_n:,} (`{ref['command']}`)"
    else:
        src_n, src_e, cpu = last["n"], last["edges"], {s: last[s]["cpu_s"] for s in STAGES}
        visited = last["hybrid"]["visited_pairs"]
        mem_pts = [
            (r["edges"], max(r[s]["peak_rss_mib"] for s in ("client", *STAGES)) * 2**20)
            for r in rows
            if r["n"] >= 1_000_000
        ]
        source = f"one process at n = {src_n:,} ([Blink at scale](benchmarks/blink_scale.md))"
    if len(mem_pts) > 1:
        mem0, mem_edge = _fit_line(*zip(*mem_pts))
        mem_how = "a line through the peaks of the server in one process at n ≥ 10⁶"
    else:
        mem0, mem_edge = 0.0, mem_pts[0][1] / mem_pts[0][0]
        mem_how = f"its peak per edge at n = {src_n:,}, the import included"
    mem_one = mem0 + mem_edge * TARGET_EDGES
    ns_pair = cpu["hybrid"] / visited
    pairs_t = visited / src_n * n_t
    cpu_mle = cpu["mle"] * n_t / src_n  # O(n) per iteration (the binned sums), iterations flat
    cpu_hard = cpu["hard"] / src_e * TARGET_EDGES
    cpu_hybrid = ns_pair * pairs_t
    total = cpu_client + cpu_hard + cpu_mle + cpu_hybrid
    lines = [
        "## What 10⁹ directed edges would need (extrapolated, not measured)",
        "",
        "A graph like these with 10⁹ directed edges has n = 10⁸ nodes. The client's cost per edge from",
        f"[Blink at scale](benchmarks/blink_scale.md) at n = {last['n']:,}; the server's from {source}:",
        f"the β-MLE per node, Hard per edge, Hybrid {ns_pair * 1e9:.1f} ns per visited pair and",
        f"{visited / src_n:,.0f} pairs per node. A projection: the machine that measured them was shared, and",
        "V/n may keep growing slowly.",
        "",
        "| | one process | per Ray worker |",
        "|---|---|---|",
        f"| client (Algorithm 1; on the nodes themselves in deployment) | {cpu_client:,.0f} CPU s | — |",
        f"| β-MLE | {cpu_mle:,.0f} CPU s (O(n) per iteration, mostly on the driver) | — |",
        f"| Hard (sorted-β rows of the edges) | {cpu_hard:,.0f} CPU s | — |",
        f"| Hybrid: {pairs_t:.1e} candidate pairs × {ns_pair * 1e9:.1f} ns | {cpu_hybrid:,.0f} CPU s | "
        f"{cpu_hybrid:,.0f} CPU s ÷ workers |",
        f"| total | {total:,.0f} CPU s ≈ {total / 3600:.1f} CPU hours | |",
        f"| memory | ≈ {mem_one / 2**30:,.0f} GiB in one process | see below |",
        "",
        f"Memory in one process: ≈ {mem0 / 2**30:.2f} GiB + {mem_edge:.0f} B per directed edge ({mem_how}).",
        "",
    ]
    ray_big = [r for r in ray_rows if any(x["server"] == "ray" for x in r["runs"])]
    if not ray_big:
        return lines
    big = max(ray_big, key=lambda r: r["n"])
    base = next((x for x in big["runs"] if x["server"] == "local"), None)
    rays = [x for x in big["runs"] if x["server"] == "ray"]
    if base is not None:
        overhead = max(x["hybrid"]["all_cpu_s"] / base["hybrid"]["all_cpu_s"] for x in rays)
        overhead_n = big["n"]
    else:  # no single-process run beside Ray at that size: the largest overhead measured at any size
        ratios = [
            (x["hybrid"]["all_cpu_s"] / b["hybrid"]["all_cpu_s"], r["n"])
            for r in ray_rows
            for b in r["runs"]
            if b["server"] == "local"
            for x in r["runs"]
            if x["server"] == "ray"
        ]
        overhead, overhead_n = max(ratios) if ratios else (1.0, 0)
    most = max(rays, key=lambda x: x["workers"])
    driver_cpu = sum(most[s]["driver_cpu_s"] for s in STAGES)
    serial = driver_cpu / most["total_all_cpu_s"]
    serial_t = driver_cpu / big["edges"] * TARGET_EDGES
    peaks = [p for x in rays for s in STAGES for p in x[s].get("worker_peak_rss_mib", [])]
    baseline = min(peaks)
    worker_t = baseline * 2**20 + 24 * n_t + (16 * TARGET_EDGES + 60 * 0.625 * TARGET_EDGES) / 64
    driver_peak = {x["workers"]: max(x[s]["driver_peak_rss_mib"] for s in STAGES) for x in rays}
    driver_edge = max(driver_peak.values()) * 2**20 / big["edges"]
    shmem = max((x[s].get("driver_shmem_mib") or 0.0) for x in rays for s in STAGES)
    own_edge = (max(driver_peak.values()) - shmem) * 2**20 / big["edges"]  # less the store's pages
    largest = {x["workers"]: max(x["hybrid"].get("worker_peak_rss_mib", [0.0])) for x in rays}
    lines += [
        f"On Ray the CPU seconds are those of one process times the overhead measured at n = {overhead_n:,}",
        f"(at most {overhead:.2f}× for Hybrid, counting every Ray process), spread over the workers, plus the",
        "driver's serial part (the β-MLE's binned table and Anderson step, the sorted-β rows, Hybrid's",
        f"threshold search and top-k): {serial:.0%} of all the CPU seconds of the Ray run with "
        f"{most['workers']} workers at n = {big['n']:,}. Per directed edge that serial part extrapolates to",
        f"≈ {serial_t:,.0f} s at 10⁹ edges, so with W workers the server would take about {serial_t:,.0f} + "
        f"{cpu_hybrid * overhead:,.0f} / W seconds: ≈ {(serial_t + cpu_hybrid * overhead / 16) / 60:,.0f} min "
        f"on 16 workers, ≈ {(serial_t + cpu_hybrid * overhead / 64) / 60:,.0f} min on 64 (extrapolated).",
        "",
        "Per worker: the import of privgraph (torch, PyG, numba: the smallest worker peak measured,",
        f"{baseline:,.0f} MiB), the three shared arrays of n entries (24 B per node: "
        f"{24 * n_t / 2**30:.1f} GiB at n = 10⁸), its block's rows of the edges (16 B per directed edge",
        "÷ blocks) and its block's passing pairs (about 60 B each while the block runs: the buffers, the",
        "kept copy and the result sent back; Hybrid's rounds pass about 1.25·k pairs, k = ⌊‖P‖⌋/2 ≈ E/2):",
        f"with 64 blocks of equal output about {worker_t / 2**30:.1f} GiB per worker at 10⁹ edges. The blocks are",
        "balanced by the pairs they visit, not by those they pass, and the passing pairs gather in the",
        f"high-β blocks: at n = {big['n']:,} the largest worker peaked at "
        + ", ".join(f"{p:,.0f} MiB with {w}" for w, p in sorted(largest.items()))
        + " workers, so the largest worker needs more than the even share.",
        "",
        "The driver holds the reports as the server received them (keys, edge keys, CSR: 16 B per directed",
        "edge and 16 B per node), builds the sorted-β rows once per stage and frees them before Hybrid's top-k, copies",
        "the blocks' passing pairs into one output as they are released from the object store (about 1.25·k",
        "pairs of 17 B, and 8 B of logit each), selects the top k by a partition, and writes both directions",
        "of the k kept pairs (20 B per directed edge of the output). Its peak at n = "
        f"{big['n']:,} on Ray was "
        + ", ".join(f"{p:,.0f} MiB with {w}" for w, p in sorted(driver_peak.items()))
        + " workers"
        + (f" (at most {shmem:,.0f} MiB of it the object store's pages it had written or read)" if shmem else "")
        + ":",
        f"{driver_edge:.0f} B per directed edge, ≈ {driver_edge * TARGET_EDGES / 2**30:,.0f} GiB at 10⁹ edges",
        f"(extrapolated; less the store's pages, which the machine holds once for all its processes, {own_edge:.0f} B",
        f"per edge, ≈ {own_edge * TARGET_EDGES / 2**30:,.0f} GiB; one process: ≈ {mem_one / 2**30:,.0f} GiB). That is",
        "the limit of this design: past one",
        "machine's memory the reports would be stored partitioned by node (each node's report is its own),",
        "the sorted-β rows built per block, and Hybrid's top-k chosen by a distributed selection: not done",
        "here.",
        "",
    ]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", nargs="?", choices=("run", "table", "scale"), default="run")
    ap.add_argument("--sizes", nargs="+", type=int, default=[1_000_000])
    ap.add_argument("--workers", nargs="+", type=int, default=[1, 2, 4], help="Ray worker counts to measure")
    ap.add_argument("--address", default=None, help="measure on the Ray cluster at this address instead")
    ap.add_argument("--no-local", dest="local", action="store_false", help="skip the single-process server")
    ap.add_argument("--epsilon", type=float, default=4.0)
    ap.add_argument("--degree-share", type=float, default=0.1)
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--results", default=str(RESULTS), help="the results file to merge into")
    ap.add_argument("--partial", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        res = one(args.child, args.workers, args.epsilon, args.degree_share, args.address, args.local, args.partial)
        print(json.dumps(res))
    elif args.command == "run":
        run(args)
    elif args.command == "scale":
        SCALE_PAGE.write_text(scale_page())
        print(f"wrote {SCALE_PAGE}")
    else:
        PAGE.write_text(table())
        print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()

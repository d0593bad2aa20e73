"""Starting or joining a Ray cluster (the sweep's Ray executor, Blink's distributed server): one start, one
environment for the workers (the data folders, the device variable, one BLAS thread), one line with the fix
when Ray does not start or gives up on a task."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from privgraph.device import DEVICE_ENV

WORKER_ENV = ("PRIVGRAPH_DATA", "PRIVGRAPH_CACHE", DEVICE_ENV)
OBJECT_STORE_BYTES = 256 * 2**20  # a local cluster's object store: records are small
RAY_CONNECT_SECONDS = 5.0  # how long --address's head may take to accept a connection before the sweep gives up


def start_ray(
    workers: int | None,
    address: str | None,
    notify: Callable[[str], None] | None = None,
    env: dict[str, str] | None = None,
    object_store_bytes: int | None = OBJECT_STORE_BYTES,
) -> tuple[Any, bool]:
    """Join the Ray cluster at ``address`` or start a local one of ``workers`` CPUs (all by default), unless
    Ray runs already: ``(ray, started)``, ``started`` when this call started it (then the caller shuts it
    down).  Workers get $PRIVGRAPH_DATA, $PRIVGRAPH_CACHE and the device variable, one BLAS thread and
    ``env``; a local cluster's object store holds ``object_store_bytes`` (None: Ray's default, 30 % of the
    memory).  A head that does not answer, or a start that fails, raises one line with the fix."""
    if address and address != "auto" and "://" not in address:  # Ray retries an absent head for minutes
        from privgraph.network import unreachable

        failure = unreachable(f"tcp://{address}", RAY_CONNECT_SECONDS)
        if failure is not None:
            raise RuntimeError(ray_start_failure(ConnectionError(failure), address))
    try:
        import ray
    except ImportError:  # pragma: no cover - ray is a dependency
        raise RuntimeError(
            "the ray executor needs Ray: pip install 'privgraph[sweep]' (or --executor processes)"
        ) from None
    worker_env = {k: os.environ[k] for k in WORKER_ENV if k in os.environ}
    worker_env.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", **(env or {}))
    started = not ray.is_initialized()
    if started:
        kwargs: dict[str, Any] = {
            "runtime_env": {"env_vars": worker_env},
            "include_dashboard": False,
            "logging_level": "ERROR",
            "log_to_driver": False,
        }
        if address:
            (notify or _quiet)(f"joining the Ray cluster at {address}")
            where: dict[str, Any] = {"address": address}
        else:
            cpus = workers or os.cpu_count()
            (notify or _quiet)(
                f"starting a local Ray cluster of {cpus} CPUs (a minute or more on a busy machine; "
                "--executor processes starts in seconds)"
            )
            where = {"num_cpus": cpus}
            if object_store_bytes is not None:
                where["object_store_memory"] = object_store_bytes
        try:
            ray.init(**where, **kwargs)
        except Exception as err:  # noqa: BLE001 - Ray raises many kinds; the user gets one line and the fix
            try:
                ray.shutdown()  # what part of a local cluster started
            except Exception:  # noqa: BLE001, S110 - the start's reason is the one to report
                pass
            raise RuntimeError(ray_start_failure(err, address)) from None
    return ray, started


def ray_start_failure(err: BaseException, address: str | None) -> str:
    """The one line a sweep prints when Ray does not start (or join ``address``): Ray's reason and the fix."""
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    reason = f"{type(err).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    if address:
        return (
            f"Ray could not join the cluster at {address} ({reason}): check that `ray start --head` runs there "
            "(`ray status --address ADDRESS`), or drop --address to run on this machine"
        )
    return (
        f"Ray did not start a local cluster ({reason}): run on this machine without Ray with --executor processes "
        "(or auto), or start Ray first (`ray start --head`) and pass its address with --address"
    )


def ray_task_failure(err: BaseException, ray: Any, *, retries: int, what: str, local: str) -> str:
    """The one line for a task of ``what`` that Ray gave up on after ``retries`` retries (its worker or
    node lost): Ray's reason, the node (one that left the cluster, else the live ones), and what to do
    (``local``: how to run without Ray)."""
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    reason = f"{type(err).__name__}: {lines[0] if lines else ''}".rstrip(": ")
    try:
        nodes = ray.nodes()
    except Exception:  # noqa: BLE001 - the cluster may be gone with the worker
        nodes = []
    dead = sorted({str(n.get("NodeManagerAddress")) for n in nodes if not n.get("Alive")})
    alive = sorted({str(n.get("NodeManagerAddress")) for n in nodes if n.get("Alive")})
    where = f"node {', '.join(dead)} left the cluster" if dead else f"its worker died on node {', '.join(alive) or '?'}"
    return (
        f"a Ray task of {what} failed {retries + 1} time(s) ({where}; {reason}): most often the worker ran out of "
        f"memory — give each worker more memory (fewer workers per machine, a larger object store) or {local}; "
        "the worker's log: /tmp/ray/session_latest/logs/python-core-worker-*.log on that node"
    )


def _quiet(line: str) -> None:
    """A ``notify`` that says nothing."""


__all__ = [
    "OBJECT_STORE_BYTES",
    "RAY_CONNECT_SECONDS",
    "WORKER_ENV",
    "ray_start_failure",
    "ray_task_failure",
    "start_ray",
]

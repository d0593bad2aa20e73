"""Where privgraph computes: one ``device`` argument from the API to the sweeps.

``privgraph.privatize``, ``fit``, ``attack``, ``audit``, the experiment pipeline and every command
that trains or releases take ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:1"``, ``"mps"`` or a
``torch.device``; default: ``$PRIVGRAPH_DEVICE``, else the CPU).  The API enters :func:`on_device`
once, and the code that trains (the node classifiers with KProp and the blockwise Blink-Soft layers,
the (PP)CVGAE autoencoders, HeteDP's HAN, link model and DP-SGD, RGCN/HGT, the attacks' queries)
reads :func:`current_device` and moves its model and inputs there — as ``with torch.device(...)``
does for factory calls, but explicit: privgraph never changes torch's default device.

What never moves (the guarantee does not depend on the device):

* **the noise.**  Every mechanism draws from the release's random source — the OS cryptographic
  source or the seeded CPU ``torch.Generator`` (:mod:`privgraph.mechanisms.randomness`) — on the
  CPU, never from CUDA's default generator; DP-SGD's Gaussian noise is drawn there too and then moved.
  A seeded release's noise is therefore bit-identical on every device; a release that trains
  (PPCVGAE, HeteDP's link model) may differ by floating-point rounding of the training only;
* **the compiled kernels**: Blink's server pair loops and the pHRG chain (numba), SHAP's explainer
  and the scikit-learn attack classifiers run on the CPU whatever the device.

Releases (``PrivateRelease.data``) are returned on the CPU: they are what is saved and shared.

:func:`parse_device` checks a device's spelling without importing torch (the command line refuses a
bad ``--device`` before any import); :func:`resolve_device` also checks that the device exists.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    import torch

DEVICE_ENV = "PRIVGRAPH_DEVICE"
KINDS = ("cpu", "cuda", "mps")

DeviceLike = Union[str, "torch.device", None]


class DeviceError(ValueError):
    """A device that is misspelt or not present on this machine (one line for the user)."""


def parse_device(spec: str) -> str:
    """The canonical spelling of ``spec`` (``cpu``, ``cuda``, ``cuda:N``, ``mps``), checked without torch."""
    text = str(spec).strip().lower()
    kind, colon, index = text.partition(":")
    if kind not in KINDS or (colon and not (kind == "cuda" and index.isdigit())):
        raise DeviceError(f"unknown device {spec!r}: use cpu, cuda, cuda:N (a GPU's index) or mps")
    return text


def resolve_device(device: DeviceLike = None) -> torch.device:
    """``device`` as a ``torch.device`` present on this machine (None: ``$PRIVGRAPH_DEVICE``, else
    the CPU); :class:`DeviceError` names what is missing."""
    import torch

    if device is None:
        device = os.environ.get(DEVICE_ENV) or "cpu"
        where = f" (from ${DEVICE_ENV})" if os.environ.get(DEVICE_ENV) else ""
    else:
        where = ""
    if isinstance(device, str):
        dev = torch.device(parse_device(device))
    elif isinstance(device, torch.device):
        dev = device
    else:
        raise TypeError(f"device must be a str or torch.device, got {type(device).__name__}")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
            raise DeviceError(
                f"device {str(dev)!r}{where} asked for, but torch {torch.__version__} ({build}) sees no CUDA GPU "
                "here: use --device cpu, or install a CUDA build of torch on a machine with a GPU"
            )
        count = torch.cuda.device_count()
        index = torch.cuda.current_device() if dev.index is None else dev.index
        if index >= count:
            raise DeviceError(f"device {str(dev)!r}{where} asked for, but this machine has {count} CUDA GPU(s)")
        return torch.device("cuda", index)
    if dev.type == "mps":
        if not torch.backends.mps.is_available():
            raise DeviceError(f"device 'mps'{where} asked for, but Apple's Metal (MPS) is not available here")
        return dev
    if dev.type != "cpu":
        raise DeviceError(f"privgraph runs on cpu, cuda or mps, not {dev.type!r}")
    return torch.device("cpu")


_CURRENT: ContextVar[Any] = ContextVar("privgraph_device", default=None)


def current_device() -> torch.device:
    """The device the enclosing :func:`on_device` chose (default: ``$PRIVGRAPH_DEVICE``, else the CPU)."""
    dev = _CURRENT.get()
    return dev if dev is not None else resolve_device(None)


@contextmanager
def on_device(device: DeviceLike = None) -> Iterator[torch.device]:
    """Train and post-process on ``device`` inside the block (None keeps the enclosing choice)."""
    if device is None:
        yield current_device()
        return
    token = _CURRENT.set(resolve_device(device))
    try:
        yield _CURRENT.get()
    finally:
        _CURRENT.reset(token)


def to_device(value: Any, device: torch.device | None = None) -> Any:
    """``value`` (a tensor, a module, a PyG ``Data``, a :class:`~privgraph.nn.dense.BlockwiseAdjacency`,
    a dict of those — a heterogeneous model's inputs — or None) on ``device`` (default: :func:`current_device`)."""
    if value is None:
        return None
    device = device if device is not None else current_device()
    if isinstance(value, dict):
        return {key: to_device(v, device) for key, v in value.items()}
    return value.to(device)


def device_name(device: torch.device | None = None) -> str:
    """The device in words for a benchmark row: ``cpu (N threads)`` or the GPU's name."""
    import torch

    dev = device if device is not None else current_device()
    if dev.type == "cuda":
        return f"{torch.cuda.get_device_name(dev)} ({dev})"
    if dev.type == "mps":
        return "Apple MPS"
    return f"cpu ({torch.get_num_threads()} threads)"


__all__ = [
    "DEVICE_ENV",
    "DeviceError",
    "current_device",
    "device_name",
    "on_device",
    "parse_device",
    "resolve_device",
    "to_device",
]

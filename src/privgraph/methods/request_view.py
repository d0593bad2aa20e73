"""What a method's ``privatize`` reads of its :class:`~privgraph.request.ReleaseRequest` (the request itself lives
a layer above the methods: it holds one).  :func:`privgraph.api.release` passes the whole request."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, Protocol

from privgraph.methods.label_ldp import LabelReports
from privgraph.progress import ProgressHook


@dataclass(frozen=True)
class Shared:
    """What a caller that releases many times shares between releases instead of drawing it again (the
    pipeline): label reports already collected (``labels``), an autoencoder trained once per trial
    (``trained``: PPCVGAE), HeteDP's ``training_seed``, ``on_epoch`` and ``replace_inputs``.  A method reads
    only those it names in :attr:`Method.shares <privgraph.methods.Method.shares>`; a request refuses the others."""

    labels: LabelReports | None = None
    trained: Any = None
    training_seed: int | None = None
    on_epoch: Callable[..., None] | None = None
    replace_inputs: Callable[..., Any] | None = None

    def given(self) -> list[str]:
        """The names of the shared parts given."""
        return [f.name for f in fields(self) if getattr(self, f.name) is not None]


class RequestView(Protocol):
    """The request as a method's ``privatize`` reads it: ε, the label ε, the progress hook and the shared work
    (the randomness arrives resolved, as ``rng``; the device and the ledger are the release function's)."""

    @property
    def epsilon(self) -> float | None: ...

    @property
    def label_epsilon(self) -> float | None: ...

    @property
    def progress(self) -> ProgressHook | None: ...

    @property
    def shared(self) -> Shared: ...


__all__ = ["RequestView", "Shared"]

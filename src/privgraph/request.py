"""One release request: what a release is asked to do, typed and validated once.

Every entry point builds a :class:`ReleaseRequest` — :func:`privgraph.privatize`, the
:class:`~privgraph.transforms.Privatize` transform, :func:`privgraph.audit_method`, the experiment
pipeline's tasks and every command of the command line — and :func:`privgraph.api.release` is the one
function that consumes it::

    req = ReleaseRequest.build("blink", epsilon=4.0, seed=0, variant="hybrid")
    rel = pg.privatize(data, req)               # == pg.privatize(data, "blink", epsilon=4.0, seed=0, variant="hybrid")

The method is given by name (with its parameters), by its ``Params`` object or built; its parameters
never share a name with the request's own fields (:data:`~privgraph.methods.registry.RESERVED`, refused when a
method registers),
except ``delta``, which is the δ of the method's (ε, δ) claim (:attr:`Method.delta_param`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

import torch

from privgraph.accounting.validation import check_epsilon, check_epsilon_argument
from privgraph.device import DeviceLike
from privgraph.mechanisms import (
    SECURE_NOTE,
    RandomSource,
    SecureRandom,
    make_generator,
    release_source,
    reproducible_note,
)
from privgraph.methods import METHODS, Method, MethodParams, Task, method_class
from privgraph.methods.registry import RESERVED
from privgraph.methods.request_view import Shared
from privgraph.progress import ProgressHook

if TYPE_CHECKING:
    from privgraph.accounting import Ledger

MethodLike = str | MethodParams | Method
"""A method as every entry point takes it: a registered name, its ``Params`` object, or a built method."""

GENERATOR_NOTE = (
    "randomness from a torch.Generator: whoever knows its seed or state can regenerate the noise and "
    "remove it; use rng=SecureRandom() for a release that leaves your hands"
)


def build_method(method: MethodLike, values: dict[str, Any] | None = None) -> Method:
    """The method of ``method``: a name built with ``values`` (its parameters), a ``Params`` object's method
    (the one registered method whose ``Params`` it is), or a built method as given (``values`` refused)."""
    values = values or {}
    if isinstance(method, Method):
        if values:
            raise TypeError("give parameters with a method name, not with a built method")
        return method
    if isinstance(method, MethodParams):
        if values:
            raise TypeError("give parameters with a method name, not with a Params object")
        owners = [cls for cls in METHODS.values() if cls.Params is type(method)]
        if len(owners) != 1:
            names = ", ".join(cls.name for cls in owners) or "none"
            raise TypeError(
                f"{type(method).__name__} is the parameters of {len(owners)} methods ({names}): give the method's "
                "name with its parameters, or a built method"
            )
        return owners[0](method)
    if isinstance(method, str):
        return method_class(method)(**values)
    raise TypeError(f"method must be a name, a Params object or a Method, got {type(method).__name__}")


def method_name_and_params(method: MethodLike) -> tuple[str, dict[str, Any]]:
    """A method as the experiment pipeline records it (a spec, a comparison's row): its name and, for a
    ``Params`` object or a built method, the parameters that differ from their defaults (so that a setting
    given either way has one identity, :func:`~privgraph.experiments.config_hash`)."""
    if isinstance(method, str):
        return method, {}
    built = build_method(method)
    p = built.params
    return built.name, {f.name: getattr(p, f.name) for f in fields(p) if getattr(p, f.name) != f.default}


def with_delta(method: Method, delta: float | None) -> Method:
    """``method`` with the δ of its claim set through the parameter it declares (``Method.delta_param``);
    ``ValueError`` for a method that declares none (pure ε-DP).  ``None``: the method's own δ."""
    if delta is None:
        return method
    name = method.delta_param
    if name is None:
        with_param = sorted(n for n, cls in METHODS.items() if cls.delta_param is not None and cls.private)
        renamed = method.Params.renamed.get("delta")  # Blink's and DPRR's old name of their degree share
        raise ValueError(
            f"{method.name} claims pure ε-DP (δ = 0): delta applies to the methods that declare a δ "
            f"parameter ({', '.join(with_param)}; LPGNN's with mechanism='gaussian')"
            + (f". {renamed[1]}" if renamed else "")
        )
    return method.with_params(**{name: delta})


@dataclass(frozen=True)
class Randomness:
    """Where a release's noise comes from: ``seed`` (reproducible: whoever knows it removes the noise), its
    ``stream`` (the pipeline's: one per release of a trial, :func:`~privgraph.mechanisms.release_source`), a
    ``torch.Generator`` or :class:`~privgraph.SecureRandom` (``rng``), or (none given) the OS cryptographic source."""

    seed: int | None = None
    rng: RandomSource | None = None
    stream: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.seed is not None and self.rng is not None:
            raise ValueError("give a seed or an rng, not both")
        if self.stream and self.seed is None:
            raise ValueError("a stream names a part of a seed's randomness: give the seed too")
        if self.rng is not None and not isinstance(self.rng, (SecureRandom, torch.Generator)):
            raise TypeError(f"rng must be a torch.Generator or privgraph.SecureRandom, got {type(self.rng).__name__}")
        object.__setattr__(self, "stream", tuple(int(s) for s in self.stream))

    def resolve(self) -> tuple[RandomSource, dict[str, Any], str]:
        """The random source, how to record it and the note every private guarantee carries."""
        if self.seed is not None:
            seed = int(self.seed)
            if self.stream:
                recorded = {"mode": "seeded", "seed": seed, "stream": list(self.stream)}
                return release_source(seed, *self.stream), recorded, reproducible_note(seed, self.stream)
            return make_generator(seed), {"mode": "seeded", "seed": seed}, reproducible_note(seed)
        if self.rng is None or isinstance(self.rng, SecureRandom):
            return self.rng or SecureRandom(), {"mode": "os"}, SECURE_NOTE
        return self.rng, {"mode": "generator"}, GENERATOR_NOTE


@dataclass(frozen=True)
class ReleaseRequest:
    """One release, asked once (module docstring): the built ``method`` (with its parameters), ``epsilon``,
    ``label_epsilon`` (LPGNN's label LDP on the training and validation labels), ``randomness``, ``device`` (where
    it trains and post-processes; the noise is drawn on the CPU), ``ledger`` (checked before the noise, completed
    after), ``progress`` and ``shared`` work.  Validated when built: the one ε rule
    (:func:`~privgraph.accounting.validation.check_epsilon_argument`), label ε, randomness, ledger, shared work."""

    method: Method
    epsilon: float | None = None
    label_epsilon: float | None = None
    randomness: Randomness = field(default_factory=Randomness)
    device: DeviceLike = None
    ledger: Ledger | None = None
    progress: ProgressHook | None = field(default=None, compare=False)
    shared: Shared = field(default_factory=Shared)

    def __post_init__(self) -> None:
        from privgraph.accounting.ledger import Ledger

        m = self.method
        if not isinstance(m, Method):
            raise TypeError(f"a request's method is a built Method (ReleaseRequest.build takes names), got {m!r}")
        eps = check_epsilon_argument(m.name, m.private, m.epsilon_optional, self.epsilon)
        object.__setattr__(self, "epsilon", eps)
        if self.label_epsilon is not None:
            if m.task != Task.NODE_CLASSIFICATION or m.heterogeneous:
                raise ValueError(f"label_epsilon applies to node-classification methods, not to {m.name}")
            object.__setattr__(self, "label_epsilon", check_epsilon(self.label_epsilon, "label_epsilon"))
        if self.ledger is not None and not isinstance(self.ledger, Ledger):
            raise TypeError(f"ledger must be a privgraph.Ledger, got {type(self.ledger).__name__}")
        stray = [name for name in self.shared.given() if name not in m.shares]
        if stray:
            raise TypeError(f"{m.name} does not share {', '.join(stray)} between releases")

    @classmethod
    def build(
        cls,
        method: MethodLike,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        label_epsilon: float | None = None,
        seed: int | None = None,
        rng: RandomSource | None = None,
        stream: tuple[int, ...] = (),
        device: DeviceLike = None,
        ledger: Ledger | None = None,
        progress: ProgressHook | None = None,
        shared: Shared | None = None,
        **params: Any,
    ) -> ReleaseRequest:
        """The request of every entry point: ``method`` a name (with ``**params``, its parameters), a ``Params``
        object or a built method; ``delta`` the δ of its claim (its :attr:`~Method.delta_param`; None: its own)."""
        built = with_delta(build_method(method, params), delta)
        randomness = Randomness(seed, rng, tuple(stream))
        return cls(built, epsilon, label_epsilon, randomness, device, ledger, progress, shared or Shared())

    @property
    def delta(self) -> float:
        """The δ of the release's (ε, δ) claim, declared before any data are read (:meth:`Method.dp_delta`; a δ
        that depends on the graph, GAP's auto δ, is known once it is read: ``method.dp_delta(data)``)."""
        return self.method.dp_delta()

    def but(self, **changes: Any) -> ReleaseRequest:
        """The same request with some fields changed (validated again): ``seed``, ``rng`` and ``stream`` change
        its randomness."""
        keys = ("seed", "rng", "stream")
        if any(k in changes for k in keys):
            given = {k: changes.pop(k) for k in keys if k in changes}
            changes["randomness"] = Randomness(**given)
        return replace(self, **changes)


__all__ = [
    "GENERATOR_NOTE",
    "RESERVED",
    "MethodLike",
    "Randomness",
    "ReleaseRequest",
    "Shared",
    "build_method",
    "method_name_and_params",
    "with_delta",
]

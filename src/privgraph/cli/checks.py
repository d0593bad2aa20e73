"""The checks a command makes before torch is imported (the catalogue's, :mod:`privgraph.catalogue`), and the
spec it builds from them: bad input exits 2 with one line."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from types import UnionType
from typing import Any, Union, get_args, get_origin

from rich.markup import escape

from privgraph.cli.console import _fail, err_console, user_errors


def _parse(text: str, hint: Any) -> Any:
    """``text`` as a value of the annotated type ``hint`` (int, float, bool, str, a tuple given
    comma-separated, or optional: ``none``); ``ValueError`` when it is not one."""
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, UnionType):
        if type(None) in args and text.lower() in ("none", "null"):
            return None
        return _parse(text, next(a for a in args if a is not type(None)))  # X | None: every Params union
    if origin is tuple:
        items = [s.strip() for s in text.split(",")] if text.strip() else []
        kinds = [args[0]] * len(items) if len(args) == 2 and args[1] is Ellipsis else list(args)
        if len(kinds) != len(items):
            raise ValueError(text)
        return tuple(_parse(s, k) for s, k in zip(items, kinds))
    if hint is bool and text.lower() in ("true", "yes", "on", "1", "false", "no", "off", "0"):
        return text.lower() in ("true", "yes", "on", "1")
    if hint in (int, float, str):
        return hint(text)
    raise ValueError(text)


def _assign(
    items: list[str],
    hints: dict[str, Any],
    flag: str,
    owner: str,
    noun: str,
    renamed: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``NAME=VALUE`` items parsed against ``hints`` (each name's type, in order: a catalogue entry's,
    :func:`privgraph.catalogue.hints`); an unknown name or a value of the wrong type exits 2 with one
    line listing the names (a ``renamed`` one: with its hint)."""
    known = list(hints)
    listing = f"its {noun}s: {', '.join(known) or 'none'}"
    out: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name:
            _fail(f"{flag} takes NAME=VALUE, got {item!r}")
        if name not in known and name in (renamed or {}):
            _fail(f"{flag} {name}: {(renamed or {})[name]}")
        if name not in known:
            _fail(f"{owner} has no {noun} {name!r}; {listing}")
        try:
            out[name] = _parse(text.strip(), hints[name])
        except ValueError:
            kind = hints[name].__name__ if hints[name] in (int, float, bool, str) else hints[name]
            _fail(f"{flag} {name}={text!r}: {noun} {name} of {owner} takes {kind}; {listing}")
    return out


def _check_declared(entry: dict[str, Any], values: dict[str, Any]) -> None:
    """The ``--param`` (``--attack-param``) values over the defaults against the method's (attack's) declared
    choices, bounds and rules (the catalogue's copy: :func:`privgraph.param_checks.check_params`, the function its
    ``Params`` validates with, so in the same words); exits 2 with one line."""
    from privgraph.param_checks import check_params

    defaults = {p["name"]: p["default"] for p in entry["info"]["parameters"]}
    with user_errors():
        check_params({**defaults, **values}, entry.get("choices", {}), entry.get("bounds", {}), entry.get("rules", []))


def _epsilons(values: list[str]) -> list[float | None]:
    """``--epsilon`` values: numbers, or ``none`` (a method where ε is optional, without noise)."""
    out: list[float | None] = []
    for v in values:
        if v.lower() in ("none", "null"):
            out.append(None)
            continue
        try:
            out.append(float(v))
        except ValueError:
            _fail(f"--epsilon {v!r}: give numbers (or none for a method whose noise is optional)")
    return out


def _one_epsilon(values: list[str]) -> float | None:
    """The ε of a command that releases once (``release``, ``audit``): ``--epsilon`` given at most once."""
    eps = _epsilons(values)
    if len(eps) > 1:
        _fail("--epsilon: this command releases once: give one value")
    return eps[0] if eps else None


@contextmanager
def plugin_warnings() -> Iterator[None]:
    """Each installed plugin method that could not be registered (a
    :class:`~privgraph.plugins.PluginWarning` raised in the block) as one ``warning:`` line on stderr."""
    from privgraph.plugins import PluginWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PluginWarning)
        try:
            yield
        finally:
            for w in caught:
                if issubclass(w.category, PluginWarning):
                    err_console.print(f"[yellow]warning:[/yellow] {escape(str(w.message))}", soft_wrap=True)
                else:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _method(method: str) -> dict[str, Any]:
    """The catalogue's entry of ``method`` (:mod:`privgraph.catalogue`: no torch; a plugin's, from its class);
    an unknown name exits 2."""
    from privgraph.catalogue import method_entry

    with user_errors(), plugin_warnings():  # a plugin's warning line, then the error's
        return method_entry(method)


def _device(device: str | None) -> str | None:
    """``--device``'s spelling (:func:`~privgraph.device.parse_device`, no torch), or None to leave the
    choice to ``$PRIVGRAPH_DEVICE`` (whose spelling is checked here too), else the CPU; exits 2 with one line."""
    import os

    from privgraph.device import DEVICE_ENV, DeviceError, parse_device

    with user_errors(DeviceError, prefix="--device: " if device is not None else f"${DEVICE_ENV}: "):
        if device is not None:
            return parse_device(device)
        if os.environ.get(DEVICE_ENV):
            parse_device(os.environ[DEVICE_ENV])
    return None


def _resolve_device(device: str | None) -> None:
    """``device`` (:func:`_device`'s) is present on this machine: called once torch is needed, before any data
    is read or work starts (:func:`~privgraph.device.resolve_device`); a missing one exits 2 with one line."""
    from privgraph.device import DeviceError, resolve_device

    with user_errors(DeviceError):
        resolve_device(device)


def _prepare(
    method: str,
    params: list[str],
    hparams: list[str],
    task: str | None = None,
    epsilons: list[float | None] | None = None,
    label_epsilon: float | None = None,
    dataset: str | None = None,
    device: str | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The checks that need only the catalogue, before torch is imported: the method, ``--param``
    NAME=VALUE parsed against its parameters' types and checked against their declared choices, bounds and
    rules (:func:`_check_declared`), ``--task``, ``--set`` against the task's training
    hyperparameters, ε (:func:`~privgraph.accounting.validation.check_epsilons`), ε_y, the dataset's
    name (``dataset``: None with ``--input``) and ``--device``'s spelling.  Returns the parameters and the
    hyperparameters; bad input exits 2 with the line the pipeline would print after loading torch."""
    from privgraph.accounting.validation import check_epsilon, check_epsilons
    from privgraph.catalogue import hints, task_entry

    _device(device)
    entry = _method(method)
    with user_errors():
        evaluation = task_entry(entry, task)
    values = _assign(
        params,
        hints(entry["params"]),
        "--param",
        f"method {method!r}",
        "parameter",
        entry.get("renamed"),
    )
    _check_declared(entry, values)
    trained: dict[str, Any] = {}
    if hparams and evaluation is not None:  # an unknown --task: the pipeline refuses it
        if evaluation["training"] is None:
            _fail(
                f"{method} does not take --set: it trains no model of the task's own (its settings are --param; "
                f"`privgraph methods {method}`)"
            )
        trained = _assign(hparams, hints(evaluation["training"]), "--set", f"{method}'s training", "hyperparameter")
    info = entry["info"]
    with user_errors():
        check_epsilons(method, info["private"], info["epsilon_optional"], list(epsilons or []))
        if label_epsilon is not None:
            check_epsilon(label_epsilon, "label_epsilon")
        if dataset is not None and evaluation is not None and evaluation["datasets"]:
            from privgraph.data.registry import get_dataset

            get_dataset(dataset, *evaluation["datasets"])
    return values, trained


Prepared = tuple[dict[str, Any], dict[str, Any]]  # _prepare's: the method's parameters, the hyperparameters


def _spec(method: str, params: list[str], hparams: list[str], prepared: Prepared | None = None, **fields: Any):
    """The pipeline's spec for ``method``: :func:`_prepare`'s checks (no torch; ``prepared``: their result,
    where the command made them already), the device present (:func:`_resolve_device`), then the spec's own
    (:meth:`~privgraph.experiments.ExperimentSpec.validate`), before any work (bad input exits 2 with one line)."""
    if prepared is None:
        prepared = _prepare(
            method,
            params,
            hparams,
            fields.get("task"),
            fields.get("epsilons"),
            fields.get("label_epsilon"),
            None if fields.get("input") is not None else fields.get("dataset", "sbm"),
        )
    values, trained = prepared
    _device(None)  # $PRIVGRAPH_DEVICE's spelling, checked even where --device is given (as _prepare's did here)
    fields["device"] = _device(fields.get("device"))
    _resolve_device(fields["device"])
    from privgraph.experiments import ExperimentSpec

    spec = ExperimentSpec(method=method, params=values, hyperparameters=trained, **fields)
    with user_errors(ValueError, TypeError):
        spec.validate()
    return spec


def check_epsilon_given(method: str, info: dict[str, Any], epsilon: float | None) -> None:
    """The one rule of a release's ε (:func:`~privgraph.accounting.validation.check_epsilon_argument`, the
    request's), read from the catalogue's ``info`` without torch.  Exits 2 with its line."""
    from privgraph.accounting.validation import check_epsilon_argument

    with user_errors():
        check_epsilon_argument(method, info["private"], info["epsilon_optional"], epsilon)

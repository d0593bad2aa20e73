"""The public Python API: privatize a graph, fit a model on the release, list the methods.

(The names ``fit`` and ``list_methods`` leave ``privgraph.train`` and ``privgraph.methods`` to the subpackages.)

    import privgraph as pg
    rel = pg.privatize(data, "blink", epsilon=4.0, variant="hybrid")  # noise from the OS source
    rel.data, rel.report                                            # PyG Data + a guarantee per unit
    rel.save("graph.pt"); rel = pg.load_release("graph.pt")
    res = pg.fit(rel, model="gcn", seed=0)                           # res.test_accuracy, res.model
    pg.attack(res, "linkteller", truth=data).metrics                 # attack_auc, attack_precision, ...
    pg.list_methods()                                                # name -> unit, task, parameters
"""

from __future__ import annotations

import copy
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch
from torch_geometric.data import Data, HeteroData

from privgraph.device import DeviceLike, on_device
from privgraph.mechanisms import (
    SECURE_NOTE,
    RandomizedResponse,
    RandomSource,
    SecureRandom,
    make_generator,
    release_source,
    reproducible_note,
)
from privgraph.methods import METHODS, Hyperparameters, LabelReports, Method, Task, get_method, method_class
from privgraph.methods.base import Release, fit_method
from privgraph.progress import ProgressHook, console_progress, counts_only
from privgraph.release import NODE_IDS_NOTE, PrivateRelease
from privgraph.train import TrainResult

if TYPE_CHECKING:
    from privgraph.accounting import Ledger
    from privgraph.attacks import AttackResult

GENERATOR_NOTE = (
    "randomness from a torch.Generator: whoever knows its seed or state can regenerate the noise and "
    "remove it; use rng=SecureRandom() for a release that leaves your hands"
)


def list_methods(task: str | None = None) -> dict[str, dict[str, Any]]:
    """The registry: for each method name, its description, privacy unit, task, whether it is
    private, the graph type it takes, the fields it protects and declares public, and its
    parameters with defaults and help (:meth:`privgraph.methods.Method.info`).

    Args:
        task: keep only the methods of this task ("node classification", "link prediction",
            "embedding release").
    """
    return {name: cls.info() for name, cls in METHODS.items() if task is None or cls.task.value == task}


def _source(
    seed: int | None, rng: RandomSource | None, stream: tuple[int, ...] = ()
) -> tuple[RandomSource, dict[str, Any], str]:
    """The release's random source, how to record it and the note every private guarantee carries."""
    if seed is not None and rng is not None:
        raise ValueError("give a seed or an rng, not both")
    if stream and seed is None:
        raise ValueError("a stream names a part of a seed's randomness: give the seed too")
    if seed is not None:
        if stream:  # the experiment pipeline: one stream of the trial's seed per release (release_source)
            recorded = {"mode": "seeded", "seed": int(seed), "stream": list(stream)}
            return release_source(int(seed), *stream), recorded, reproducible_note(int(seed), stream)
        return make_generator(int(seed)), {"mode": "seeded", "seed": int(seed)}, reproducible_note(int(seed))
    if rng is None or isinstance(rng, SecureRandom):
        return rng or SecureRandom(), {"mode": "os"}, SECURE_NOTE
    if isinstance(rng, torch.Generator):
        return rng, {"mode": "generator"}, GENERATOR_NOTE
    raise TypeError(f"rng must be a torch.Generator or privgraph.SecureRandom, got {type(rng).__name__}")


def privatize(
    data: Data | HeteroData,
    method: str,
    *,
    epsilon: float | None = None,
    seed: int | None = None,
    rng: RandomSource | None = None,
    label_epsilon: float | None = None,
    progress: ProgressHook | None = None,
    device: DeviceLike = None,
    ledger: Ledger | None = None,
    **params: Any,
) -> PrivateRelease:
    """Release ``data`` once with ``method``.

    Args:
        data: the user's graph: a ``Data`` (node classification, embeddings) or ``HeteroData``
            (HeteDP), with the fields the method reads (``x``, ``edge_index``, ``y`` and the
            split masks; ``private_edge_mask`` for the edge-level methods; ``sens`` and
            ``private_mask`` for PPCVGAE).
        method: a name from :func:`methods`.
        epsilon: the privacy budget ε (required by private methods, refused by the others).
        seed: draw the noise from a generator seeded with it — reproducible, and then anyone
            who knows the seed can remove the noise (the report says so): for research only.
        rng: a ``torch.Generator`` or :class:`~privgraph.SecureRandom`.  Without ``seed`` and
            ``rng`` the noise comes from the OS cryptographic source.
        label_epsilon: also protect the labels of the training and validation nodes by k-ary
            randomized response with this ε (LPGNN's label LDP; node-classification methods):
            the release then holds ``y_reported`` instead of ``y``.
        progress: called as ``progress(task, done, total)`` on long work.
        device: where the release's training and post-processing run (``"cpu"``, ``"cuda"``,
            ``"cuda:1"``, ``"mps"``, a ``torch.device``; default ``$PRIVGRAPH_DEVICE``, else the CPU).
            The noise is drawn on the CPU from the release's source whatever the device, and the
            release is returned on the CPU (:mod:`privgraph.device`).
        ledger: a :class:`~privgraph.Ledger` of the dataset: the graph is checked against the dataset the
            ledger is bound to (its name and public fingerprint; ``LedgerError`` otherwise) and the method's
            declared spend against its budget, and recorded, before any noise is drawn (``BudgetExceeded``
            if it does not fit); the report's spend is recorded after.
        **params: the method's parameters (``privgraph.list_methods()[method]["parameters"]``).

    Returns:
        The release, a :class:`~privgraph.PrivateRelease`: the released ``data``, the privacy ``report``
        (one guarantee per unit, ``print(rel.report)``), the status of every input field, details and
        randomness.
    """
    return release_with(
        method_class(method)(**params),
        data,
        epsilon,
        seed=seed,
        rng=rng,
        label_epsilon=label_epsilon,
        progress=progress,
        device=device,
        ledger=ledger,
    )


def check_epsilon_argument(method: Method, epsilon: float | None) -> None:
    """A private method needs ε (unless it also runs without noise), a non-private baseline refuses one."""
    if method.private and epsilon is None and not method.epsilon_optional:
        raise ValueError(f"{method.name} is private: give epsilon")
    if not method.private and epsilon is not None:
        raise ValueError(f"{method.name} is a non-private baseline: it takes no epsilon")


def release_with(
    method: Method,
    data: Data | HeteroData,
    epsilon: float | None,
    *,
    seed: int | None = None,
    rng: RandomSource | None = None,
    label_epsilon: float | None = None,
    progress: ProgressHook | None = None,
    stream: tuple[int, ...] = (),
    device: DeviceLike = None,
    ledger: Ledger | None = None,
    **options: Any,
) -> PrivateRelease:
    """:func:`privatize` with a built method: the one release path of ``privgraph release``, the
    experiment pipeline and the audit.  ε is checked against the method, the random source
    resolved, and every private guarantee told where its randomness came from (the OS source, or a
    seed that removes the noise).

    ``stream`` (with ``seed``): draw from the seed's stream ``derive_seed(seed, *stream)`` (the
    pipeline gives every release of a trial its own).  ``options`` go to the method's ``privatize``:
    what a caller that releases many times shares between releases instead of drawing it again
    (the pipeline's label reports of a trial, ``labels``; an autoencoder trained once per trial,
    ``trained``; HeteDP's ``training_seed``, ``on_epoch`` and ``replace_inputs``).  ``device``: where it
    trains and post-processes (:mod:`privgraph.device`); the input is read on the CPU, where the noise is drawn.
    ``ledger``: checked and recorded before the noise, completed after (:meth:`privgraph.Ledger.spend`)."""
    name = method.name
    check_epsilon_argument(method, epsilon)
    source, randomness, note = _source(seed, rng, tuple(stream))
    if label_epsilon is not None and (method.task != Task.NODE_CLASSIFICATION or method.heterogeneous):
        raise ValueError(f"label_epsilon applies to node-classification methods, not to {name}")
    extra: dict[str, Any] = {} if label_epsilon is None else {"label_epsilon": label_epsilon}
    node_ids = data.get("node_ids") if isinstance(data, Data) else None
    if node_ids is not None:  # the map of an edge list's own ids (read_graph): released beside the graph, as given
        data = copy.copy(data)
        del data.node_ids
    with ledger.spend(method, epsilon, label_epsilon, data) if ledger is not None else nullcontext() as receipt:
        with on_device(device):
            rel = method.privatize(_on_cpu(data), epsilon, source, progress, **extra, **options)
        if receipt is not None:
            receipt.done(rel.report)
    rel.report.guarantees = [g.with_note(note) if g.is_private else g for g in rel.report.guarantees]
    rel.randomness = {**randomness, **rel.randomness}
    if node_ids is not None:
        rel.node_ids = [str(i) for i in node_ids]
        rel.report.guarantees[0] = rel.report.guarantees[0].with_note(NODE_IDS_NOTE)
    return rel


def _on_cpu(data: Data | HeteroData) -> Data | HeteroData:
    """``data`` read on the CPU (a copy when a tensor lives elsewhere: the user's object is not moved)."""
    if all(not torch.is_tensor(v) or v.device.type == "cpu" for store in data.stores for v in store.values()):
        return data
    return copy.copy(data).cpu()


def load_release(path: str | Path) -> PrivateRelease:
    """Read a release written by :meth:`PrivateRelease.save`: its tensors with
    ``torch.load(weights_only=True)`` (PyG's data classes allow-listed), so a tampered file that
    would run code is refused (``ValueError``) instead of unpickled.  The params are typed by the
    method's ``Params`` (JSON gives lists for tuples); an unknown method is refused."""
    rel = PrivateRelease.load(path)
    rel.params = method_class(rel.method).Params.build(rel.method, rel.params).to_dict()
    return rel


def fit(
    release: PrivateRelease,
    model: str | None = None,
    seed: int = 0,
    truth: Data | None = None,
    device: DeviceLike = None,
    progress: ProgressHook | None = None,
    verbose: bool = False,
    **hyperparameters: Any,
) -> TrainResult:
    """Train the method's classifier on a node-classification release (post-processing: no
    privacy is spent) and evaluate it on the release's test nodes.

    Args:
        release: a release of a node-classification method (its ``data`` holds ``y`` and the
            ``train_mask``/``val_mask``/``test_mask`` split).
        model: ``gcn``, ``sage``, ``gat`` or ``mlp`` (default: the method's own).
        seed: initialisation seed.
        truth: under label privacy the release has no ``y``: the model trains on the denoised
            reports (K_y = ``label_steps``), and the test accuracy is measured on ``truth.y``
            if given (the experimenter's view), else it is NaN.  A release that is a trained model
            (``model_state``: GAP-NDP, node-dpsgd) is evaluated on ``truth``, which it then needs.
        device: where to train (:mod:`privgraph.device`; default ``$PRIVGRAPH_DEVICE``, else the CPU);
            the trained ``model`` stays there.
        progress: called as ``progress(task, epoch, epochs)`` after every epoch (with ``status=``, the
            training loss and validation accuracy, where it takes that keyword: :mod:`privgraph.progress`).
        verbose: show that progress on stderr (:class:`~privgraph.progress.ConsoleProgress`: a bar on a
            terminal, else a line every 10 s); quiet by default (default: ``False``).
        **hyperparameters: ``lr``, ``weight_decay``, ``dropout``, ``hidden``, ``epochs``,
            ``patience``, ``kprop_steps`` (LPGNN's K).

    Returns:
        The fit, a :class:`~privgraph.train.TrainResult` with ``test_accuracy``, ``val_accuracy`` and the
        trained ``model`` (the state with the best validation accuracy).
    """
    method = get_method(release.method, **release.params)
    if method.task != Task.NODE_CLASSIFICATION:
        raise ValueError(f"{release.method} releases for {method.task.value}; pg.fit trains node classifiers")
    data, labels = release.data, None
    if release.model_state is not None:  # a model trained inside the release (node-level DP): evaluated only
        if truth is None:
            raise ValueError(
                f"{release.method} releases a trained model and withholds y: pass truth=data (the graph with its "
                "labels and split) to evaluate it"
            )
        data = truth
    elif "y_reported" in data:  # label LDP: train on the denoised reports, test against the truth if given
        labels = LabelReports(data.y_reported, RandomizedResponse(float(data.label_epsilon), int(data.num_classes)))
        data = copy.copy(data)
        data.y = truth.y if truth is not None else data.y_reported
    missing = [k for k in ("y", "train_mask", "val_mask", "test_mask") if getattr(data, k, None) is None]
    if missing:
        raise ValueError(
            f"the release has no {', '.join(missing)}: give the input graph labels and a split "
            "(privgraph.data.stratified_split) before privatizing"
        )
    hp = Hyperparameters().update(**hyperparameters)
    server_view = Release.from_private(release)
    with on_device(device), _console(progress, verbose) as hook:
        result = fit_method(method, server_view, data, model or method.default_model, hp, seed, labels, hook)
    if labels is not None and truth is None:
        result.test_accuracy = float("nan")
    result.context = FitContext(release, server_view, model or method.default_model, hyperparameters, seed)
    return result


def _console(progress: ProgressHook | None, verbose: bool) -> AbstractContextManager[ProgressHook | None]:
    """``verbose``: a :class:`~privgraph.progress.ConsoleProgress` on stderr (with a heartbeat); else ``progress``."""
    if verbose and progress is not None:
        raise ValueError("give progress (your hook) or verbose=True (the console's), not both")
    return console_progress(heartbeat=True) if verbose else nullcontext(progress)


@dataclass
class FitContext:
    """How :func:`fit` trained a model: the release, the server's view of it, the model and settings."""

    release: PrivateRelease
    server_view: Release
    model: str
    hyperparameters: dict[str, Any]
    seed: int


def attack(
    target: PrivateRelease | TrainResult,
    attack: str,
    *,
    truth: Data,
    seed: int = 0,
    model: str | None = None,
    device: DeviceLike = None,
    progress: ProgressHook | None = None,
    verbose: bool = False,
    **params: Any,
) -> AttackResult:
    """Run an attack (:data:`privgraph.attacks.ATTACKS`) against a release or a model trained on one.

    Args:
        target: a :class:`~privgraph.PrivateRelease` — node classification: the target is its
            classifier trained as :func:`fit` trains it (``model``, seed ``seed``); embedding
            methods: the released embeddings — or the result of :func:`fit` (its model).
        attack: ``membership-confidence``, ``membership-shadow``, ``link-stealing``,
            ``link-stealing-aux``, ``linkteller`` or ``attribute``.
        truth: the input graph the release was made from: the auditor's ground truth (the true
            edges, the members, the sensitive attribute).  The attacker sees only what the
            attack's threat model grants.
        seed: the attacker's randomness (its auxiliary knowledge, candidates, own models).
        model: the target's classifier when ``target`` is a release (default: the method's own).
        device: where the target and the attacker's shadow models train and answer queries
            (:mod:`privgraph.device`); the attack classifiers (scikit-learn) run on the CPU.
        progress: called as ``progress(task, done, total)`` on the long steps: the target's and the shadow's
            training (per epoch), LinkTeller's queries (per node), the attacker's training.
        verbose: show that progress on stderr (as :func:`fit`'s ``verbose``); quiet by default.
        **params: the attack's parameters (``privgraph attacks`` lists them).

    Returns:
        The attack's outcome, an :class:`~privgraph.attacks.AttackResult`: scores, truth, decisions, ``metrics``
        (``attack_auc``, ``attack_advantage``, ``attack_tpr_at_1fpr``, ...) and the threat model.
    """
    with on_device(device), _console(progress, verbose) as hook:
        return _attack(target, attack, truth, seed, model, params, hook)


def _attack(
    target: PrivateRelease | TrainResult,
    attack: str,
    truth: Data,
    seed: int,
    model: str | None,
    params: dict,
    progress: ProgressHook | None = None,
) -> AttackResult:
    """:func:`attack` on the device chosen by the caller."""
    from privgraph.attacks import embedding_target, get_attack, target_from_fit

    attacker = get_attack(attack, **params)
    if isinstance(target, TrainResult):
        if target.context is None:
            raise ValueError("this model was not trained by privgraph.fit: pass the release instead")
        fitted, context = target, target.context
    elif isinstance(target, PrivateRelease):
        method = get_method(target.method, **target.params)
        if method.heterogeneous:
            raise ValueError(
                f"{target.method} is a heterogeneous method: its targets are trained by a task on a registered "
                f"dataset (privgraph attack ATTACK --method {target.method}, --task lp for a link model; or "
                "ExperimentSpec(attack=...)); privgraph.attacks.hetero builds them from a trained model"
            )
        if method.task == Task.EMBEDDING:
            tgt = embedding_target(target.method, truth, target.data.z, target.epsilon)
            attacker.check(tgt)
            return attacker.run(tgt, seed, progress)
        fitted = fit(target, model=model, seed=seed, truth=truth, progress=progress)
        context = fitted.context
    else:
        raise TypeError(f"attack a PrivateRelease or the result of privgraph.fit, got {type(target).__name__}")
    release = context.release
    method = get_method(release.method, **release.params)

    def shadow(aux: Data, shadow_seed: int):
        shadow_release = release_with(method, aux, release.epsilon, seed=shadow_seed)
        trained = fit(
            shadow_release,
            model=context.model,
            seed=shadow_seed,
            truth=aux,
            progress=counts_only(progress),  # the shadow trains on the auditor's graph: no loss shown
            **context.hyperparameters,
        )
        return target_from_fit(
            method,
            trained.context.server_view,
            aux,
            cast(torch.nn.Module, trained.model),  # fit always sets the model
            release.epsilon,
            utility={"accuracy": trained.test_accuracy},
        )

    tgt = target_from_fit(
        method,
        context.server_view,
        _with_truth(context.server_view, release, truth),
        cast(torch.nn.Module, fitted.model),  # fit always sets the model
        release.epsilon,
        shadow,
        {"accuracy": fitted.test_accuracy},
    )
    attacker.check(tgt)
    return attacker.run(tgt, seed, progress)


def _with_truth(view: Release, release: PrivateRelease, truth: Data) -> Data:
    """The auditor's graph: the input's fields, with the release's split where the input has none."""
    data = copy.copy(truth)
    for name in ("train_mask", "val_mask", "test_mask"):
        if name not in data and name in release.data:
            data[name] = release.data[name]
    if view.edge_index is None and "edge_index" not in data:
        raise ValueError("the truth graph has no edge_index")
    return data

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
from privgraph.mechanisms import RandomizedResponse, RandomSource
from privgraph.methods import METHODS, Hyperparameters, LabelReports, Task, get_method, method_class
from privgraph.methods.base import Release, fit_method
from privgraph.progress import ProgressHook, console_progress, counts_only
from privgraph.release import NODE_IDS_NOTE, PrivateRelease, hides_node_set
from privgraph.request import MethodLike, ReleaseRequest
from privgraph.train import TrainResult

if TYPE_CHECKING:
    from privgraph.accounting import Ledger
    from privgraph.attacks import AttackResult


def list_methods(task: str | None = None) -> dict[str, dict[str, Any]]:
    """The registry: for each method name, its description, privacy unit, task, whether it is
    private, the graph type it takes, the fields it protects and declares public, and its
    parameters with defaults and help (:meth:`privgraph.methods.Method.info`).

    Args:
        task: keep only the methods of this task ("node classification", "link prediction",
            "embedding release").
    """
    return {name: cls.info() for name, cls in METHODS.items() if task is None or cls.task.value == task}


def privatize(
    data: Data | HeteroData,
    method: MethodLike | ReleaseRequest,
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    label_epsilon: float | None = None,
    seed: int | None = None,
    rng: RandomSource | None = None,
    progress: ProgressHook | None = None,
    verbose: bool = False,
    device: DeviceLike = None,
    ledger: Ledger | None = None,
    **params: Any,
) -> PrivateRelease:
    """Release ``data`` once with ``method``: builds the :class:`~privgraph.ReleaseRequest` and runs :func:`release`.

    Args:
        data: the user's graph: a ``Data`` (node classification, embeddings) or ``HeteroData``
            (HeteDP), with the fields the method reads (``x``, ``edge_index``, ``y`` and the
            split masks; ``private_edge_mask`` for the edge-level methods; ``sens`` and
            ``private_mask`` for PPCVGAE).
        method: a name from :func:`list_methods` (with ``**params``), its ``Params`` object, a built
            :class:`~privgraph.methods.Method`, or a whole :class:`~privgraph.ReleaseRequest` (then nothing else).
        epsilon: the privacy budget ε (required by private methods, refused by the others).
        delta: the δ of the method's (ε, δ) claim, for the methods that declare one (``Method.delta_param``;
            default: the method's own).
        label_epsilon: also protect the labels of the training and validation nodes by k-ary
            randomized response with this ε (LPGNN's label LDP; node-classification methods):
            the release then holds ``y_reported`` instead of ``y``.  k is the declared public label set,
            ``data.num_classes`` (a registry dataset declares its own; refused without one).
        seed: draw the noise from a generator seeded with it — reproducible, and then anyone
            who knows the seed can remove the noise (the report says so): for research only.
        rng: a ``torch.Generator`` or :class:`~privgraph.SecureRandom`.  Without ``seed`` and
            ``rng`` the noise comes from the OS cryptographic source.
        progress: called as ``progress(task, done, total)`` on long work (with ``status=``, the stage or the
            training loss, where it takes that keyword), as the command line's progress.
        verbose: show that progress on stderr (as :func:`fit`'s ``verbose``: a bar on a terminal, a line every
            10 s when piped); quiet by default.
        device: where the release's training and post-processing run (``"cpu"``, ``"cuda"``,
            ``"cuda:1"``, ``"mps"``, a ``torch.device``; default ``$PRIVGRAPH_DEVICE``, else the CPU).
            The noise is drawn on the CPU from the release's source whatever the device, and the
            release is returned on the CPU (:mod:`privgraph.device`).
        ledger: a :class:`~privgraph.Ledger` of the dataset: the graph is checked against the dataset the
            ledger is bound to (its name and public fingerprint; ``LedgerError`` otherwise) and the method's
            declared spend against its budget, and recorded, before any noise is drawn (``BudgetExceeded``
            if it does not fit); the report's spend is recorded after.
        **params: the method's parameters (``privgraph.list_methods()[method]["parameters"]``); none is named
            like one of the keywords above (``delta`` is the δ of the claim).

    Returns:
        The release, a :class:`~privgraph.PrivateRelease`: the released ``data``, the privacy ``report``
        (one guarantee per unit, ``print(rel.report)``), the status of every input field, details and
        randomness.
    """
    if isinstance(method, ReleaseRequest):
        given = (epsilon, delta, label_epsilon, seed, rng, progress, device, ledger)
        if params or verbose or any(v is not None for v in given):
            raise TypeError("a ReleaseRequest holds the whole request: give it alone")
        return release(data, method)
    with _console(progress, verbose) as hook:
        request = ReleaseRequest.build(
            method,
            epsilon=epsilon,
            delta=delta,
            label_epsilon=label_epsilon,
            seed=seed,
            rng=rng,
            progress=hook,
            device=device,
            ledger=ledger,
            **params,
        )
        return release(data, request)


def release(data: Data | HeteroData, request: ReleaseRequest) -> PrivateRelease:
    """The one function that consumes a :class:`~privgraph.ReleaseRequest` (:func:`privatize`, the
    :class:`~privgraph.transforms.Privatize` transform, the audit, the experiment pipeline and every command
    release through it): the random source resolved, the ledger checked and recorded before the noise and
    completed after (:meth:`privgraph.Ledger.spend`), the method's ``privatize`` run on ``request.device`` (the
    input read on the CPU, where the noise is drawn), and every private guarantee told where its randomness
    came from (the OS source, or a seed that removes the noise)."""
    method, epsilon, label_epsilon, ledger = request.method, request.epsilon, request.label_epsilon, request.ledger
    source, randomness, note = request.randomness.resolve()
    node_ids = data.get("node_ids") if isinstance(data, Data) else None
    if node_ids is not None:  # the map of an edge list's own ids (read_graph): released beside the graph, as given
        data = copy.copy(data)
        del data.node_ids
    with ledger.spend(method, epsilon, label_epsilon, data) if ledger is not None else nullcontext() as receipt:
        with on_device(request.device):
            rel = method.privatize(_on_cpu(data), request, source)
        check_finite_release(rel)
        if receipt is not None:
            receipt.done(rel.report)
    rel.report.guarantees = [g.with_note(note) if g.is_private else g for g in rel.report.guarantees]
    rel.randomness = {**randomness, **rel.randomness}
    if node_ids is not None and not hides_node_set(method.unit):  # node-level DP: the ids would publish the node set
        rel.node_ids = [str(i) for i in node_ids]
        rel.report.guarantees[0] = rel.report.guarantees[0].with_note(NODE_IDS_NOTE)
    return rel


def check_finite_release(rel: PrivateRelease) -> None:
    """Every released tensor (each store's floating fields, the model's weights) is finite: a NaN or ±inf is
    never written under a guarantee (``ValueError``; the noise was drawn, so the ledger keeps the charge)."""
    tensors = []
    for store in rel.data.stores:
        key = getattr(store, "_key", None)  # a HeteroData store's node or edge type
        tensors += [(f"{key}.{name}" if key else name, value) for name, value in store.items()]
    tensors += [(f"model.{key}", value) for key, value in (rel.model_state or {}).items()]
    for name, value in tensors:
        if torch.is_tensor(value) and value.is_floating_point() and not bool(torch.isfinite(value).all()):
            raise ValueError(
                f"{rel.method} produced non-finite values in {name!r}: nothing is released "
                "(check epsilon, the domain and the input's scale)"
            )


def _on_cpu(data: Data | HeteroData) -> Data | HeteroData:
    """``data`` read on the CPU (a copy when a tensor lives elsewhere: the user's object is not moved)."""
    if all(not torch.is_tensor(v) or v.device.type == "cpu" for store in data.stores for v in store.values()):
        return data
    return copy.copy(data).cpu()


def load_release(path: str | Path) -> PrivateRelease:
    """Read a release written by :meth:`PrivateRelease.save`, every file first checked against the size and
    SHA-256 its report records (a file that does not match is refused by name:
    :func:`privgraph.release_files.verify_release`), its tensors with
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
        shadow_release = privatize(aux, method, epsilon=release.epsilon, seed=shadow_seed)
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

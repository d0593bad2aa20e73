"""The command's shared options, declared once: their help texts and panels, and :class:`InputOptions`, the
options that describe the user's own graph (``--input`` and its companions), which :func:`input_options` adds to
run, attack, release and audit."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_type_hints

import typer

from privgraph.cli.console import OutputFormat

METHOD_HELP = "a registered method: `privgraph methods` lists them, `privgraph methods NAME` its parameters"
PARAM_HELP = (
    "a parameter of the method, e.g. --param variant=hybrid, --param sensitive_features=3,17 (a tuple), "
    "--param mcmc_steps=none; `privgraph methods METHOD` lists them"
)


INPUT_HELP = (
    "your own graph instead of --dataset: a torch.save'd PyG Data/HeteroData (.pt), an edge list "
    "(.csv/.tsv/.txt, header optional) or a SciPy sparse adjacency (.npz)"
)
DATA, PRIVACY, METHOD, TRAINING, OUTPUT = "Data", "Privacy", "Method", "Training and evaluation", "Output"


ATTACK_HELP = "an attack: `privgraph attacks` lists them, with their threat models and parameters"


# the options that describe the user's own graph (InputOptions, below: run, attack, release and audit)
INPUT_OPTION = typer.Option(None, "--input", help=INPUT_HELP, rich_help_panel=DATA)
FEATURES_OPTION = typer.Option(None, help="--input's node features (.npy or .csv)", rich_help_panel=DATA)
LABELS_OPTION = typer.Option(None, help="--input's node labels (.npy, .csv or .txt)", rich_help_panel=DATA)
PRIVATE_EDGES_OPTION = typer.Option(
    None, "--private-edges", help="--input's private-edge mask (.npy, one 0/1 per edge)", rich_help_panel=DATA
)
PRIVATE_COLUMN_OPTION = typer.Option(
    None,
    "--private-column",
    help="the edge list's 0/1 column marking private edges (name, or index without header)",
    rich_help_panel=DATA,
)
NUM_CLASSES_OPTION = typer.Option(
    None,
    "--num-classes",
    min=2,
    help="--input's public label set {0..K-1}: label LDP's k (--label-epsilon), never read from the labels",
    rich_help_panel=DATA,
)
DOMAIN_OPTION = typer.Option(None, help="the features' declared domain LO,HI (e.g. 0,1)", rich_help_panel=DATA)
CLIP_OPTION = typer.Option(
    False, "--clip", help="clip --input's features into --domain instead of refusing", rich_help_panel=DATA
)
DIRECTED_OPTION = typer.Option(
    False,
    "--directed",
    help="keep an --input edge list (.csv/.tsv/.txt/.edges/.npz) as "
    "given, a directed graph; by default it is an undirected graph and the reverse of "
    "each edge listed one way is added (said in the report); the link-level methods "
    "refuse a directed graph",
    rich_help_panel=DATA,
)
TRUST_PICKLE_OPTION = typer.Option(
    False,
    "--trust-pickle",
    help="unpickle a .pt --input with "
    "torch.load(weights_only=False): the file can run any code, so only for a file "
    "you trust (the report says it was trusted); by default only tensors, plain "
    "values and PyG's data classes are read",
    rich_help_panel=DATA,
)
# how --input's text files are read (privgraph.data.read_graph's comment, strict, drop_unknown, missing_label)
COMMENT_OPTION = typer.Option(
    None,
    "--comment",
    help="skip --input's text lines starting with this prefix (e.g. '#'); none by default: a # line is data",
    rich_help_panel=DATA,
)
STRICT_OPTION = typer.Option(
    False,
    "--strict",
    help="refuse an --input edge list's repeated rows instead of merging them (said on stderr)",
    rich_help_panel=DATA,
)
DROP_UNKNOWN_OPTION = typer.Option(
    False,
    "--drop-unknown",
    help="drop the --input edges naming ids of no node-table row (counted) instead of refusing",
    rich_help_panel=DATA,
)
MISSING_LABEL_OPTION = typer.Option(
    None,
    "--missing-label",
    help="the --labels value of a node without a label (e.g. NA; an empty cell is one too)",
    rich_help_panel=DATA,
)
LABEL_COLUMN_OPTION = typer.Option(
    None,
    "--label-column",
    help="the --features node table's column (by header name) holding the labels, instead of --labels",
    rich_help_panel=DATA,
)
DATA_ROOT_OPTION = typer.Option(None, help="raw-data folder (default: $PRIVGRAPH_DATA)", rich_help_panel=DATA)
DATASET_OPTION = typer.Option("sbm", help="a dataset (`privgraph datasets`), or sbm (synthetic)", rich_help_panel=DATA)


SPLIT_OPTION = typer.Option(
    "random",
    help="random (seeded stratified 50/25/25; heterogeneous graphs: the "
    "dataset's own split) or public (Planetoid); heterogeneous node classification: "
    "hetedp (the HeteDP authors' random 20/10/70)",
    rich_help_panel=DATA,
)
PRIVATE_RATIO_OPTION = typer.Option(
    None,
    "--private-ratio",
    help="mark this fraction ρ of the edges private at random (edge-level methods)",
    rich_help_panel=DATA,
)


def epsilon_option(help: str) -> Any:
    """``--epsilon`` of every command: numbers or ``none`` (:func:`~privgraph.cli.checks._epsilons`), several where
    the command runs several settings (``--epsilon 1 2 4``), one where it releases once (release, audit)."""
    return typer.Option([], "--epsilon", help=help, rich_help_panel=PRIVACY)


EPSILON_OPTION = epsilon_option(
    "privacy budget(s) ε, e.g. --epsilon 1 2 4 8 (default 1 for a private method; "
    "none: without noise where ε is optional)"
)
LABEL_EPSILON_OPTION = typer.Option(
    None,
    "--label-epsilon",
    help="also protect the training and validation labels by randomized response with this ε (label LDP)",
    rich_help_panel=PRIVACY,
)
SECURE_OPTION = typer.Option(
    False, help="draw noise from the OS cryptographic source (not reproducible)", rich_help_panel=PRIVACY
)
PARAM_OPTION = typer.Option([], "--param", help=PARAM_HELP, rich_help_panel=METHOD)
RAY_ADDRESS_HELP = "join this Ray cluster (`ray start --head` prints it)"
MODEL_OPTION = typer.Option(None, help="gcn, sage, gat or mlp (default: the method's own)", rich_help_panel=TRAINING)
TRIALS_OPTION = typer.Option(10, min=1, rich_help_panel=TRAINING)
SEED_OPTION = typer.Option(0, rich_help_panel=TRAINING)
HPARAM_OPTION = typer.Option(
    [],
    "--set",
    help="a training hyperparameter of the task's model, e.g. --set "
    "kprop_steps=8 (the method's own settings are --param)",
    rich_help_panel=TRAINING,
)
DB_OPTION = typer.Option(
    Path("results/privgraph.jsonl"), help="results store (JSON lines, one trial a line)", rich_help_panel=OUTPUT
)
FORMAT_OPTION = typer.Option(
    OutputFormat.table,
    "--format",
    help="table, json (everything) or tsv (the table, tab-separated)",
    rich_help_panel=OUTPUT,
)
DIAGNOSTICS_OPTION = typer.Option(
    False,
    "--diagnostics",
    help="keep each release's details (exact counts, clipping rates, within-bound bits) in the results store: "
    "data-dependent, not covered by the guarantee — for the curator's own copy",
    rich_help_panel=OUTPUT,
)
DEVICE_HELP = "cpu, cuda, cuda:N or mps; default $PRIVGRAPH_DEVICE, else cpu"
DEVICE_OPTION = typer.Option(None, "--device", help=DEVICE_HELP, rich_help_panel=TRAINING)


@dataclass(frozen=True)
class InputOptions:
    """The user's own graph (``--input``) and what describes it; ``--data-root`` for a named dataset."""

    input: Path | None = None
    features: Path | None = None
    labels: Path | None = None
    private_edges: Path | None = None
    private_column: str | None = None
    domain: str | None = None
    num_classes: int | None = None
    clip: bool = False
    directed: bool = False
    trust_pickle: bool = False
    comment: str | None = None
    strict: bool = False
    drop_unknown: bool = False
    missing_label: str | None = None
    label_column: str | None = None
    data_root: Path | None = None

    def dataset(self, dataset: str | None) -> str | None:
        """The name the results go under: the file's stem with ``--input``, else ``dataset``."""
        return self.input.stem if self.input else dataset

    def named(self, dataset: str | None) -> str | None:
        """``dataset``, the name the catalogue checks; None with ``--input``."""
        return None if self.input else dataset

    @property
    def root(self) -> str | None:
        """``--data-root`` as the spec takes it."""
        return str(self.data_root) if self.data_root else None


# each of InputOptions' fields: its command-line option (the order is --help's)
_INPUT_OPTIONS: dict[str, Any] = {
    "input": INPUT_OPTION,
    "features": FEATURES_OPTION,
    "labels": LABELS_OPTION,
    "private_edges": PRIVATE_EDGES_OPTION,
    "private_column": PRIVATE_COLUMN_OPTION,
    "domain": DOMAIN_OPTION,
    "num_classes": NUM_CLASSES_OPTION,
    "clip": CLIP_OPTION,
    "directed": DIRECTED_OPTION,
    "trust_pickle": TRUST_PICKLE_OPTION,
    "comment": COMMENT_OPTION,
    "strict": STRICT_OPTION,
    "drop_unknown": DROP_UNKNOWN_OPTION,
    "missing_label": MISSING_LABEL_OPTION,
    "label_column": LABEL_COLUMN_OPTION,
    "data_root": DATA_ROOT_OPTION,
}


def input_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """A command that takes ``inputs: InputOptions`` as typer sees it: the parameter is replaced, in its
    place, by :class:`InputOptions`' options (the same names, types, defaults and help as where each
    command declared them), gathered back into one :class:`InputOptions` for the call."""
    signature = inspect.signature(command, eval_str=True)
    hints = get_type_hints(InputOptions)
    params: list[inspect.Parameter] = []
    for param in signature.parameters.values():
        if param.name != "inputs":
            params.append(param)
            continue
        params += [
            inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=option, annotation=hints[name])
            for name, option in _INPUT_OPTIONS.items()
        ]

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        inputs = InputOptions(**{name: kwargs.pop(name) for name in _INPUT_OPTIONS})
        return command(inputs=inputs, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper

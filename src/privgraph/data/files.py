"""The user's input files, checked before they are read: the suffixes each role accepts, an existing
regular file, and :class:`GraphInputError` (one line).  Torch-free, so the command line refuses a
missing or unsupported ``--input`` before loading torch; :mod:`privgraph.data.tables` parses the
tables, :mod:`privgraph.data.safe_load` loads torch files and :mod:`privgraph.data.io` reads a graph
from them."""

from __future__ import annotations

from pathlib import Path

EDGE_LIST_SUFFIXES = (".csv", ".tsv", ".txt", ".edges")
TORCH_SUFFIXES = (".pt", ".pth")
GRAPH_SUFFIXES = TORCH_SUFFIXES + EDGE_LIST_SUFFIXES + (".npz",)
FEATURE_SUFFIXES = (".npy", ".csv", ".tsv", ".txt")
LABEL_SUFFIXES = (".npy", ".csv", ".tsv", ".txt")
MASK_SUFFIXES = (".npy",)


class GraphInputError(ValueError):
    """A graph input file is missing, unreadable or malformed; the message is one line."""


def input_error(message: str) -> GraphInputError:
    """A :class:`GraphInputError` whose message is ``message`` on one line."""
    return GraphInputError(" ".join(str(message).split("\n")).strip())


def existing_file(path: str | Path, role: str, suffixes: tuple[str, ...]) -> Path:
    """``path`` as an existing regular file with a supported suffix."""
    path = Path(path).expanduser()
    if path.suffix.lower() not in suffixes:
        shown = f"'{path.suffix}'" if path.suffix else "no suffix"
        raise input_error(f"unsupported {role} file {path} ({shown}): use one of {', '.join(suffixes)}")
    if not path.exists():
        raise input_error(f"{role} file not found: {path}")
    if not path.is_file():
        raise input_error(f"{role} file {path} is not a regular file")
    return path


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type's name when it has none)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__

"""How a release's files reach the disk: checked before any noise, written atomically, verified when read.

Targets (:func:`check_output`, run by ``privgraph release`` and :func:`~privgraph.experiments.release.release_file`
before the graph is read and again before any noise is drawn or any budget charged, and by
:meth:`~privgraph.release.PrivateRelease.save` before it writes): ``-`` (a release is several files, not a
stream), a name that is only an extension (``.pt``), a missing or unwritable folder, a file name longer than the
folder allows (the longest the release may write, e.g. ``NAME.edges.csv`` or the backup ``.NAME.model.pt.prev``),
a symbolic link (never followed, even dangling) or anything but a regular file, an existing release unless
``overwrite`` (``--force``), and a folder with no room for the report are refused, one line each; ``save`` also
refuses a ``pt`` release whose tensors exceed the free space (:func:`check_room`) before it writes.

Writing (:class:`Staging`).  Every file (the data files, the id map, a model's weights, the report) is written to
a temporary file in the target's folder, flushed and ``fsync``-ed, and its size and SHA-256 (and a csv table's
rows: its lines after the header) go into the report's ``checksums``.  Then, with SIGINT/SIGTERM deferred: each
file that will be replaced gets a hard link ``.NAME.prev`` (the previous content; renamed aside where links are not
supported), the data files are renamed into place, then the report last, the folder ``fsync``-ed between the
steps; then the backups and the previous release's files that the new one lacks are removed.  The report's rename
is the commit: before it the previous report is in place, after it the new one.

Why this order (and not data files under new unique names referenced by the report): ``OUTPUT`` must stay the data
(``torch.load(OUTPUT)``) and ``OUTPUT.edges.csv`` a table, for recipients without privgraph, so the names cannot
change between releases; several names cannot be replaced by one atomic rename, so the report is the commit point
and every file is checked against it by hash.  Until the report is renamed, each file the previous report lists
holds its previous content either under its own name or in its ``.NAME.prev`` (the link is made before the
replacement, removed after the commit): :func:`verify_release` (``load_release``) reads that previous release, a
mix is never read.  A failure (an exception, ENOSPC: one :class:`NoSpaceError` line) or a deferred signal before
the commit undoes the renames and removes the temporary files: the previous release stays as it was.  A process
killed outright (SIGKILL, power loss) between the renames leaves the previous report with some files already
new and their backups: it still reads as the previous release through privgraph, while a reader that opens
``OUTPUT`` directly sees a file whose SHA-256 is not the report's (check it: ``sha256sum``).  It leaves at worst
temporary files (``.NAME….tmp``), backups and the files it added (unlisted) beside the release; the next save over
it settles them first (:func:`settle`).  Unlisted files and temporary files are never read.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

# the suffixes of the files a release may write beside OUTPUT (privgraph.release_formats' module docstring)
SIBLING_SUFFIXES = (".json", ".ids.csv", ".model.pt")
CSV_SUFFIXES = (".edges.csv", ".nodes.csv", ".graph.csv")
BACKUP = ".prev"  # .NAME.prev: a replaced file's previous content until the new report is in place
BUFFER = 1 << 20  # bytes written at once to a temporary file
MIN_FREE = 64 * 1024  # bytes: below this the folder cannot hold even the report
_EXTENSION_ONLY = re.compile(r"\.[A-Za-z0-9]{1,8}")


class OutputError(ValueError):
    """A target that cannot take a release (:func:`check_output`): refused before anything is written."""


class MissingFolder(OutputError, FileNotFoundError):
    """The target's folder does not exist."""


class TargetExists(OutputError, FileExistsError):
    """A file of the release exists and ``overwrite`` was not given."""


class NoSpaceError(OSError):
    """The folder's file system filled up while a release was written: nothing was replaced."""

    def __str__(self) -> str:
        return str(self.strerror)


class DamagedRelease(ValueError):
    """A file of a release does not match its report (missing, another size, another SHA-256)."""


def candidate_names(name: str, file_format: str) -> list[str]:
    """The file names a release of ``name`` in ``file_format`` may write, before its data are known (a
    heterogeneous csv release adds one table per type, checked by ``save``)."""
    data = [name + s for s in CSV_SUFFIXES] if file_format == "csv" else [name]
    return [*data, *(name + s for s in SIBLING_SUFFIXES)]


def check_output(
    path: str | Path, *, file_format: str = "pt", overwrite: bool = False, mkdir: bool = False, names: Any = None
) -> Path:
    """Refuse a target that cannot take a release (module docstring), before any noise: ``names`` are the files
    it writes (default :func:`candidate_names`).  Returns the path."""
    path = Path(path)
    if str(path) == "-":
        raise OutputError(
            "cannot write a release to '-': a release is several files (the data and its report OUTPUT.json), not "
            "a stream; give a file name"
        )
    name = path.name
    if name in ("", ".", "..") or _EXTENSION_ONLY.fullmatch(name):
        raise OutputError(f"cannot write {path}: {name!r} is no file name (give the release a name, e.g. graph.pt)")
    folder = path.parent
    existing = _existing_ancestor(folder)
    if not folder.is_dir():
        if not mkdir or existing is None or not existing.is_dir():
            raise MissingFolder(f"cannot write {path}: the folder {folder} does not exist")
    if existing is None or not os.access(existing, os.W_OK | os.X_OK):
        raise OutputError(f"cannot write {path}: the folder {existing or folder} is not writable")
    names = list(names) if names is not None else candidate_names(name, file_format)
    limit = _name_max(existing)
    longest = max([*names, name], key=len)
    if len(os.fsencode(f".{longest}{BACKUP}")) > limit:
        raise OutputError(
            f"cannot write {path}: the release's file {longest} (with its backup .{longest}{BACKUP} while it replaces "
            f"a release) is longer than the {limit} bytes a file name may have here; give a shorter name"
        )
    for sibling in names:
        target = path.with_name(sibling)
        if target.is_symlink():
            raise OutputError(
                f"cannot write {target}: it is a symbolic link; privgraph does not write through links (give the "
                "link's target, or remove the link)"
            )
        if target.exists() and not target.is_file():
            raise OutputError(f"cannot write {target}: it is {_kind(target)}, not a release's file")
        if target.exists() and not overwrite:
            raise TargetExists(
                f"cannot write {target}: it exists; a release is never replaced silently (--force, or "
                "save(..., overwrite=True), replaces it)"
            )
    if existing.is_dir() and shutil.disk_usage(existing).free < MIN_FREE:
        where = _mount(existing)
        raise NoSpaceError(errno.ENOSPC, f"cannot write {path}: no space left on {where}: nothing was written")
    return path


def check_room(path: Path, need: int) -> None:
    """Refuse before writing when ``path``'s folder has less than ``need`` bytes (and :data:`MIN_FREE`) free: a
    release that cannot fit does not fill the disk for everyone else first."""
    free = shutil.disk_usage(path.parent).free
    if free < need + MIN_FREE:
        raise NoSpaceError(
            errno.ENOSPC,
            f"cannot write {path}: no space left on {_mount(path.parent)} (the release takes at least "
            f"{need / 2**20:.1f} MiB, {free / 2**20:.1f} MiB free): nothing was written",
        )


def _existing_ancestor(folder: Path) -> Path | None:
    for p in [folder, *folder.parents]:
        if p.exists():
            return p
    return None


def _name_max(folder: Path) -> int:
    try:
        return os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        return 255


def _kind(path: Path) -> str:
    mode = path.stat().st_mode
    if stat.S_ISDIR(mode):
        return "a folder"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"


def _mount(folder: Path) -> str:
    """The mount point of ``folder``'s file system (what "no space left on" names)."""
    p = folder.resolve()
    while not os.path.ismount(p) and p != p.parent:
        p = p.parent
    return str(p)


def is_full(err: BaseException) -> bool:
    return isinstance(err, OSError) and err.errno in (errno.ENOSPC, errno.EDQUOT)


class _Fd(io.RawIOBase):
    """A temporary file written with ``os.write``, keeping the first ``OSError``: ``torch.save`` turns it into a
    RuntimeError (``enforce fail … unexpected pos``), which :meth:`Staging.torch_save` replaces by the real one."""

    def __init__(self, fd: int) -> None:
        self.fd, self.error = fd, None

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def write(self, b: Any) -> int:
        try:
            return os.write(self.fd, b)
        except OSError as err:
            self.error = self.error or err
            raise

    def seek(self, offset: int, whence: int = 0) -> int:
        return os.lseek(self.fd, offset, whence)

    def tell(self) -> int:
        return os.lseek(self.fd, 0, os.SEEK_CUR)

    def fileno(self) -> int:
        return self.fd

    def close(self) -> None:
        if not self.closed:
            super().close()
            os.close(self.fd)


class Staging:
    """One release's files written under temporary names beside their targets, then committed (module docstring);
    as a context manager, every temporary file is removed when the block raises."""

    def __init__(self, path: Path, *, overwrite: bool) -> None:
        self.path, self.folder, self.overwrite = path, path.parent, overwrite
        self.temps: dict[Path, Path] = {}  # target -> temporary file
        self.checksums: dict[str, dict[str, Any]] = {}
        self.committed = False

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, kind, err, tb) -> None:
        for tmp in self.temps.values():
            with contextlib.suppress(OSError):
                tmp.unlink()
        if err is not None and is_full(err) and not self.committed:
            raise NoSpaceError(
                errno.ENOSPC, f"cannot write {self.path}: no space left on {_mount(self.folder)}: nothing was replaced"
            ) from None

    def open(self, target: Path) -> io.BufferedWriter:
        """A new temporary file in the target's folder (mode as ``open`` would give), to write ``target``."""
        fd, name = tempfile.mkstemp(dir=self.folder, prefix=f".{target.name[:24]}.", suffix=".tmp")
        self.temps[target] = Path(name)
        mask = os.umask(0)
        os.umask(mask)
        try:
            os.fchmod(fd, 0o666 & ~mask)
        except BaseException:
            os.close(fd)
            raise
        return io.BufferedWriter(_Fd(fd), BUFFER)

    def torch_save(self, obj: Any, target: Path) -> None:
        """``torch.save`` to ``target``'s temporary file, a full disk raised as the ``OSError`` it is."""
        import torch

        with self.open(target) as f:
            try:
                torch.save(obj, f)
            except RuntimeError:
                error = cast(_Fd, f.raw).error
                if error is not None:
                    raise error from None
                raise

    def seal(self) -> dict[str, dict[str, Any]]:
        """``fsync`` every temporary file and record its size, SHA-256 and (csv) rows, by target name."""
        for target, tmp in self.temps.items():
            digest, size, lines = hashlib.sha256(), 0, 0
            with tmp.open("rb+") as f:
                os.fsync(f.fileno())
                while chunk := f.read(1 << 20):
                    digest.update(chunk)
                    size += len(chunk)
                    lines += chunk.count(b"\n")
            entry: dict[str, Any] = {"bytes": size, "sha256": digest.hexdigest()}
            if target.name.endswith(".csv"):
                entry["rows"] = max(lines - 1, 0)
            self.checksums[target.name] = entry
        return self.checksums

    def commit(self, report: Path, meta: dict[str, Any]) -> None:
        """Write the report (with the checksums), then rename every file into place, the report last."""
        meta = {**meta, "checksums": self.checksums}
        with self.open(report) as f:
            f.write(json.dumps(meta, indent=2).encode())
            f.flush()
            os.fsync(f.fileno())
        _fsync_dir(self.folder)
        names = {t.name for t in self.temps}
        with _deferred_signals():
            check_output(self.path, overwrite=self.overwrite, names=names)
            previous = _previous_files(report)
            if self.overwrite:
                settle(self.path)
            backups = self._replace(report)
            _fsync_dir(self.folder)  # the commit durable before its backups go
            # the backups, and the previous release's files that the new one lacks
            for stale in [*backups, *(self.path.with_name(n) for n in previous - names)]:
                with contextlib.suppress(OSError):
                    stale.unlink()
        _fsync_dir(self.folder)

    def _replace(self, report: Path) -> list[Path]:
        """Back up the files in place, rename the new ones over them, the report last (the commit); before the
        commit, any failure puts every file back as it was.  Returns the backups."""
        backups: dict[Path, Path] = {}
        done: list[Path] = []
        order = [t for t in self.temps if t != report] + [report]
        try:
            for target in order:
                if target.exists():
                    backups[target] = _backup(target)
            _fsync_dir(self.folder)
            for target in order:
                if target == report:
                    _fsync_dir(self.folder)
                os.replace(self.temps[target], target)
                done.append(target)
            self.committed = True
        except BaseException:
            self._undo(done, backups)
            raise
        finally:
            self.temps = {t: p for t, p in self.temps.items() if t not in done}
        return list(backups.values())

    def _undo(self, done: list[Path], backups: dict[Path, Path]) -> None:
        """Every file back from its backup (a file new to the folder removed): the release before the save."""
        with contextlib.suppress(OSError):
            for target in reversed(done):
                if target in backups:
                    os.replace(backups.pop(target), target)
                else:
                    target.unlink()
            for target, backup in backups.items():
                if target.exists():
                    backup.unlink()
                else:  # renamed aside (no hard links)
                    os.replace(backup, target)
            _fsync_dir(self.folder)


def backup_path(target: Path) -> Path:
    return target.with_name(f".{target.name}{BACKUP}")


def _backup(target: Path) -> Path:
    """``.NAME.prev``: a hard link to ``target`` (its content stays when ``target`` is replaced), or ``target``
    renamed aside where the file system has no links."""
    backup = backup_path(target)
    backup.unlink(missing_ok=True)  # settled before: a backup left here is not needed
    try:
        os.link(target, backup)
    except OSError as err:
        if err.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOTSUP):
            raise
        os.rename(target, backup)
    return backup


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def _deferred_signals() -> Iterator[None]:
    """SIGINT and SIGTERM held back during the renames (main thread only), then delivered."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    held = [s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) is not None]
    handlers = {s: signal.signal(s, lambda sig, _frame: caught.append(sig)) for s in held}
    try:
        yield
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
        for s in dict.fromkeys(caught):
            signal.raise_signal(s)


def _report_of(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def _read_report(report: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads(report.read_text())
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def _previous_files(report: Path) -> set[str]:
    """The files the release in place lists (its checksums, else its ``files``), plain names beside it."""
    meta = _read_report(report) or {}
    names = meta.get("checksums") or dict.fromkeys(meta.get("files") or [])
    return {n for n in names if isinstance(n, str) and Path(n).name == n and n not in ("", ".", "..")}


def resolve(path: Path, meta: dict[str, Any]) -> dict[str, Path]:
    """Where each file the report lists holds the content it records: under its own name, or in its backup
    while a save was interrupted before its commit (module docstring).  :class:`DamagedRelease` names the first
    file that matches neither."""
    sums = meta.get("checksums")
    if not isinstance(sums, dict):
        return {}
    out = {}
    report = _report_of(path)
    for name, entry in sums.items():
        if not isinstance(name, str) or Path(name).name != name or not isinstance(entry, dict):
            raise DamagedRelease(f"{report} lists a file {name!r} that is not beside it: not a privgraph report")
        target = path.with_name(name)
        found = [p for p in (target, backup_path(target)) if p.is_file() and not p.is_symlink()]
        matched = next((p for p in found if _matches(p, entry)), None)
        if matched is None:
            why = "is missing" if not found else _mismatch(found[0], entry)
            raise DamagedRelease(
                f"{target} {why}: it does not match the release's report {report.name} (an interrupted copy or an "
                "altered file); the release is not read"
            )
        out[name] = matched
    return out


def _digest(p: Path) -> tuple[int, str]:
    h, size = hashlib.sha256(), 0
    with p.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return size, h.hexdigest()


def _matches(p: Path, entry: dict[str, Any]) -> bool:
    return p.stat().st_size == entry.get("bytes") and _digest(p)[1] == entry.get("sha256")


def _mismatch(p: Path, entry: dict[str, Any]) -> str:
    size = p.stat().st_size
    if size != entry.get("bytes"):
        return f"has {size} bytes, its report says {entry.get('bytes')}"
    return "has another SHA-256 than its report records"


def settle(path: Path) -> None:
    """After a save killed before its commit: each file of the release in place back from its backup where it
    was replaced (the release :func:`resolve` reads), the backups removed, and the files the killed save added
    beside it that its report does not list (the report's backup tells a save was interrupted)."""
    report = _report_of(path)
    meta = _read_report(report)
    located: dict[str, Path] = {}
    if meta is not None:
        with contextlib.suppress(DamagedRelease):
            located = resolve(path, meta)
    interrupted = backup_path(report).is_file()
    listed = {*located, *_previous_files(report), report.name}
    if meta is not None and "checksums" not in meta:  # a report written before the checksums: its model too
        listed.add(path.name + ".model.pt")
    for name in listed | {*candidate_names(path.name, "pt"), *candidate_names(path.name, "csv")}:
        target = path.with_name(name)
        backup = backup_path(target)
        if located.get(name) == backup:
            os.replace(backup, target)
        elif backup.is_file() and not backup.is_symlink():
            backup.unlink()
        if interrupted and name not in listed and target.is_file() and not target.is_symlink():
            target.unlink()


def verify_release(path: str | Path) -> tuple[dict[str, Any], dict[str, Path]]:
    """The report of the release at ``path`` and where each of its files is, after checking every file against
    the report's size and SHA-256 (:func:`resolve`; a report written before checksums is read as it is)."""
    path = Path(path)
    report = _report_of(path)
    if not report.is_file():
        raise ValueError(f"{path} has no {report.name} beside it: not a release written by privgraph")
    meta = _read_report(report)
    if meta is None:
        raise ValueError(f"{report} is not a privgraph release report (not JSON)")
    return meta, resolve(path, meta)


__all__ = [
    "DamagedRelease",
    "MissingFolder",
    "NoSpaceError",
    "OutputError",
    "Staging",
    "TargetExists",
    "candidate_names",
    "check_output",
    "check_room",
    "settle",
    "verify_release",
]

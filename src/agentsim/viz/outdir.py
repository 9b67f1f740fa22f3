"""Result folders and output files: checked before the work, written whole, replaced whole.

A *result folder* (``run --out``, ``sweep --out``, ``replay --out``) is written
into a hidden temporary folder next to the target and renamed into place only
when every file is complete. It carries a marker file, :data:`MARKER`, that says
agentsim wrote it: a later write to the same path replaces such a folder as a
whole (no file of the earlier run survives), while a non-empty folder without
the marker is refused, and so are ``/``, the home folder and the folder you are
working in. :func:`check_folder` and :func:`check_file` run the same checks (is
the path a file, is its parent writable) *before* a long simulation, so a typo
costs a second, not the run.

A single output file (``report -o``, ``calibrate -o``, ``stream -o``) is written by :func:`write_file`
into a temporary file *beside it* (same folder, so same file system: a file directly in a mount point
or a volume root such as ``/out/report.html`` or ``/dev/shm/x.html`` works) and renamed over it. Where
the rename cannot work (the target is itself a mount, e.g. a bind-mounted file, or the temporary
file lands on another device: ``EXDEV``, ``EBUSY``), the file is written directly and a note says so
(logger ``agentsim.output``; the command line prints it). ``-o -`` and ``-o /dev/stdout`` write to
standard output. Every check (not a folder, not a special file unless it is stdout, a name the file
system can hold, temporary names included, a folder that accepts new files) runs before the work.

**Never over an input.** Every check and write takes the files the command read (``inputs``: the scenario,
every file it ``extends:``, its profiles and empirical CSV files, a replay config, session and measurement
files, provider listings). An output file that *is* one of them (by identity: the same device and inode,
so through symbolic links, ``..`` and hard links alike) is refused, and so is a result folder that holds
one (``run results/x/scenario.resolved.yaml --out results/x`` would delete its own input). The error
names both paths (an :class:`OutputError`, exit 2), before the work.

**Replaced whole at every instant.** A single file is renamed over its target (one system call). A
result folder is swapped with the earlier one in one system call (:func:`agentsim.viz.atomic.exchange`,
Linux ``renameat2(RENAME_EXCHANGE)``), with a fallback of two renames that no SIGINT or SIGTERM can
split where that is unavailable. A set of files written into an existing folder (:func:`write_files`:
``fit``, ``profiles import``) is staged in a hidden folder inside it and committed by a journal
(:func:`agentsim.viz.atomic.commit_files`): SIGINT and SIGTERM wait for the commit; a SIGKILL in the
middle leaves the journal, and the next write there finishes the commit first. What each signal can
leave is listed in docs/cli.md ("Output files").

Default folder names derived from a scenario's name go through :func:`slug`: no path separator,
no ``..``, no NUL, never absolute, so a scenario file cannot direct a write outside the folder it
names (``results/<slug>-sweep``).

While files are written, SIGTERM (what ``timeout``, ``kill`` and CI
cancellation send) is turned into :class:`KeyboardInterrupt`, so the temporary
folder is removed as it is on Ctrl-C. Every failure is an :class:`OutputError`
whose message names the path and the fix (the command line exits with code 2).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from agentsim.viz.atomic import (
    STAGED,
    commit_files,
    deferred_signals,
    exchange,
    recover_files,
    remove_stale,
    restore_folder,
)

__all__ = [
    "MARKER",
    "STDOUT_NAMES",
    "Inputs",
    "OutputError",
    "check_file",
    "check_folder",
    "default_folder",
    "is_stdout",
    "recover",
    "shown",
    "sigterm_interrupts",
    "slug",
    "write_file",
    "write_files",
    "write_folder",
]

log = logging.getLogger("agentsim.output")

#: output-file names that mean standard output
STDOUT_NAMES = ("-", "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1")
_TMP_STEM = 32  # characters of the target's name kept in a temporary sibling's name (so it always fits)
_TMP_EXTRA = 80  # what a temporary name adds at most: "." + stem + "~" + hash + ".agentsim-tmp-" + pid + "-" + random

MARKER = ".agentsim-result"
_PROBE = ".agentsim-probe-"  # an empty folder made and removed to see that a folder takes new files
_MARKER_TEXT = (
    "This folder was written by agentsim. Writing results to it again replaces the folder as a whole\n"
    "(every file in it, including files you added). Delete this file to stop agentsim from doing so.\n"
)


class OutputError(Exception):
    """A result folder or output file that cannot be written: the message names the path and the fix."""


def _existing_ancestor(path: Path) -> Path:
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def _check_writable_parent(target: Path, what: str) -> None:
    """The folder that will hold ``target`` exists (or can be made) and accepts new files."""
    parent = target.parent
    base = _existing_ancestor(parent)
    if not base.is_dir():
        raise OutputError(f"{what} {target}: {base} is a file, not a folder; choose a path under a folder")
    try:
        remove_stale(base, _PROBE)  # what a killed check left
        with deferred_signals():  # made and removed: a Ctrl-C in between leaves nothing behind
            os.rmdir(tempfile.mkdtemp(prefix=f"{_PROBE}{os.getpid()}-", dir=base))
    except OSError as exc:
        raise OutputError(
            f"{what} {target}: cannot create files in {base} ({exc.strerror or exc}); choose a folder you can write to"
        ) from None


def is_stdout(path: str | os.PathLike) -> bool:
    """``-`` or ``/dev/stdout`` (and its aliases): the output goes to standard output."""
    return os.fspath(path) in STDOUT_NAMES


def shown(path: str | os.PathLike) -> str:
    """How a message names an output path: ``standard output`` for ``-``."""
    return "standard output" if is_stdout(path) else os.fspath(path)


def slug(name: str, default: str = "scenario", limit: int = 64) -> str:
    """A file-name-safe form of a user-given name: letters, digits, ``_``, ``-`` and inner dots only.

    No path separator, no ``..``, no NUL, never absolute or hidden: ``../../escaped`` gives ``escaped``,
    ``/etc/passwd`` gives ``etc-passwd``. Empty results become ``default``.
    """
    text = re.sub(r"[^\w.-]+", "-", str(name)).replace("..", "-")
    text = re.sub(r"-{2,}", "-", text).strip("-.")[:limit].strip("-.")
    return text or default


def default_folder(name: str, what: str) -> Path:
    """``results/<slug of name>-<what>``: a default result folder, always under ``results/`` here."""
    return Path("results") / f"{slug(name)}-{what}"


def _tmp_prefix(name: str, kind: str, pid: bool = True) -> str:
    """``.NAME.agentsim-KIND-PID-``: a temporary sibling's name, with its writer's process id (so a later write
    removes only what a process that no longer runs left: :mod:`agentsim.viz.atomic`); ``pid=False``: the
    part before the process id."""
    stem = name if len(name) <= _TMP_STEM else name[:_TMP_STEM] + "~" + hashlib.sha1(os.fsencode(name)).hexdigest()[:8]
    base = f".{stem}.agentsim-{kind}-"  # (a long name: cut, and told apart from another with the same start)
    return f"{base}{os.getpid()}-" if pid else base


Inputs = Iterable[str | os.PathLike]


def _identity(path: str | os.PathLike) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    return st.st_dev, st.st_ino


def _clash(target: Path, inputs: Inputs, folder: bool) -> Path | None:
    """The input that ``target`` is (the same file, whatever the path), or, for a ``folder`` replaced whole,
    the first input inside it; None when there is none."""
    here = _identity(target)
    if here is None:  # nothing there yet: it cannot be an input
        return None
    for item in inputs:
        if _identity(item) == here:
            return Path(item)
        if folder:
            for up in Path(os.path.realpath(item)).parents:
                if _identity(up) == here:
                    return Path(item)
    return None


def _check_inputs(target: Path, inputs: Inputs, what: str, folder: bool = False) -> None:
    found = _clash(target, inputs, folder)
    if found is None:
        return
    if folder:
        raise OutputError(
            f"{what} {target} holds {found}, which this command reads; replacing the folder would delete it: "
            "choose another folder"
        )
    same = os.path.abspath(found) == os.path.abspath(target)
    raise OutputError(
        f"{what} {target} is {'' if same else f'the same file as {found}, '}a file this command reads; writing "
        "it would destroy that input: choose another file name"
    )


def _check_name(target: Path, what: str) -> None:
    """The target's name, and the longest temporary name beside it, fit the file system's limits."""
    base = _existing_ancestor(target.parent if str(target.parent) else Path("."))
    try:
        name_max = os.pathconf(base, "PC_NAME_MAX")
        path_max = os.pathconf(base, "PC_PATH_MAX")
    except (OSError, ValueError):  # pragma: no cover - every POSIX file system answers
        name_max, path_max = 255, 4096
    size = len(os.fsencode(target.name))
    if size > name_max:
        raise OutputError(
            f"{what} {target}: the name is {size} bytes long, and the file system there holds names of at "
            f"most {name_max}; choose a shorter name"
        )
    full = len(os.fsencode(os.path.abspath(target))) + _TMP_EXTRA
    if full > path_max:
        raise OutputError(
            f"{what} {target}: the path is too long for the file system ({full} bytes with the temporary "
            f"name written beside it; at most {path_max}); choose a shorter path"
        )


def _is_result_folder(path: Path) -> bool:
    return (path / MARKER).is_file()


def check_folder(out: str | os.PathLike, what: str = "--out", inputs: Inputs = ()) -> Path:
    """Refuse a result-folder target that cannot or must not be written (one that holds an input among them);
    return it as a :class:`Path`."""
    if is_stdout(out):
        raise OutputError(
            f"{what} {os.fspath(out)}: a result folder holds several files and cannot go to standard output; "
            "give a folder name (or use --json to print the summary)"
        )
    if "\0" in os.fspath(out):
        raise OutputError(f"{what}: the path holds a NUL character; give a plain folder name")
    out = Path(out)
    _check_name(out, what)
    try:
        if out.is_symlink():
            out = out.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise OutputError(f"{what} {out}: the symbolic link cannot be followed ({exc}); give another folder") from None
    if out.exists() and not out.is_dir():
        raise OutputError(f"{what} {out} is a file, not a folder: give a new folder name, e.g. {out}-results")
    full, home, cwd = out.resolve(), Path.home().resolve(), Path.cwd().resolve()
    if full in (Path(full.anchor), home, cwd) or full in cwd.parents:
        kind = "your home folder" if full == home else "the root folder" if full == Path(full.anchor) else None
        raise OutputError(
            f"{what} {out} is {kind or 'the folder you are working in'}; "
            "agentsim writes a fresh folder and replaces it as a whole: give a new folder name, e.g. results/run1"
        )
    if out.is_dir() and not _is_result_folder(out):
        try:
            entries = sorted(p.name for p in out.iterdir())
        except OSError as exc:
            raise OutputError(f"{what} {out}: cannot read the folder ({exc.strerror or exc})") from None
        if entries:
            shown = ", ".join(entries[:3]) + (", …" if len(entries) > 3 else "")
            count = f"{len(entries)} {'entry' if len(entries) == 1 else 'entries'}"
            raise OutputError(
                f"{what} {out} is a folder with {count} ({shown}) that agentsim did not write "
                f"(it has no {MARKER} file); agentsim replaces a result folder as a whole, so give a new or empty "
                "folder instead"
            )
    _check_inputs(out, inputs, what, folder=True)
    _check_writable_parent(out, what)
    return out


def check_file(path: str | os.PathLike, what: str = "--out", example: str = "report.html", inputs: Inputs = ()) -> Path:
    """Refuse an output-file target that is a folder, a special file (other than stdout), one of ``inputs``, a
    name too long for its file system, or in a folder that cannot be written; return it as a :class:`Path`."""
    if is_stdout(path):
        return Path(os.fspath(path))
    if "\0" in os.fspath(path):
        raise OutputError(f"{what}: the path holds a NUL character; give a plain file name, e.g. {example}")
    path = Path(path)
    _check_name(path, what)
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):  # a parent that is a file: told below
        st = None
    except OSError as exc:  # a symbolic link loop
        raise OutputError(
            f"{what} {path}: cannot use this path ({exc.strerror or exc}); give another file name"
        ) from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{what} {path} is a folder: give a file name, e.g. {path / example}")
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OutputError(
            f"{what} {path} is a special file (a device, a pipe or a socket), not a regular file; give a file "
            f"name such as {example}, or - for standard output"
        )
    _check_inputs(path, inputs, what)
    _check_writable_parent(path, what)
    return path


def write_file(
    path: str | os.PathLike,
    write: Callable[[Path], None],
    what: str = "--out",
    inputs: Inputs = (),
    keep_partial: bool = False,
) -> Path:
    """Write one file whole: ``write(tmp)`` fills a temporary file beside ``path``, which then takes its place.

    ``-`` or ``/dev/stdout``: the bytes go to standard output. Where the temporary file cannot be renamed
    over the target (a bind-mounted file, another device), the file is written directly, and a note says so.
    ``inputs``: the files the command read; ``path`` must be none of them. ``keep_partial``: a ``write``
    that is interrupted (Ctrl-C, SIGTERM) still replaces the target with what it wrote, for a writer whose
    every flushed line is complete (``measure``); the interruption then goes on.
    """
    target = check_file(path, what, inputs=inputs)
    if is_stdout(target):
        return _write_stdout(write)
    parent = target.parent if str(target.parent) else Path(".")
    with sigterm_interrupts():
        tmp: Path | None = None
        try:
            try:
                parent.mkdir(parents=True, exist_ok=True)
                remove_stale(parent, _tmp_prefix(target.name, "tmp", pid=False))  # what a killed write left
                with deferred_signals():  # made and named at once: the clean-up below always knows it
                    fd, name = tempfile.mkstemp(prefix=_tmp_prefix(target.name, "tmp"), dir=parent)
                    os.close(fd)
                    tmp = Path(name)
            except OSError as exc:
                raise OutputError(
                    f"{what} {target}: cannot create a file in {parent} ({exc.strerror or exc})"
                ) from None
            try:
                try:
                    write(tmp)
                except KeyboardInterrupt:
                    if keep_partial:
                        _put_in_place(tmp, target, what)
                    raise
                _put_in_place(tmp, target, what)
            except OSError as exc:
                raise OutputError(
                    f"{what} {target}: writing failed ({exc.strerror or exc}); check the free space and permissions "
                    "there, or choose another file"
                ) from None
            return target
        finally:
            if tmp is not None:
                with deferred_signals():
                    tmp.unlink(missing_ok=True)


def _put_in_place(tmp: Path, target: Path, what: str) -> None:
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it private; an output file is not
    try:
        os.replace(tmp, target)
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EBUSY, errno.EPERM, errno.EACCES):
            raise
        _copy_into(tmp, target, what, exc)


def _copy_into(tmp: Path, target: Path, what: str, why: OSError) -> None:
    """The fallback of :func:`write_file`: the finished temporary file copied into the target in place."""
    log.warning(
        "%s %s: written directly (the finished file could not replace it by a rename: %s); an interrupted "
        "write there can leave it incomplete",
        what,
        target,
        why.strerror or why,
    )
    with deferred_signals(), tmp.open("rb") as src, target.open("wb") as dst:  # (a SIGKILL can still cut it)
        shutil.copyfileobj(src, dst)


def _write_stdout(write: Callable[[Path], None]) -> Path:
    with tempfile.TemporaryDirectory(prefix="agentsim-stdout-") as d:
        tmp = Path(d) / "out"
        write(tmp)
        data = tmp.read_bytes()
    stream = getattr(sys.stdout, "buffer", None)
    if stream is not None:
        sys.stdout.flush()
        stream.write(data)
        stream.flush()
    else:  # a text-only stream (a notebook's): the file is text
        sys.stdout.write(data.decode("utf-8"))
    return Path("-")


def _raise_interrupt(signum, frame):  # pragma: no cover - runs in the signal handler
    raise KeyboardInterrupt(f"signal {signum}")


@contextlib.contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`KeyboardInterrupt` (so ``finally`` clean-ups run)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def write_folder(
    out_dir: str | os.PathLike, writers: dict[str, Callable[[Path], None]], inputs: Inputs = ()
) -> list[Path]:
    """Write a result folder as a whole: ``writers`` maps a file name to a function writing that path.

    The files are written into a temporary folder beside ``out_dir`` which then takes its place in one
    step (an earlier agentsim result folder there is swapped out whole and removed; anything else is
    refused, and so is a folder that holds one of ``inputs``). A target that is a mount point (a volume)
    cannot be renamed: its files are replaced one by one instead, and a note says so.
    """
    out = check_folder(out_dir, inputs=inputs)
    parent = out.parent if str(out.parent) else Path(".")
    with sigterm_interrupts():
        try:
            parent.mkdir(parents=True, exist_ok=True)
            # what a SIGKILL left: a folder set aside by a fallback swap (moved back), temporary folders
            restore_folder(out, _tmp_prefix(out.name, "old", pid=False), _tmp_prefix(out.name, "tmp", pid=False))
        except OSError as exc:
            raise OutputError(f"--out {out}: cannot create {parent} ({exc.strerror or exc})") from None
        in_place = out.is_dir() and os.path.ismount(out)
        tmp: Path | None = None
        try:
            with deferred_signals():  # made and named at once: the clean-up below always knows it
                tmp = Path(tempfile.mkdtemp(prefix=_tmp_prefix(out.name, "tmp"), dir=out if in_place else parent))
            try:
                (tmp / MARKER).write_text(_MARKER_TEXT, encoding="utf-8")
                for name, write in writers.items():
                    write(tmp / name)
                os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it private; a result folder is not
                _check_inputs(out, inputs, "--out", folder=True)  # (again: a long run, the folder may have changed)
                if in_place:
                    _fill_in_place(out, tmp, "the folder is a mount point")
                else:
                    _swap_in(tmp, out, parent)
            except OSError as exc:
                raise OutputError(
                    f"--out {out}: writing the results failed ({exc.strerror or exc}); "
                    "check the free space and permissions there, or choose another folder"
                ) from None
            return [out / name for name in writers]
        finally:
            if tmp is not None:
                with deferred_signals():  # the unused new folder, or the old one swapped out: removed whole
                    shutil.rmtree(tmp, ignore_errors=True)


def _swap_in(tmp: Path, out: Path, parent: Path) -> None:
    """Put the finished folder ``tmp`` at ``out`` in one step; afterwards ``tmp`` holds the earlier folder (or
    nothing), for the caller to remove."""
    if out.is_dir():  # an earlier result folder (check_folder refused anything else), or an empty folder
        if exchange(tmp, out):
            return
        with deferred_signals():  # the fallback: two renames that SIGINT and SIGTERM cannot split
            old = Path(tempfile.mkdtemp(prefix=_tmp_prefix(out.name, "old"), dir=parent))
            os.replace(out, old)
            try:
                os.replace(tmp, out)
            except OSError as exc:
                os.replace(old, out)
                if exc.errno not in (errno.EXDEV, errno.EBUSY):
                    raise
                _fill_in_place(out, tmp, exc.strerror or str(exc))
                return
            os.rename(old, tmp)  # for the caller's clean-up (tmp's name is free: it was renamed away)
        return
    try:
        os.rename(tmp, out)
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EBUSY) or not out.is_dir():
            raise
        _fill_in_place(out, tmp, exc.strerror or str(exc))


def _fill_in_place(out: Path, tmp: Path, why: str) -> None:
    """Replace the contents of ``out`` (empty, or an earlier result folder) by the files of ``tmp``, file by file
    (SIGINT and SIGTERM wait until it is done; a SIGKILL can leave a mix, which the note says)."""
    log.warning(
        "--out %s: the folder could not be replaced as a whole (%s); its files were replaced one by one "
        "(a process killed meanwhile can leave a mix)",
        out,
        why,
    )
    with deferred_signals():
        _replace_entries(out, tmp)


def _replace_entries(out: Path, tmp: Path) -> None:
    for entry in list(out.iterdir()):
        if entry == tmp or entry.name == MARKER:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    for entry in sorted(tmp.iterdir(), key=lambda p: p.name == MARKER):  # the marker last: a complete folder
        shutil.move(str(entry), str(out / entry.name))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_files(
    out_dir: str | os.PathLike,
    writers: dict[str, Callable[[Path], None]],
    what: str = "--out",
    inputs: Inputs = (),
) -> list[Path]:
    """Write a set of files into a folder (made if missing) as one commit, leaving its other files alone.

    ``writers`` maps a file name to a function writing that path. The files are written into a hidden
    staging folder inside ``out_dir`` and committed together (:func:`agentsim.viz.atomic.commit_files`): an
    interruption before the commit leaves every earlier file as it was, SIGINT and SIGTERM wait for the
    commit to end, and the commit a SIGKILL cut is finished by the next write to the folder. No file of the
    set may be one of ``inputs``. (A result folder, replaced whole, is :func:`write_folder`.)
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise OutputError(f"{what} {out} is a file: give a folder for the files")
    for name in writers:
        check_file(out / name, what, example=name, inputs=inputs)
    with sigterm_interrupts():
        made = not out.exists()
        staged: Path | None = None
        try:
            try:
                out.mkdir(parents=True, exist_ok=True)
                recover_files(out)  # a commit a SIGKILL cut: finished before anything else
                with deferred_signals():  # made and named at once: the clean-up below always knows it
                    staged = Path(tempfile.mkdtemp(prefix=f"{STAGED}{os.getpid()}-", dir=out))
                for name, write in writers.items():
                    write(staged / name)
                for name in writers:  # (again: the work was long, the folder may have changed)
                    _check_inputs(out / name, inputs, what)
                return commit_files(out, staged, list(writers))
            except OSError as exc:
                raise OutputError(
                    f"{what} {out}: writing the files failed ({exc.strerror or exc}); check the free space and "
                    "permissions there, or choose another folder"
                ) from None
        finally:
            with deferred_signals():
                if staged is not None:
                    shutil.rmtree(staged, ignore_errors=True)
                if made:
                    with contextlib.suppress(OSError):  # a folder made for files that never came: not left behind
                        out.rmdir()


def recover(path: str | os.PathLike) -> None:
    """Finish or undo what a write to ``path`` that a SIGKILL cut left, as the next write there does first: a
    result folder set aside by a fallback swap is moved back (the old folder), a set of files whose commit
    had begun is completed (the new set), and temporary files of writers that no longer run are removed."""
    target = Path(path)
    with sigterm_interrupts():
        remove_stale(_existing_ancestor(target.parent if str(target.parent) else Path(".")), _PROBE)
        if target.is_dir():  # (a set's files are checked inside their folder)
            remove_stale(target, _PROBE)
        restore_folder(target, _tmp_prefix(target.name, "old", pid=False), _tmp_prefix(target.name, "tmp", pid=False))
        recover_files(target)

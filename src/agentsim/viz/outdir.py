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

While files are written, SIGTERM (what ``timeout``, ``kill`` and CI
cancellation send) is turned into :class:`KeyboardInterrupt`, so the temporary
folder is removed as it is on Ctrl-C. Every failure is an :class:`OutputError`
whose message names the path and the fix (the command line exits with code 2).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["MARKER", "OutputError", "check_file", "check_folder", "sigterm_interrupts", "write_folder"]

MARKER = ".agentsim-result"
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
        probe = tempfile.mkdtemp(prefix=".agentsim-probe-", dir=base)
    except OSError as exc:
        raise OutputError(
            f"{what} {target}: cannot create files in {base} ({exc.strerror or exc}); choose a folder you can write to"
        ) from None
    os.rmdir(probe)


def _is_result_folder(path: Path) -> bool:
    return (path / MARKER).is_file()


def check_folder(out: str | os.PathLike, what: str = "--out") -> Path:
    """Refuse a result-folder target that cannot or must not be written; return it as a :class:`Path`."""
    out = Path(out)
    if out.is_symlink():
        out = out.resolve()
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
    _check_writable_parent(out, what)
    return out


def check_file(path: str | os.PathLike, what: str = "--out", example: str = "report.html") -> Path:
    """Refuse an output-file target that is a folder or whose folder cannot be written."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(f"{what} {path} is a folder: give a file name, e.g. {path / example}")
    _check_writable_parent(path, what)
    return path


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


def write_folder(out_dir: str | os.PathLike, writers: dict[str, Callable[[Path], None]]) -> list[Path]:
    """Write a result folder as a whole: ``writers`` maps a file name to a function writing that path.

    The files are written into a temporary folder beside ``out_dir`` which then takes its
    place; an earlier agentsim result folder there is replaced whole, anything else is refused.
    """
    out = check_folder(out_dir)
    parent = out.parent if str(out.parent) else Path(".")
    with sigterm_interrupts():
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"--out {out}: cannot create {parent} ({exc.strerror or exc})") from None
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.agentsim-tmp-", dir=parent))
        old: Path | None = None
        try:
            try:
                (tmp / MARKER).write_text(_MARKER_TEXT, encoding="utf-8")
                for name, write in writers.items():
                    write(tmp / name)
                os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it private; a result folder is not
                if out.is_dir() and _is_result_folder(out):
                    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.agentsim-old-", dir=parent))
                    os.replace(out, old)  # an empty folder may be replaced by rename
                try:
                    os.replace(tmp, out)
                except OSError:
                    if old is not None:
                        os.replace(old, out)
                        old = None
                    raise
            except OSError as exc:
                raise OutputError(
                    f"--out {out}: writing the results failed ({exc.strerror or exc}); "
                    "check the free space and permissions there, or choose another folder"
                ) from None
            return [out / name for name in writers]
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask

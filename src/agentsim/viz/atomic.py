"""Replacing a folder or a set of files so that an interruption leaves the old or the new, never neither or a mix.

Three mechanisms, used by :mod:`agentsim.viz.outdir`:

* **A folder swapped in one step.** :func:`exchange` swaps two paths with Linux's
  ``renameat2(RENAME_EXCHANGE)`` (glibc 2.28 and later, called through ``ctypes``): the finished
  temporary folder and the earlier result folder change places in one system call, so at every instant
  the target is the old folder or the new one. Where the system or the file system cannot
  (another OS, an older C library, a file system without the flag: ``ENOSYS``, ``EINVAL``), it returns
  False and the caller falls back to two renames (the old folder aside, the new one in place) inside
  :func:`deferred_signals`, which a SIGINT or SIGTERM cannot split; only a SIGKILL (or a power cut)
  between those two system calls leaves the target missing, with the old folder beside it under a
  hidden name that the next write to the same target moves back first (:func:`restore_folder`).
* **Signals deferred.** :func:`deferred_signals` replaces the SIGINT and SIGTERM handlers by recorders
  for the duration of a commit (renames only, milliseconds) and delivers a signal that came, to the
  handlers of before, once the commit is done: Ctrl-C, ``timeout`` or ``kill`` then see a complete
  target. (Recorders rather than ``pthread_sigmask``: the kernel may deliver a process signal to any
  thread that does not block it, and Python runs its handler in the main thread whichever thread got it.)
* **A set of files committed by a journal.** :func:`commit_files` moves files staged in a hidden folder
  inside the target folder into place. It first writes a journal (the staged folder and the names, written
  to a temporary file, flushed to disk and renamed into place: the commit point), then renames the files
  one by one with signals deferred, then removes the journal. A SIGKILL after the commit point leaves a
  mix of old and new files on disk *with the journal beside them*; the next write to the same folder
  (:func:`recover_files`, which every write of a set calls first) finishes the interrupted commit (rolls
  it forward: the set is then wholly the new one), before anything else. A SIGKILL before the commit point
  leaves the old files untouched (and the hidden staging folder, removed by the next write).

Hidden names carry the process id of their writer, so a later write removes only what a process that no
longer runs left behind, never the temporary files of a write under way in another process.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "STAGED",
    "commit_files",
    "deferred_signals",
    "exchange",
    "recover_files",
    "remove_stale",
    "restore_folder",
    "stale",
    "stale_siblings",
]

_AT_FDCWD = -100  # Linux: paths relative to the working folder
_RENAME_EXCHANGE = 2  # linux/fs.h
_UNSUPPORTED = {errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP}
STAGED = ".agentsim-staged-"  # prefix of a set's staging folder inside its target folder
_JOURNAL = ".commit.json"  # suffix of a staging folder's journal (beside it)


def _renameat2():
    """libc's ``renameat2`` (Linux, glibc 2.28 and later), or None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


def exchange(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Swap two existing paths in one step (``renameat2(RENAME_EXCHANGE)``); False where the system or the file
    system cannot (the caller then falls back). Other failures raise :class:`OSError`."""
    fn = _renameat2()
    if fn is None:
        return False
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in _UNSUPPORTED:
        return False
    raise OSError(err, os.strerror(err), os.fspath(a), None, os.fspath(b))


@contextlib.contextmanager
def deferred_signals(signals: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)) -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM are recorded, not acted on; the first one that came is delivered
    to the handlers of before when the block ends (its commit done). Outside the main thread, where Python
    runs no signal handler, the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    previous = {s: signal.signal(s, lambda signum, frame: came.append(signum)) for s in signals}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if came:
            signal.raise_signal(came[0])


def _pid_of(name: str, prefix: str) -> int | None:
    rest = name[len(prefix) :] if name.startswith(prefix) else ""
    pid = rest.split("-", 1)[0]
    return int(pid) if pid.isdigit() else None


def stale(name: str, prefix: str) -> bool:
    """Whether a hidden name ``PREFIX<pid>-…`` was left by a process that no longer runs."""
    pid = _pid_of(name, prefix)
    if pid is None or pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # another user's process: it runs
        return False
    return False


def stale_siblings(parent: Path, prefix: str) -> list[Path]:
    """Entries of ``parent`` named ``PREFIX<pid>-…`` whose writer no longer runs, oldest name first."""
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return []
    return [parent / n for n in names if stale(n, prefix)]


def remove_stale(parent: Path, prefix: str) -> None:
    """Remove the entries ``PREFIX<pid>-…`` of ``parent`` that writers which no longer run left."""
    for path in stale_siblings(parent, prefix):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                path.unlink()


def restore_folder(target: Path, old_prefix: str, tmp_prefix: str) -> None:
    """Before a folder is written: a folder that an interrupted fallback swap (:func:`exchange` unavailable) set
    aside is moved back to ``target`` when ``target`` is missing; other leftovers of dead writers (set-aside
    folders, unfinished or swapped-out temporary folders) are removed."""
    parent = target.parent if str(target.parent) else Path(".")
    for old in stale_siblings(parent, old_prefix):
        if not os.path.lexists(target):
            os.rename(old, target)
    remove_stale(parent, old_prefix)
    remove_stale(parent, tmp_prefix)


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not every file system lets a folder be opened for this
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_journal(out: Path, staged: Path, names: list[str]) -> Path:
    journal = out / (staged.name + _JOURNAL)
    fd, tmp = tempfile.mkstemp(prefix=staged.name + ".", dir=out)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump({"staged": staged.name, "names": names}, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, journal)  # the commit point
    _fsync_dir(out)
    return journal


def _roll_forward(out: Path, journal: Path) -> None:
    """Finish the commit ``journal`` describes: every staged file still there renamed into place."""
    try:
        doc = json.loads(journal.read_text(encoding="utf-8"))
        staged, names = out / str(doc["staged"]), [str(n) for n in doc["names"]]
    except (OSError, ValueError, KeyError, TypeError):  # a journal cut before its rename never is one
        journal.unlink(missing_ok=True)
        return
    for name in names:
        src = staged / name
        if os.path.lexists(src) and os.path.basename(name) == name:
            os.replace(src, out / name)
    _fsync_dir(out)
    journal.unlink(missing_ok=True)
    shutil.rmtree(staged, ignore_errors=True)


def recover_files(out: Path) -> None:
    """Before a set of files is written to ``out``: finish every commit a killed writer left (its journal), and
    remove the staging folders of writers that no longer run."""
    if not out.is_dir():
        return
    with deferred_signals():
        for journal in sorted(out.glob(STAGED + "*" + _JOURNAL)):
            if stale(journal.name, STAGED):
                _roll_forward(out, journal)
        for staged in stale_siblings(out, STAGED):
            if staged.is_dir() and not (out / (staged.name + _JOURNAL)).exists():
                shutil.rmtree(staged, ignore_errors=True)
            elif staged.is_file() and not staged.name.endswith(_JOURNAL):  # a journal cut before its rename
                staged.unlink(missing_ok=True)


def commit_files(out: Path, staged: Path, names: list[str]) -> list[Path]:
    """Move ``staged/NAME`` to ``out/NAME`` for every name, as one commit (journal, renames, journal removed)."""
    with deferred_signals():
        journal = _write_journal(out, staged, names)
        _roll_forward(out, journal)
    return [out / n for n in names]

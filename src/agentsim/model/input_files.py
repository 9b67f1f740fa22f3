"""Bounded input: every file agentsim reads is checked for its size and kind before it is parsed.

One helper for every reader (scenarios and the files they ``extends:``, profiles, replay configs,
measurement files, recorded sessions, empirical CSV files), so that a 200 MB one-line YAML file, a
named pipe that never ends or a symbolic link that points at itself is refused at once, with
exit 2, instead of being parsed for minutes or hanging. Files of the kernel's pseudo file systems
(``/proc``, ``/sys``: a process's environment is a "regular file" there, of size 0) are refused too, by the
device they live on (:data:`PSEUDO_FILE_SYSTEMS`), whatever link leads to them. The limits (:data:`MAX_BYTES`,
documented in docs/limits-of-input.md) are far above any real file of the kind:

==================  =========  ==========================================================
kind                limit      why
==================  =========  ==========================================================
scenario            32 MiB     a generated scenario of 100,000 steps is ~7 MiB
profile             4 MiB      a calibrated profile is a few KiB
replay config       4 MiB      a few models and variants
measurement         256 MiB    ~1 million requests of a benchmark tool
session             512 MiB    one recorded agent session (JSON Lines) of a long day
empirical CSV       64 MiB     a column of observed values
provider listing    64 MiB     a listing of every model of a provider is a few MB
==================  =========  ==========================================================

:func:`input_problem` says what is wrong (or None); :func:`read_bounded` reads at most the limit
(even where a file's size is not known in advance, as in ``/proc``) and raises :class:`InputError`.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["MAX_BYTES", "PSEUDO_FILE_SYSTEMS", "InputError", "input_problem", "read_bounded"]

MIB = 1 << 20
MAX_BYTES: dict[str, int] = {
    "scenario": 32 * MIB,
    "profile": 4 * MIB,
    "replay config": 4 * MIB,
    "measurement": 256 * MIB,
    "session": 512 * MIB,
    "empirical CSV": 64 * MIB,
    "provider listing": 64 * MIB,
}


_SIZE_HINT = "check that it is the right file; docs/limits-of-input.md lists the limits"


class InputError(ValueError):
    """A file that must not be parsed: ``message`` says why, ``hint`` what to do."""

    def __init__(self, message: str, hint: str = ""):
        self.message, self.hint = message, hint
        super().__init__(message + (f" ({hint})" if hint else ""))


def _mib(n: int) -> str:
    return f"{n / MIB:,.0f} MiB" if n >= MIB else f"{n:,} bytes"


# Pseudo file systems whose "files" are the kernel's state (a process's environment, its memory map): refused
# whatever path reaches them (a link, /proc/self/cwd/...), by the device they live on.
PSEUDO_FILE_SYSTEMS = ("/proc", "/sys")


def _system_file(st: os.stat_result) -> str | None:
    """``/proc`` or ``/sys`` when the file ``st`` describes lives there, else None."""
    for root in PSEUDO_FILE_SYSTEMS:
        try:
            if os.stat(root).st_dev == st.st_dev:
                return root
        except OSError:  # not mounted here (another system)
            continue
    return None


def input_problem(path: str | os.PathLike, kind: str) -> tuple[str, str] | None:
    """``(message, hint)`` when ``path`` must not be read as a ``kind`` file, else None.

    A missing file is None here: each reader says "no such file" in its own words.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return ("the path is a loop of symbolic links (a link that leads back to itself)", "point it at a file")
        if exc.errno == errno.ENAMETOOLONG:
            return ("the path is too long for the file system", "check the path")
        return (f"cannot read the file: {exc.strerror or exc}", "check the path and its permissions")
    if stat.S_ISDIR(st.st_mode):
        return None  # the reader says it is a folder
    if not stat.S_ISREG(st.st_mode):
        return (
            "not a regular file (a pipe, a device or a socket)",
            f"give the {kind} file itself; agentsim reads files, not streams",
        )
    system = _system_file(st)
    if system is not None:
        return (
            f"a file of the system's {system} (not a file on disk)",
            f"give the {kind} file itself; agentsim does not read files under {system}",
        )
    limit = MAX_BYTES[kind]
    if st.st_size > limit:
        return (
            f"the file is {_mib(st.st_size)}, more than a {kind} file may hold ({_mib(limit)})",
            _SIZE_HINT,
        )
    return None


def read_bounded(path: str | os.PathLike, kind: str) -> str:
    """The UTF-8 text of a ``kind`` file, checked by :func:`input_problem` and read up to its limit.

    ``FileNotFoundError``, ``IsADirectoryError``, ``PermissionError`` and ``UnicodeDecodeError`` pass
    through for the reader to word; everything else wrong is an :class:`InputError`.
    """
    found = input_problem(path, kind)
    if found is not None:
        raise InputError(*found)
    limit = MAX_BYTES[kind]
    with Path(path).open("rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise InputError(
            f"the file holds more than a {kind} file may ({_mib(limit)})", "check that it is the right file"
        )
    return data.decode("utf-8")

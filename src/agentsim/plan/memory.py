"""Keeping freed memory for reuse: process-wide memory settings for the array-heavy code
(glibc's malloc thresholds, and no transparent huge pages for NumPy's large arrays).

Both the sampler (:mod:`agentsim.plan.sampling`) and the fast path (:mod:`agentsim.sim.fastpath`) make
many short-lived NumPy arrays; :func:`tune_malloc` is called once by whichever runs first.
"""

from __future__ import annotations

import ctypes
import os
import sys

_MALLOC_TUNED = False


def tune_malloc() -> None:
    """Keep glibc from returning NumPy's large temporaries to the kernel after every free.

    The fast path allocates many short-lived arrays of a few hundred kilobytes. With glibc's
    defaults the heap is trimmed (or the block unmapped) when they are freed, so every new array
    page-faults its memory in again: measured here, that made the evaluator 5x slower. Raising the
    mmap and trim thresholds (to 64 and 128 MiB) keeps freed blocks for reuse. It changes no
    result, only speed and how much freed memory the process keeps. Linux/glibc only; set
    ``AGENTSIM_NO_MALLOPT=1`` to leave malloc (and NumPy's huge-page advice) alone.
    """
    global _MALLOC_TUNED
    if _MALLOC_TUNED:
        return
    _MALLOC_TUNED = True
    if os.environ.get("AGENTSIM_NO_MALLOPT") or not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3
        libc.mallopt(m_mmap_threshold, 64 << 20)
        libc.mallopt(m_trim_threshold, 128 << 20)
    except (OSError, AttributeError):  # not glibc
        pass
    _no_huge_pages()


def _no_huge_pages() -> None:
    """Ask NumPy not to request transparent huge pages for its large arrays (unless the user chose,
    with ``NUMPY_MADVISE_HUGEPAGE``).

    NumPy advises the kernel to back arrays of 4 MiB or more with huge pages. Where the kernel's
    ``transparent_hugepage/defrag`` is ``madvise`` (a common default), each first touch of such an
    array may then compact memory synchronously: measured here, filling the columns of a million-run
    runs table block by block took 1.0 s of CPU against 0.24 s on ordinary pages. The arrays are
    written once and read a few times, so huge pages buy nothing back.
    """
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return
    import numpy as np

    core = getattr(np, "_core", None) or getattr(np, "core", None)
    setter = getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)
    if setter is not None:
        setter(False)

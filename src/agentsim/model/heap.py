"""The cyclic garbage collector while scenarios are read (standard library only: the command line imports it
before anything heavy).

:func:`gc_paused` pauses it while a scenario is read, validated and compiled; :func:`reads_kept` keeps what
a command of the command line has read out of later collections.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused", "reads_kept"]

_READS_KEPT = [False]  # inside reads_kept(): what a pause read is frozen out of later collections


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while a scenario is read, validated and compiled.

    A scenario of 100,000 steps is a few million objects made at once and kept: every collection
    would walk all of those made so far, so the reading time grew with the square of the steps.
    Reading makes no reference cycles worth collecting; the collector resumes at the end (nested
    pauses resume with the outermost). Inside :func:`reads_kept` the objects that exist then are also
    frozen (``gc.freeze``): the collections that follow do not walk them again.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if _READS_KEPT[0]:
                gc.freeze()
            gc.enable()


@contextmanager
def reads_kept() -> Iterator[None]:
    """For one command of the command line: what it reads (a scenario, its plan) lives until it ends, so the
    collector need not walk it again after each read (a quarter of the time of ``validate`` on a scenario of
    100,000 steps went to collections walking it). The frozen objects are handed back to the collector at
    the end (``gc.unfreeze``). Not for a library caller: a notebook drops the scenarios it reads."""
    if gc.get_freeze_count():  # the caller froze objects of its own: leave its arrangement alone
        yield
        return
    _READS_KEPT[0] = True
    try:
        yield
    finally:
        _READS_KEPT[0] = False
        gc.unfreeze()

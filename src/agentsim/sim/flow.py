"""A run's thread of sequential steps in the DES, and the exception that ends a run as failed.

Light to import (no SimPy, no NumPy): step kinds name them when they load.
"""

from __future__ import annotations

__all__ = ["Flow", "RunFailed"]


class Flow:
    """A thread of sequential steps of run ``r``: its context and its critical-path breakdown so far."""

    __slots__ = ("acc", "ctx", "r", "trigger")

    def __init__(self, ctx, acc: list[float], r: int):
        self.ctx = ctx
        self.acc = acc
        self.r = r
        self.trigger = None  # (event, pipeline node, pipeline flow) while a call feeds a pipeline


class RunFailed(Exception):
    """A call used up its attempts, or a ``fail`` step failed the run: the run stops here."""

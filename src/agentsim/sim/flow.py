"""A run's thread of sequential steps in the DES, and the exception that ends a run as failed.

Light to import (no SimPy, no NumPy): step kinds name them when they load.
"""

from __future__ import annotations

from agentsim.sim.slots import DEC, STALL, TTFT

__all__ = ["Flow", "RunFailed"]


class Flow:
    """A thread of sequential steps of run ``r``: its context and its critical-path breakdown so far."""

    __slots__ = ("acc", "ctx", "r", "trigger")

    def __init__(self, ctx, acc: list[float], r: int):
        self.ctx = ctx
        self.acc = acc
        self.r = r
        self.trigger = None  # (event, pipeline node, pipeline flow) while a call feeds a pipeline

    def close(self, i_new: int, tl) -> None:
        """A finished call's effect on this flow, from its timeline (:meth:`closed`)."""
        self.closed(i_new, tl.output, tl.ttft, tl.decode, tl.stall)

    def closed(self, i_new: int, out: int, ttft: float, dec: float, stall) -> None:
        """A finished call's effect on this flow: the context grows by its new input and ``out``; TTFT, DEC and
        STALL slots add up."""
        if self.ctx.cfg.grows:
            self.ctx.add(i_new + out)
        acc = self.acc
        acc[TTFT] += ttft
        acc[DEC] += dec
        if stall:
            acc[STALL] += stall


class RunFailed(Exception):
    """A call used up its attempts, or a ``fail`` step failed the run: the run stops here."""

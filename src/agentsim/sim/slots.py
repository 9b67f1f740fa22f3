"""The breakdown slots: where the seconds of a run's critical path go.

Each run carries, along its critical path, seconds in these slots (DESIGN.md §4): ``queue`` (waiting
for admission), ``ttft``, ``decode``, ``tool``, ``wait``, ``stall`` (paused streams) and ``listen``
(a voice turn's end of speech and speech-to-text). The first five are always reported; ``stall``
only when some tier can stall, ``listen`` only when the plan has a ``listen`` step. Which step adds
what to which slot is its kind's rule (and :mod:`agentsim.sim.rules` for calls).

A module of its own, light to import, because step kinds name their slot when they load.
"""

from __future__ import annotations

__all__ = ["BREAKDOWN", "DEC", "LISTEN", "NAMES", "N_SLOTS", "STALL", "TOOL", "TTFT", "WAIT", "Q", "slot_names"]

NAMES = ("queue", "ttft", "decode", "tool", "wait", "stall", "listen")
Q, TTFT, DEC, TOOL, WAIT, STALL, LISTEN = range(7)
N_SLOTS = len(NAMES)
BREAKDOWN = NAMES[:5]  # the slots every summary reports, Q to WAIT


def slot_names(plan) -> dict[str, int]:
    """The slots a plan's summary reports, by name and index: the five of BREAKDOWN, then ``stall`` when some
    tier can stall and any other slot a node of the plan spends time in (its ``slot``)."""
    used = {n.slot for n in plan.nodes if n.slot is not None}
    if plan.has_stalls:
        used.add("stall")
    return {name: i for i, name in enumerate(NAMES) if i < len(BREAKDOWN) or name in used}

"""The breakdown slots: where the seconds of a run's critical path go.

Each run carries, along its critical path, seconds in slots (DESIGN.md §4). The engines' own are
``queue`` (waiting for admission), ``ttft``, ``decode``, ``tool``, ``wait`` and ``stall`` (paused
streams): the first five are always reported, ``stall`` only when some tier can stall. A step kind whose
time is none of these declares a slot of its own in its module (``StepKind.slots``: a ``listen`` step's
``listen``), reported only when the plan has a node that spends time there (its ``slot``). Every slot
carries its label, legend and colour (:class:`~agentsim.model.registry.Slot`), which the ``run`` table,
the figures and the timeline read from here.

Slot indices are positions in :func:`slots`: the engines' own (:data:`Q` to :data:`STALL`), then the step
kinds' in the registry's order (the vocabulary's kinds first). Which step adds what to which slot is its
kind's rule (and :mod:`agentsim.sim.rules` for calls). A module of its own, light to import, because step
kinds name their slot when they load.
"""

from __future__ import annotations

import functools

from agentsim.model import registry
from agentsim.model.registry import Slot

__all__ = [
    "BREAKDOWN",
    "CALL_SLOTS",
    "DEC",
    "ENGINE_SLOTS",
    "STALL",
    "TOOL",
    "TTFT",
    "WAIT",
    "Q",
    "count",
    "index",
    "names",
    "slot_names",
    "slots",
]

ENGINE_SLOTS = (
    Slot("queue", "queue", "queue", "#9e9e9e"),
    Slot("ttft", "TTFT", "TTFT", "#f4a259"),
    Slot("decode", "decode", "decode", "#3d7ea6"),
    Slot("tool", "tools", "tool", "#8fc1a9"),
    Slot("wait", "waits", "wait", "#bc4b51"),
    Slot("stall", "stalls", "stall", "#6a4c93"),
)
Q, TTFT, DEC, TOOL, WAIT, STALL = range(len(ENGINE_SLOTS))
BREAKDOWN = tuple(s.name for s in ENGINE_SLOTS[:5])  # the slots every summary reports, Q to WAIT
CALL_SLOTS = ("queue", "ttft", "decode", "stall")  # a call's own (the others are spans' time)


def slots() -> tuple[Slot, ...]:
    """Every slot: the engines' own, then each step kind's (its first declaration of a name wins)."""
    return _slots(registry.version())


@functools.lru_cache(maxsize=4)
def _slots(version: int) -> tuple[Slot, ...]:
    out = {s.name: s for s in ENGINE_SLOTS}
    for kind in registry.step_kinds().values():
        for s in kind.slots:
            out.setdefault(s.name, s)
    return tuple(out.values())


def names() -> tuple[str, ...]:
    """Every slot's name, in index order."""
    return tuple(s.name for s in slots())


def index(name: str) -> int:
    """A slot's index in the engines' breakdown accumulators."""
    return _indices(registry.version())[name]


@functools.lru_cache(maxsize=4)
def _indices(version: int) -> dict[str, int]:
    return {s.name: i for i, s in enumerate(_slots(version))}


def count() -> int:
    """How many slots the engines accumulate per run."""
    return len(slots())


def slot_names(plan) -> dict[str, int]:
    """The slots a plan's summary reports, by name and index: the five of BREAKDOWN, then ``stall`` when some
    tier can stall and any other slot a node of the plan spends time in (its ``slot``)."""
    used = {n.slot for n in plan.nodes if n.slot is not None}
    if plan.has_stalls:
        used.add("stall")
    return {name: i for i, name in enumerate(names()) if i < len(BREAKDOWN) or name in used}

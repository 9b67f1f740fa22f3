"""The step kinds: one module each, holding everything about the kind.

A kind's module defines the kind's keys (a pydantic model), its plan node (its children, instance
axis, records, size bounds), its compilation (the node and its draws), its discrete-event form and
its vectorised form side by side (or the reason it is left to the DES), and registers one
:class:`~agentsim.model.registry.StepKind`. Every other part of agentsim reads the registry; adding a
kind is adding a module here (docs/design.md, "Add a step kind").

A kind module loads with the vocabulary (``agentsim validate`` imports every kind and must not load
NumPy or SciPy): it imports the model, the plan and the light parts of the engines
(:mod:`agentsim.sim.slots`, :mod:`agentsim.sim.flow`, :mod:`agentsim.sim.context`) at the top, and
NumPy or the engines' array helpers inside the functions that use them. Its DES form uses the
runner's primitives (``value``, ``seq``, ``span``, ``join``...: :class:`agentsim.sim.engine.Runner`),
its vectorised form the evaluator's (:class:`agentsim.sim.fastpath.Evaluator`).

:func:`load` imports every module of this package: the vocabulary's kinds in the order DESIGN.md §3
lists them, then any other module, by name.
"""

from __future__ import annotations

from agentsim.model.registry import load_kinds

__all__ = ["ORDER", "load"]

ORDER = (
    "call", "tool", "wait", "listen", "parallel", "fanout", "repeat", "choose", "subagent", "pipeline", "fail", "turns",
)  # fmt: skip


def load() -> None:
    """Import (and so register) every step kind of this package."""
    load_kinds(__name__, __path__, ORDER, consumers=False)

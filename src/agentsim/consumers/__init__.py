"""The consumer kinds: who reads, hears or draws a call's streamed answer, one module each.

A consumer kind's module defines its keys (a pydantic model, one field of ``consumer:``), its compiled
form, the metrics it adds to ``summary.json``'s ``streaming`` section and how they are computed from
a batch of token timelines, its per-token timeline (the same rule: the stream page and the figures
draw it), and its labels for tables; it registers one :class:`~agentsim.model.registry.ConsumerKind`.
:mod:`agentsim.sim.streaming` computes what every consumer shares (TTFT, gaps, QoE, interruptions) and
asks the kind for the rest. Adding a consumer is adding a module here.

As step kinds (:mod:`agentsim.steps`), a consumer module loads with the vocabulary and imports NumPy
inside the functions that use it.
"""

from __future__ import annotations

from agentsim.model.registry import load_kinds

__all__ = ["ORDER", "load"]

ORDER = ("reader", "speech", "render")


def load() -> None:
    """Import (and so register) every consumer kind of this package: the vocabulary's first, then the others."""
    load_kinds(__name__, __path__, ORDER, consumers=True)

"""The DES's streamed calls: a call whose user may interrupt it, or that feeds a pipeline.

Such a call's token timeline is built with the streaming rules (:func:`agentsim.sim.streaming.streams`,
over an array of one call: the same operations as the fast path's), and decides where the user cuts
the call (:func:`~agentsim.sim.streaming.interruption`: a :class:`~agentsim.sim.call_timeline.Cut`) and
when the pipeline after it starts (the pipeline node's ``starts_on``; its critical path
inherits the call's TTFT, decode and stall up to then, :func:`~agentsim.sim.rules.lead_in`).
:class:`StreamedCalls` is a part of :class:`agentsim.sim.engine.Runner` (a mixin).
"""

from __future__ import annotations

import numpy as np

from agentsim.sim.call_timeline import CallSlot, Cut, timeline
from agentsim.sim.flow import Flow
from agentsim.sim.rules import DEC, STALL, TTFT, lead_in
from agentsim.sim.stalls import stall_draws, stalled_by
from agentsim.sim.streaming import interruption, slot_values, streams

__all__ = ["StreamedCalls"]


class StreamedCalls:
    """The runner's rules for a call whose stream matters (see the module doc)."""

    def _stream_cut(self, node, st: Flow, flat: int, tl, key: int) -> Cut | None:
        """Apply the streaming rules to a call: arm the pipeline it feeds (if any) and return where the user
        interrupts it (a :class:`~agentsim.sim.call_timeline.Cut`), or None."""
        sb, hit, t_cut, billed = self._stream_rule(node, flat, st.r, tl, key)
        if st.trigger is not None:
            self._arm_pipeline(st, tl, sb, float(t_cut[0]) if hit[0] else None, flat)
        if not hit[0]:
            return None
        stalled = float(stalled_by(sb, t_cut)[0])
        return Cut(float(t_cut[0]), int(billed[0]), stalled)

    def _stream_rule(self, node, flat: int, r: int, tl, key: int):
        """One call's token timeline and whether (and where) it is interrupted (agentsim.sim.streaming rules)."""
        tier = self.plan.tiers[key]
        sd = stall_draws(self.plan, self.block, node, key)
        slot = CallSlot(self.block, node, flat, np.array([r]))
        stall_u = np.zeros(1) if sd is None else slot_values(sd[1], self.block, node, slot.runs, flat)
        stall = np.array([tl.stall or 0.0])
        one = timeline(np.array([tl.send]), tl.ttft, np.array([tl.output], dtype=np.int64), tl.reasoning, tl.tps, stall)
        sb = streams(tier, slot, one, stall_u, cache=True)
        if node.interrupt is not None:
            _drawn, t_cut, hit, billed = interruption(self.plan, slot, tier, sb)
        else:
            hit, t_cut, billed = np.zeros(1, dtype=bool), one.end, one.output
        return sb, hit, t_cut, billed

    def _arm_pipeline(self, st: Flow, tl, sb, t_cut: float | None, flat: int) -> None:
        """Start the pipeline after the call once it has streamed enough (its node's ``starts_on``)."""
        env = self.env
        event, pipe, pflow = st.trigger
        st.trigger = None
        slot = CallSlot(self.block, pipe.call, flat, np.array([st.r]))
        t_go = float(pipe.starts_on(slot, sb, None if t_cut is None else np.array([t_cut]))[0])
        t_go = max(t_go, tl.send)
        # the pipeline's critical path so far: this call's TTFT, decode and stall up to t_go
        acc = list(st.acc)
        stalled = float(stalled_by(sb, np.array([t_go]))[0])
        first, dec = lead_in(tl.send, t_go, tl.ttft, stalled)
        acc[TTFT] += float(first)
        acc[DEC] += float(dec)
        acc[STALL] += stalled
        pflow.acc = acc
        env.timeout(t_go - tl.send).callbacks.append(lambda _ev: event.succeed())

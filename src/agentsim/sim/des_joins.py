"""The DES's joins: branches (a parallel's, a fan-out's copies) as processes, then the join all or the race.

:meth:`Joins.join` runs each branch as a process (each from a copy of the parent's breakdown and a fork of
its context) and waits for all, or for the first ``k``: the parent carries on with the critical branch's
breakdown (:func:`agentsim.sim.rules.critical_all` / :func:`~agentsim.sim.rules.race`) and the context
of the branches that count. In a race the losers are cancelled once everything else at the deciding
instant has happened (an event of lower priority than any other at that instant, ``_Settle``).
:meth:`Joins.join_calls` joins branches that are each one fixed call with one timeout per call and no
process at all. :class:`Joins` is a part of :class:`agentsim.sim.engine.Runner` (a mixin).
"""

from __future__ import annotations

import simpy
from simpy.events import Event, Timeout

from agentsim.plan.nodes import SeqNode
from agentsim.sim.flow import Flow, RunFailed
from agentsim.sim.rules import DEC, STALL, TTFT, critical_all, race

__all__ = ["SETTLE", "Joins"]

SETTLE = 2  # priority below SimPy's NORMAL (1): processed after every other event at the same time


class _Settle(Event):
    """An event that fires at the current time after all other events of this instant.

    SimPy has no public way to trigger an event at a priority of one's own: like SimPy's own ``Timeout``,
    it sets the private ``_ok`` and ``_value`` before scheduling itself (``tests/test_simpy_private.py``
    checks their meaning on the pinned SimPy range; docs/design.md).
    """

    def __init__(self, env: simpy.Environment):
        super().__init__(env)
        self._ok = True
        self._value = None
        env.schedule(self, priority=SETTLE)


class Joins:
    """The runner's joins of branches (see the module doc)."""

    def join_calls(self, calls: list[tuple], st: Flow):
        """Join all of branches that are each one fixed call: a timeout per call, no process per branch.

        The same timeouts, ends and critical branch (rules.critical_all) as :meth:`join` would give,
        without a generator, a start and an end event per branch. If the parent is cancelled, the calls
        still running are recorded as cancelled now, and their timeouts then do nothing.
        """
        nb = len(calls)
        if nb == 0:
            return
        env, r = self.env, st.r
        t0 = env.now
        ends: list[float | None] = [None] * nb
        left = [nb]
        done = env.event()

        def ended(b: int) -> None:
            if left[0] < 0:  # cancelled
                return
            ends[b] = env.now
            c, flat = calls[b]
            c.started[r * c.width + flat] = t0
            left[0] -= 1
            if left[0] == 0:
                done.succeed()

        for b, (c, flat) in enumerate(calls):
            Timeout(env, c.d[r * c.width + flat]).callbacks.append(lambda _ev, b=b: ended(b))
        try:
            yield done
        except simpy.Interrupt:
            left[0] = -1
            for b, (c, flat) in enumerate(calls):
                if ends[b] is None:
                    self._cancel_fixed(c, r, flat, t0)
            raise
        c, flat = calls[critical_all(ends)]
        j = r * c.width + flat
        acc = st.acc
        acc[TTFT] += c.ttft[j]
        acc[DEC] += c.dec[j]
        if c.stall is not None and c.stall[j]:
            acc[STALL] += c.stall[j]

    def join(self, branches: list[tuple[SeqNode, int]], k: int | None, st: Flow):
        """Run ``branches`` (sequence, instance) as processes; wait for all, or for the first ``k``.

        The parent carries on with the critical branch's breakdown (rules.critical_all / rules.race);
        in a race the losers are cancelled once everything else at the deciding instant has happened.
        """
        nb = len(branches)
        if nb == 0:
            return
        env = self.env
        kk = nb if k is None else min(k, nb)
        cfg = st.ctx.cfg
        static = not cfg.grows and not cfg.cache  # nothing can change the context: branches share it
        states = [Flow(st.ctx if static else st.ctx.fork(), list(st.acc), st.r) for _ in range(nb)]
        ends: list[float | None] = [None] * nb
        done = env.event()
        count = [0]

        def finished(b: int) -> None:
            ends[b] = env.now
            count[0] += 1
            if count[0] == kk:
                if kk == nb:
                    done.succeed()
                else:  # decide the race once everything else at this instant has happened
                    _Settle(env).callbacks.append(lambda _ev: done.succeed())

        def failed(exc: BaseException) -> None:
            if isinstance(exc, RunFailed) and not done.triggered:
                done.fail(exc)  # the run fails: the parent stops the other branches

        if self.limited:  # each branch in a wrapper process (the event order shared accounts were tuned on)

            def branch(b: int, seq: SeqNode, flat: int):
                try:
                    yield from self.seq(seq, states[b], flat)
                except (simpy.Interrupt, RunFailed) as exc:
                    failed(exc)
                    return
                finished(b)

            procs = [env.process(branch(b, seq, flat)) for b, (seq, flat) in enumerate(branches)]
        else:  # each branch's sequence is its process; its end is seen by a callback

            def ended(ev: simpy.Event, b: int) -> None:
                if ev.ok:
                    finished(b)
                elif isinstance(ev.value, simpy.Interrupt | RunFailed):  # cancelled or failed: handled here
                    ev.defused = True
                    failed(ev.value)

            procs = []
            for b, (seq, flat) in enumerate(branches):
                p = env.process(self.seq(seq, states[b], flat))
                p.callbacks.append(lambda ev, b=b: ended(ev, b))
                procs.append(p)
        try:
            yield done
        except (simpy.Interrupt, RunFailed):
            for p in procs:
                if p.is_alive:
                    p.interrupt()
            raise
        if kk == nb:
            critical, winners = critical_all(ends), range(nb)
        else:
            critical, winners = race(ends, kk)
            for p in procs:
                if p.is_alive:
                    p.interrupt()
        if not static:
            st.ctx.join([states[b].ctx for b in winners])
        st.acc[:] = states[critical].acc

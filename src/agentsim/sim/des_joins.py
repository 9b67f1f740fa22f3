"""The DES's joins: branches (a parallel's, a fan-out's copies) as processes, then the join all or the race.

:meth:`Joins.join` runs each branch as a process (each from a copy of the parent's breakdown and a fork of
its context) and waits for all, or for the first ``k``: the parent carries on with the critical branch's
breakdown (:func:`agentsim.sim.rules.critical_all` / :func:`~agentsim.sim.rules.race`) and the context
of the branches that count. In a race the losers are cancelled once everything else at the deciding
instant has happened (an event of lower priority than any other at that instant, ``_Settle``).
:meth:`Joins.join_calls` joins branches that are each one fixed call with one timeout per call and no
process at all.

:class:`Joins` is a part of :class:`agentsim.sim.engine.Runner`, made by it per block: it holds the
runner's :class:`~agentsim.sim.rows.Recorder` (a cancelled fixed call is recorded there), whether branches
run in wrapper processes, and the environment the runs are in. The runner's sequence form
(:meth:`Runner.seq <agentsim.sim.engine.Runner.seq>`), which each branch runs, is handed to :meth:`Joins.join`
at each join rather than kept (a bound method of the runner kept here would make a reference cycle).
"""

from __future__ import annotations

from collections.abc import Callable
from weakref import WeakKeyDictionary

import simpy
from simpy.events import Event, Timeout

from agentsim.plan.nodes import Node, SeqNode
from agentsim.sim.flow import Flow, RunFailed
from agentsim.sim.rows import Recorder
from agentsim.sim.rules import DEC, STALL, TTFT, critical_all, race

__all__ = ["SETTLE", "Joins"]

SETTLE = 2  # priority below SimPy's NORMAL (1): processed after every other event at the same time
_HEIGHTS: WeakKeyDictionary[Node, int] = WeakKeyDictionary()  # a plan node's tree height, worked out once


def _height(node: Node) -> int:
    """The height of ``node``'s tree (a leaf: 0), once per node of a plan."""
    h = _HEIGHTS.get(node)
    if h is None:
        h = 1 + max((_height(c) for c in node.children()), default=-1)
        _HEIGHTS[node] = h
    return h


class _Settle(Event):
    """An event that fires at the current time after all other events of this instant.

    SimPy has no public way to trigger an event at a priority of one's own: like SimPy's own ``Timeout``,
    it sets the private ``_ok`` and ``_value`` before scheduling itself (``tests/test_simpy_private.py``
    checks their meaning on the pinned SimPy range; docs/design.md).
    """

    def __init__(self, env: simpy.Environment, priority: int = SETTLE):
        super().__init__(env)
        self._ok = True
        self._value = None
        env.schedule(self, priority=priority)


class Joins:
    """The runner's joins of branches (see the module doc). ``wrapped``: each branch runs in a wrapper process
    (with shared accounts: the event order they were tuned on); ``env``: the environment of the runs, set by
    the runner before they run."""

    __slots__ = ("env", "rec", "wrapped")

    def __init__(self, rec: Recorder, wrapped: bool):
        self.rec, self.wrapped = rec, wrapped
        self.env: simpy.Environment = None  # type: ignore[assignment]

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
                    self.rec.cancel_fixed(c, r, flat, t0, env.now)
            raise
        c, flat = calls[critical_all(ends)]
        j = r * c.width + flat
        acc = st.acc
        acc[TTFT] += c.ttft[j]
        acc[DEC] += c.dec[j]
        if c.stall is not None and c.stall[j]:
            acc[STALL] += c.stall[j]

    def join(self, branches: list[tuple[SeqNode, int]], k: int | None, st: Flow, seq: Callable):
        """Run ``branches`` (sequence, instance) as processes, each ``seq(node, flow, instance)`` (the runner's
        sequence form); wait for all, or for the first ``k``.

        The parent carries on with the critical branch's breakdown (rules.critical_all / rules.race);
        in a race the losers are cancelled once everything else at the deciding instant has happened.
        """
        nb = len(branches)
        if nb == 0:
            return
        cfg = st.ctx.cfg
        static = not cfg.grows and not cfg.cache  # nothing can change the context: branches share it
        states = [Flow(st.ctx if static else st.ctx.fork(), list(st.acc), st.r) for _ in range(nb)]
        # a race is settled after the races nested in its branches at the same instant (ties by branch order)
        settle = SETTLE + max(_height(seq) for seq, _ in branches)
        bar = _Barrier(self.env, nb, nb if k is None else min(k, nb), settle)
        procs = self._start_branches(branches, states, bar, seq)
        try:
            yield bar.done
        except (simpy.Interrupt, RunFailed):
            _stop(procs)
            raise
        if bar.k == nb:
            critical, winners = critical_all(bar.ends), range(nb)
        else:
            critical, winners = race(bar.ends, bar.k)
            _stop(procs)
        if not static:
            st.ctx.join([states[b].ctx for b in winners])
        st.acc[:] = states[critical].acc

    def _start_branches(self, branches: list[tuple[SeqNode, int]], states: list[Flow], bar: _Barrier,
                        seq: Callable) -> list:  # fmt: skip
        """Each branch's process (``seq`` of its sequence), its end or failure reported to ``bar``."""
        env = self.env
        if self.wrapped:  # each branch in a wrapper process (the event order shared accounts were tuned on)
            return [env.process(_branch(seq, node, flat, states[b], b, bar)) for b, (node, flat) in enumerate(branches)]
        procs = []  # each branch's sequence is its process; its end is seen by a callback
        for b, (node, flat) in enumerate(branches):
            p = env.process(seq(node, states[b], flat))
            p.callbacks.append(lambda ev, b=b: bar.ended(ev, b))
            procs.append(p)
        return procs


def _branch(seq: Callable, node: SeqNode, flat: int, st: Flow, b: int, bar: _Barrier):
    """Branch ``b`` in a wrapper process: ``seq`` of its sequence, then its end (or failure) reported to ``bar``."""
    try:
        yield from seq(node, st, flat)
    except (simpy.Interrupt, RunFailed) as exc:
        bar.failed(exc)
        return
    bar.finished(b)


class _Barrier:
    """A join's bookkeeping: when each branch ended, and ``done``, which fires once ``k`` have (a race: after
    everything else at that instant has happened) or fails when a branch fails the run."""

    __slots__ = ("count", "done", "ends", "env", "k", "settle")

    def __init__(self, env: simpy.Environment, nb: int, k: int, settle: int = SETTLE):
        self.env, self.k, self.count, self.settle = env, k, 0, settle
        self.ends: list[float | None] = [None] * nb
        self.done = env.event()

    def finished(self, b: int) -> None:
        """Branch ``b`` ended now."""
        self.ends[b] = self.env.now
        self.count += 1
        if self.count == self.k:
            if self.k == len(self.ends):
                self.done.succeed()
            else:  # decide the race once everything else at this instant has happened
                _Settle(self.env, self.settle).callbacks.append(lambda _ev: self.done.succeed())

    def failed(self, exc: BaseException) -> None:
        """A branch was cancelled (nothing to do) or failed the run (the parent stops the other branches)."""
        if isinstance(exc, RunFailed) and not self.done.triggered:
            self.done.fail(exc)

    def ended(self, ev: simpy.Event, b: int) -> None:
        """The end of branch ``b``'s process: finished, or cancelled or failed (handled here)."""
        if ev.ok:
            self.finished(b)
        elif isinstance(ev.value, simpy.Interrupt | RunFailed):
            ev.defused = True
            self.failed(ev.value)


def _stop(procs: list) -> None:
    """Interrupt the processes still alive."""
    for p in procs:
        if p.is_alive:
            p.interrupt()

"""Many agents sharing provider accounts over time: open and closed workloads.

One SimPy environment holds every run and the accounts they share
(:mod:`agentsim.plan.limits`). Runs are numbered in the order they start; run ``i``
reads its draws from block ``i // 4096`` exactly as a replication would, so a
workload is as reproducible as a single-agent simulation.

* **Open** (``arrivals: {per_hour: λ}``): runs arrive as a Poisson process; the gap
  before run ``i`` is drawn from run ``i``'s own stream.
* **Closed** (``concurrent: N``): ``N`` agents each start a new run when their
  previous one ends, after an optional ``think_time`` (drawn for the run that
  just ended).

Which runs count: those that *start* in ``[warmup, duration]``. Arrivals (or
agents) keep going after ``duration`` so that the counted runs finish under the
same load; the simulation stops when every counted run has finished, or at
``2 x duration`` at the latest (counted runs still going then are reported as
unfinished: the accounts cannot keep up).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import simpy

from agentsim.plan.limits import Account
from agentsim.plan.nodes import ARRIVAL, THINK, Plan
from agentsim.plan.sampling import call_speeds, sample_block
from agentsim.plan.sizeguard import max_workload_runs, runs_per_block, workload_runaway
from agentsim.sim.des_records import finish_block
from agentsim.sim.engine import Runner
from agentsim.sim.records import RUN_FAILED, RUN_UNFINISHED, BlockResult, price_calls

__all__ = ["WorkloadOutcome", "run_workload"]


@dataclass
class WorkloadOutcome:
    blocks: list[BlockResult]
    accounts: list[Account]
    end_s: float
    window: tuple[float, float]  # (warmup, duration)
    started: int = 0


SAME_INSTANT_MAX = 10_000  # events let happen at t = duration before the stop check


def run_workload(plan: Plan, seed: int, variant: int, progress=None) -> WorkloadOutcome:
    """One variant's workload in one SimPy environment (see the module doc). ``progress(now)`` is called
    with the simulated clock as runs end (at most about 200 times over the window): it reads the clock
    and schedules nothing, so it changes no result."""
    return _Workload(plan, seed, variant, progress).run()


class _Workload:
    """The runs of one variant's workload: their runners (one per block, made when a run of it starts),
    the shared accounts, and the clock that ends the simulation."""

    def __init__(self, plan: Plan, seed: int, variant: int, progress=None):
        assert plan.workload is not None
        self.progress, self.told = progress, 0.0  # the clock last handed to ``progress``
        self.plan, self.seed, self.variant, self.wl = plan, seed, variant, plan.workload
        self.env = simpy.Environment()
        self.accounts = [Account.create(spec, self.env) for spec in plan.accounts]
        self.runners: dict[int, Runner] = {}
        self.flags: dict[int, dict[str, np.ndarray]] = {}
        self.ended: dict[int, int] = {}  # block -> its runs that ended
        self.finished: dict[int, BlockResult] = {}  # blocks whose every run ended, finished at once
        self.next = 0  # the next run's index
        self.counted_in_flight = 0
        self.ended_runs = self.failed_runs = 0  # (for the runaway error: why runs end so fast)
        self.failed_s = 0.0
        self.past_duration = False
        self.cap = max_workload_runs(plan)
        self.size = runs_per_block(plan)  # runs per block
        self.stop = self.env.event()

    def runner_for(self, i: int) -> tuple[Runner, int]:
        """The runner of run ``i``'s block (sampled on first use) and the run's index in it."""
        b = i // self.size
        assert b not in self.finished, "a run of a block already finished"
        if b not in self.runners:
            plan, v = self.plan, self.variant
            block = sample_block(plan, self.seed, b, b * self.size, self.size)
            rn = Runner(plan, block, v, call_speeds(plan, block, v))
            rn.share(self.env, self.accounts)
            self.runners[b] = rn
            self.flags[b] = {k: np.zeros(self.size, bool) for k in ("started", "counted", "finished")}
        return self.runners[b], i % self.size

    def maybe_stop(self) -> None:
        if self.past_duration and self.counted_in_flight == 0 and not self.stop.triggered:
            self.stop.succeed()

    def one(self, i: int):
        """The process of run ``i``: counted when it starts inside the window."""
        rn, r = self.runner_for(i)
        f = self.flags[i // self.size]
        counted = self.wl.warmup_s <= self.env.now <= self.wl.duration_s
        f["started"][r] = True
        f["counted"][r] = counted
        if counted:
            self.counted_in_flight += 1
        t0 = self.env.now
        yield from rn.top(r)
        f["finished"][r] = True
        self.ended_runs += 1
        if rn.status[r] == RUN_FAILED:
            self.failed_runs += 1
            self.failed_s += self.env.now - t0
        self._ended(i // self.size)
        if self.progress is not None and self.env.now >= self.told + self.wl.duration_s / 200:
            self.told = self.env.now
            self.progress(self.told)
        if counted:
            self.counted_in_flight -= 1
            self.maybe_stop()

    def next_index(self) -> int:
        i = self.next
        if i >= self.cap:  # runs that take (almost) no time, or arrivals faster than anything can serve
            raise workload_runaway(i, self.ended_runs, self.failed_runs, self.failed_s)
        self.next += 1
        return i

    def arrivals(self):
        """Open loop: a run after each drawn gap (run ``i``'s own draw)."""
        while True:
            i = self.next_index()
            rn, r = self.runner_for(i)
            yield self.env.timeout(rn.value_at(self.wl.node, ARRIVAL, r))
            self.env.process(self.one(i))

    def agent(self):
        """Closed loop: one agent's runs, one after the other, with its think time between them (the
        ended run's draw, read as it starts: its block may be finished and let go when it ends)."""
        while True:
            i = self.next_index()
            think = None
            if self.wl.think is not None:
                rn, r = self.runner_for(i)
                think = rn.value_at(self.wl.node, THINK, r)
            yield self.env.process(self.one(i))
            if think is not None:
                yield self.env.timeout(think)

    def clock(self):
        env, wl = self.env, self.wl
        yield env.timeout(wl.duration_s)
        # runs that start at exactly `duration` are counted (the window is closed): let every event of
        # this instant happen before asking whether the counted runs are all done
        for _ in range(SAME_INSTANT_MAX):  # bounded: runs that take no time could fill the instant forever
            if env.peek() != env.now:
                break
            yield env.timeout(0)
        self.past_duration = True
        self.maybe_stop()
        yield env.timeout(wl.duration_s)  # drain limit
        if not self.stop.triggered:
            self.stop.succeed()

    def run(self) -> WorkloadOutcome:
        env, wl = self.env, self.wl
        if wl.kind == "open":
            env.process(self.arrivals())
        else:
            for _ in range(wl.concurrent):
                env.process(self.agent())
        env.process(self.clock())
        env.run(until=self.stop)
        blocks = [
            self.finished[b] if b in self.finished else self._finish(b) for b in sorted({*self.runners, *self.finished})
        ]
        self.runners.clear()  # their results are in the blocks; the runners (every draw) can go
        for acc in self.accounts:
            acc.detach()  # runs still in flight at the stop hold their runners through the environment
        return WorkloadOutcome(blocks, self.accounts, env.now, (wl.warmup_s, wl.duration_s), started=self.next)

    def _ended(self, b: int) -> None:
        """A run of block ``b`` ended: when it was the block's last, the block is finished now and its
        runner let go (a workload holds the runners of the blocks with runs in flight, not of every
        block). Finishing a block whose runs have all ended gives what finishing it at the stop would."""
        self.ended[b] = self.ended.get(b, 0) + 1
        if self.ended[b] == self.size:
            self.finished[b] = self._finish(b)
            del self.runners[b], self.flags[b]

    def _finish(self, b: int) -> BlockResult:
        rn, f = self.runners[b], self.flags[b]
        unfinished = f["started"] & ~f["finished"]
        rn.status[unfinished] = RUN_UNFINISHED
        rn.wall[unfinished] = self.env.now - rn.start[unfinished]
        res = finish_block(self.plan, rn, rn.block, self.variant, start=rn.start.copy())
        # always: without limits or failures finish_block leaves the status out, and an unfinished run
        # would read as completed (status 0) with its wall time cut at the stop
        res.status = rn.status.copy()
        res.counted = f["counted"].copy()
        res.started = f["started"].copy()
        price_calls(self.plan, res, rn.speeds)  # priced here, so that the block's draws can go
        if not self.plan.has_streaming:  # (the streaming metrics read the draws again: those keep them)
            res.block = dataclasses.replace(res.block, values={}, by_variant={}, speed_cache={}, stream_cache={})
        return res

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

from dataclasses import dataclass

import numpy as np
import simpy

from agentsim.plan.limits import Account
from agentsim.plan.nodes import ARRIVAL, THINK, Plan
from agentsim.plan.sampling import BLOCK_SIZE, call_speeds, sample_block
from agentsim.plan.sizeguard import max_workload_runs, workload_runaway
from agentsim.sim.des_records import finish_block
from agentsim.sim.engine import Runner
from agentsim.sim.records import RUN_UNFINISHED, BlockResult

__all__ = ["WorkloadOutcome", "run_workload"]


@dataclass
class WorkloadOutcome:
    blocks: list[BlockResult]
    accounts: list[Account]
    end_s: float
    window: tuple[float, float]  # (warmup, duration)
    started: int = 0


SAME_INSTANT_MAX = 10_000  # events let happen at t = duration before the stop check


def run_workload(plan: Plan, seed: int, variant: int) -> WorkloadOutcome:
    wl = plan.workload
    assert wl is not None
    env = simpy.Environment()
    accounts = [Account.create(spec, env) for spec in plan.accounts]
    runners: dict[int, Runner] = {}
    flags: dict[int, dict[str, np.ndarray]] = {}

    def runner_for(i: int) -> tuple[Runner, int]:
        b = i // BLOCK_SIZE
        if b not in runners:
            block = sample_block(plan, seed, b, b * BLOCK_SIZE, BLOCK_SIZE)
            rn = Runner(plan, block, variant, call_speeds(plan, block, variant))
            rn.share(env, accounts)
            runners[b] = rn
            flags[b] = {
                "started": np.zeros(BLOCK_SIZE, bool),
                "counted": np.zeros(BLOCK_SIZE, bool),
                "finished": np.zeros(BLOCK_SIZE, bool),
            }
        return runners[b], i % BLOCK_SIZE

    state = {"next": 0, "counted_in_flight": 0, "past_duration": False}
    cap = max_workload_runs(plan)
    stop = env.event()

    def maybe_stop() -> None:
        if state["past_duration"] and state["counted_in_flight"] == 0 and not stop.triggered:
            stop.succeed()

    def run(i: int):
        rn, r = runner_for(i)
        f = flags[i // BLOCK_SIZE]
        counted = wl.warmup_s <= env.now <= wl.duration_s
        f["started"][r] = True
        f["counted"][r] = counted
        if counted:
            state["counted_in_flight"] += 1
        yield from rn.top(r)
        f["finished"][r] = True
        if counted:
            state["counted_in_flight"] -= 1
            maybe_stop()

    def next_index() -> int:
        i = state["next"]
        if i >= cap:  # runs that take (almost) no time, or arrivals faster than anything can serve
            raise workload_runaway(i)
        state["next"] += 1
        return i

    def arrivals():
        while True:
            i = next_index()
            rn, r = runner_for(i)
            yield env.timeout(rn.value_at(wl.node, ARRIVAL, r))
            env.process(run(i))

    def agent():
        while True:
            i = next_index()
            yield env.process(run(i))
            if wl.think is not None:
                rn, r = runner_for(i)
                yield env.timeout(rn.value_at(wl.node, THINK, r))

    def clock():
        yield env.timeout(wl.duration_s)
        # runs that start at exactly `duration` are counted (the window is closed): let every event of
        # this instant happen before asking whether the counted runs are all done
        for _ in range(SAME_INSTANT_MAX):  # bounded: runs that take no time could fill the instant forever
            if env.peek() != env.now:
                break
            yield env.timeout(0)
        state["past_duration"] = True
        maybe_stop()
        yield env.timeout(wl.duration_s)  # drain limit
        if not stop.triggered:
            stop.succeed()

    if wl.kind == "open":
        env.process(arrivals())
    else:
        for _ in range(wl.concurrent):
            env.process(agent())
    env.process(clock())
    env.run(until=stop)

    blocks = []
    for b in sorted(runners):
        rn, f = runners[b], flags[b]
        unfinished = f["started"] & ~f["finished"]
        rn.status[unfinished] = RUN_UNFINISHED
        rn.wall[unfinished] = env.now - rn.start[unfinished]
        res = finish_block(plan, rn, rn.block, variant, start=rn.start.copy())
        # always: without limits or failures finish_block leaves the status out, and an unfinished run
        # would read as completed (status 0) with its wall time cut at the stop
        res.status = rn.status.copy()
        res.counted = f["counted"].copy()
        res.started = f["started"].copy()
        blocks.append(res)
    return WorkloadOutcome(blocks, accounts, env.now, (wl.warmup_s, wl.duration_s), started=state["next"])

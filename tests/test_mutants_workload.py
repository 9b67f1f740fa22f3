"""The workload loop's bookkeeping by hand (issue 24: `make mutate` on sim/workload.py).

Each test computes its expected figures in its comments from the workload rules (agentsim.sim.workload's
module doc and docs/concepts.md): a closed loop of agents starts a run as its previous one ends; runs that
start inside ``[warmup, duration]`` are counted; the simulation stops when the clock is past ``duration``
and no counted run is in flight, or at ``2 x duration`` (the drain limit), where the runs still in flight
are unfinished. A block of runs is finished, and its draws let go, when its last run ends.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from agentsim.plan.compiler import compile_plan
from agentsim.plan.sizeguard import SizeError
from agentsim.sim import workload
from agentsim.sim.records import RUN_UNFINISHED
from conftest import make, scenario


def plan_of(latency, duration_s: float, concurrent: int = 1, call: bool = False, **wl):
    """A closed workload whose every run is one wait of ``latency`` seconds (a constant: times are exact), after
    a call if ``call``."""
    doc = scenario(
        [{"call": {"output": 10}}] * call + [{"wait": {"latency": latency}}],
        workload={"concurrent": concurrent, "duration": {"seconds": duration_s}, **wl},
    )
    return compile_plan(make(doc))


@pytest.mark.parametrize(
    ("duration", "told"),
    [
        # duration / 200 = 1.0 s: runs end at 1, 2, 3... s; each end is at least 1.0 s after the last report
        # (the first after 0), so every end is reported: 1, 2, 3...
        (200.0, [float(t) for t in range(1, 41)]),
        # duration / 200 = 1.005 s: the end at 1 s is too soon (1 < 0 + 1.005), the end at 2 s is reported,
        # then 3 < 2 + 1.005 is not, 4 is: every second end
        (201.0, [float(t) for t in range(2, 81, 2)]),
    ],
)
def test_progress_reports_the_clock_at_most_every_200th_of_the_duration(duration, told):
    seen: list[float] = []
    workload.run_workload(plan_of(1.0, duration), seed=1, variant=0, progress=seen.append)
    assert seen[: len(told)] == told
    assert all(b - a >= duration / 200 for a, b in itertools.pairwise(seen))


def test_every_run_index_handed_out_is_counted_as_started_from_run_0():
    # 3 agents, runs of 1 s, 10 s: each agent starts a run at 0, 1, ..., 10 s (the window is closed) -- 33
    # runs, numbered from 0. An agent whose run ends at 11 s may take the next index before the stop.
    out = workload.run_workload(plan_of(1.0, 10.0, concurrent=3), seed=1, variant=0)
    flagged = int(sum(b.started.sum() for b in out.blocks))
    assert flagged >= 33 and flagged <= out.started <= flagged + 3
    first = out.blocks[0]
    assert first.started[:33].all() and first.counted[:33].all()


def test_the_runaway_cap_lets_exactly_that_many_runs_start(monkeypatch):
    # 1 agent, runs of 1 s, 10 s: it starts runs 0..10 (11 runs, the last at 10 s); when run 10 ends at 11 s
    # no counted run is in flight past the duration, and the simulation stops. A cap of 11 runs is never
    # exceeded; a cap of 10 refuses index 10, asked for at 10 s: "started 10 runs".
    monkeypatch.setattr(workload, "max_workload_runs", lambda plan: 11)
    out = workload.run_workload(plan_of(1.0, 10.0), seed=1, variant=0)
    assert out.started == 11 and int(out.blocks[0].started.sum()) == 11 and out.end_s == 11.0
    monkeypatch.setattr(workload, "max_workload_runs", lambda plan: 10)
    with pytest.raises(SizeError, match="started 10 runs"):
        workload.run_workload(plan_of(1.0, 10.0), seed=1, variant=0)


def test_a_run_in_flight_at_the_drain_limit_is_unfinished_with_its_wall_time_cut_there():
    # 1 agent, one run of 100 s, duration 10 s: run 0 starts at 0 (counted); at 10 s the clock is past the
    # duration but the counted run is in flight, so the simulation waits until the drain limit, 2 x 10 = 20 s.
    # Run 0 is unfinished there, with wall time 20 - 0 = 20 s.
    out = workload.run_workload(plan_of(100.0, 10.0), seed=1, variant=0)
    assert out.end_s == 20.0 and out.started == 1
    b = out.blocks[0]
    assert b.status[0] == RUN_UNFINISHED and b.wall[0] == 20.0
    # 4 agents whose runs take 1 or 100 s at random: runs started after 0 are in flight at the drain limit,
    # each with its wall time from its own start to the stop
    out = workload.run_workload(plan_of({"choice": {"values": [1, 100]}}, 10.0, concurrent=4), seed=5, variant=0)
    b = out.blocks[0]
    left = np.nonzero(b.status == RUN_UNFINISHED)[0]
    assert (b.start[left] > 0).any() and np.array_equal(b.wall[left], out.end_s - b.start[left])


def test_a_block_is_finished_and_let_go_when_its_last_run_ends(monkeypatch):
    # Blocks of 4 runs: 1 agent with runs of 1 s for 15 s starts runs 0..15. Block 0 (runs 0-3) has its last
    # run end at 4 s: from then it is finished (its runner gone), and so on; the results are those of
    # finishing every block at the stop. A plan without streaming keeps no draws in a finished block.
    # Progress is told as a run ends, before its agent starts the next one (at the same instant).
    monkeypatch.setattr(workload, "runs_per_block", lambda plan: 4)
    looks: list[tuple[float, set, set]] = []

    class Spy(workload._Workload):
        def __init__(self, *a, **k):
            super().__init__(*a, progress=lambda t: looks.append((t, set(self.runners), set(self.finished))))

    early = Spy(plan_of(1.0, 15.0, call=False), 1, 0).run()
    by_time = {t: (running, done) for t, running, done in looks}
    assert by_time[3.0] == ({0}, set())  # run 3 (block 0's last) is in flight until 4 s
    assert by_time[4.0] == (set(), {0})  # run 4 (block 1) not started yet
    assert by_time[5.0] == ({1}, {0})
    assert by_time[12.0] == (set(), {0, 1, 2})
    assert by_time[15.0] == ({3}, {0, 1, 2})  # run 15 is in flight until 16 s
    with_call = workload.run_workload(plan_of(1.0, 15.0, call=True), seed=1, variant=0)
    for b in (*early.blocks, *with_call.blocks):  # (a call's speeds were cached while its block ran)
        assert (b.block.values, b.block.by_variant, b.block.speed_cache, b.block.stream_cache) == ({}, {}, {}, {})
    monkeypatch.setattr(workload._Workload, "_ended", lambda self, b: None)  # every block finished at the stop
    late = workload.run_workload(plan_of(1.0, 15.0), seed=1, variant=0)
    assert len(early.blocks) == len(late.blocks) == 4
    for a, b in zip(early.blocks, late.blocks, strict=True):
        assert np.array_equal(a.wall, b.wall) and np.array_equal(a.start, b.start)
        assert np.array_equal(a.started, b.started) and np.array_equal(a.counted, b.counted)


def test_a_workload_draws_from_its_seed():
    # Runs of a random length: the same seed gives the same runs, bit for bit; another seed other runs
    plan = plan_of({"lognormal": {"median": 1, "p90": 3}}, 30.0, concurrent=3)
    walls = [workload.run_workload(plan, seed=s, variant=0).blocks[0].wall for s in (7, 7, 8)]
    assert np.array_equal(walls[0], walls[1], equal_nan=True)
    assert not np.array_equal(walls[0], walls[2], equal_nan=True)

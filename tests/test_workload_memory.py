"""What a DES simulation keeps: draws as arrays of machine numbers, account logs as pairs of arrays, and
no runner once a workload is over (runs in flight at the stop held theirs through the environment).

None of this may change a result: the golden summaries (team-of-agents, slow-afternoon) and the engine
agreement tests check the numbers; these check that the memory is let go.
"""

from __future__ import annotations

import dataclasses
import gc
import weakref
from array import array

import numpy as np

import agentsim
from agentsim.plan.compiler import compile_plan
from agentsim.plan.limits import PairLog
from agentsim.plan.nodes import U_ERROR, U_JITTER
from agentsim.plan.sampling import call_speeds, sample_block
from agentsim.sim.engine import Runner
from conftest import make, model, scenario


def _workload() -> dict:
    return scenario(
        [{"repeat": {"times": 5, "steps": [{"call": {"model": "m", "output": 200}}, {"tool": {"latency": 3.0}}]}}],
        models={"m": model(ttft={"lognormal": {"median": 1, "p90": 2}}, retry={"max_attempts": 3})},
        variants={"a": {}, "b": {}},
        limits={"acct": {"models": ["m"], "rpm": 30, "output_tpm": 20000, "policy": "reject"}},
        workload={"concurrent": 6, "duration": {"minutes": 20}},
    )


def test_no_runner_outlives_a_workload():
    res = agentsim.simulate(make(_workload()))
    assert res.outcomes and all(acc.env is None for out in res.outcomes for acc in out.accounts)
    gc.collect()
    assert not [o for o in gc.get_objects() if isinstance(o, Runner)]
    assert res.summary_dict()["variants"]["a"]["limits"]["accounts"]["acct"]["rpm"]["admitted_per_min"] > 0


def test_account_logs_are_pairs_of_arrays_read_as_a_list_of_pairs():
    log = PairLog()
    log.append((0.5, 2.0))
    log.append((1.5, 3.25))
    assert len(log) == 2 and list(log) == [(0.5, 2.0), (1.5, 3.25)] and log[-1] == (1.5, 3.25)
    assert log == [(0.5, 2.0), (1.5, 3.25)] and log != [(0.5, 2.0)] and log != "x"
    counts = PairLog("q")
    counts.append((1.0, 3))
    assert counts[0] == (1.0, 3) and type(counts[0][1]) is int  # in-flight counts stay integers
    assert isinstance(log.t, array) and log.t.itemsize == 8


def test_the_des_reads_its_draws_from_arrays_with_the_values_of_lists():
    plan = compile_plan(make(_workload()))
    block = sample_block(plan, 1, 0, 0, 64)
    rn = Runner(plan, block, 0, call_speeds(plan, block, 0))
    # a call's per-attempt uniforms are drawn when first read, as sample_block draws them when told to
    eager = dataclasses.replace(plan, draws=[dataclasses.replace(d, late=False) for d in plan.draws])
    drawn = sample_block(eager, 1, 0, 0, 64).values_for(0)
    arrays = 0
    for purpose in (U_ERROR, U_JITTER):
        assert (plan.calls[0].id, purpose) not in block.values
        got = rn.limited.uniforms(plan.calls[0], purpose)
        assert list(got) == np.asarray(drawn[(plan.calls[0].id, purpose)]).reshape(-1).tolist()
        arrays += isinstance(got, array)
    for key, got in rn.tl.items():
        want = drawn[key]
        if rn.const[key]:
            assert got == [want.item(0)]
            continue
        arrays += isinstance(got, array)
        assert list(got) == np.asarray(want).reshape(-1).tolist()
        assert [type(x) for x in got[:1]] == [type(x) for x in np.asarray(want).reshape(-1).tolist()[:1]]
    assert arrays > 0


def test_blocks_finished_as_their_last_run_ends_give_the_same_results(monkeypatch):
    # 3 agents for 30 hours with a short think time: more than 4,096 runs, so block 0 ends mid-simulation
    from agentsim.sim import workload

    doc = scenario(
        [{"call": {"model": "m", "output": 100}}, {"tool": {"latency": {"exponential": {"mean": 2}}}}],
        models={"m": model(ttft={"lognormal": {"median": 1, "p90": 2}})},
        variants={"a": {}, "b": {"model": {"m": "q"}}},
        workload={"concurrent": 3, "duration": {"hours": 30}, "think_time": {"exponential": {"mean": 5}}},
    )
    doc["models"]["q"] = model(tps=300)
    early = agentsim.simulate(make(doc))
    assert early.runs["run"].max() > 4096
    monkeypatch.setattr(workload._Workload, "_ended", lambda self, b: None)  # every block finished at the stop
    late = agentsim.simulate(make(doc))
    assert early.to_json() == late.to_json()
    assert early.runs.equals(late.runs) and early.calls.equals(late.calls)


def test_a_runner_is_let_go_without_the_cyclic_collector():
    # a runner and its parts hold no reference cycle (docs/design.md: bound methods stored on the engine kept
    # every block's tensors until the cyclic GC ran): dropped, it is freed at once
    plan = compile_plan(make(_workload()))
    block = sample_block(plan, 1, 0, 0, 16)
    was = gc.isenabled()
    gc.disable()
    try:
        rn = Runner(plan, block, 0, call_speeds(plan, block, 0))
        for r in range(block.n):
            rn.run_one(r)
        gone = weakref.ref(rn)
        del rn
        assert gone() is None
    finally:
        if was:
            gc.enable()

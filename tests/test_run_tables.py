"""The calls and spans of a few runs (``Results.tables_of``), and a report that never builds the whole tables.

``tables_of(runs)`` reads (or simulates again) only the blocks of runs that hold them; its rows must be
exactly the rows of those runs in the whole tables, in the same order, for every engine and for a
workload. The report reads its critical-path table and Gantt chart that way, so a report of any size
holds one block of calls, not the simulation's: checked by making ``Results.calls`` unusable.
"""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

import agentsim
from agentsim.plan.compiler import compile_plan
from agentsim.sim import simulation
from agentsim.sim.results import Results
from conftest import SCENARIOS, assert_frames_identical, make, model, scenario

RUNS = {0, 3, 4095, 4096, 5001}  # in the first and the second block of 4,096 runs

DOC = scenario(
    [
        {"call": {"name": "plan", "model": "m", "output": 60}},
        {
            "repeat": {
                "times": {"uniform": {"low": 1, "high": 4}},
                "steps": [{"call": {"model": "m", "output": 80}}, {"tool": {"name": "t", "latency": 0.5}}],
            }
        },
    ],
    models={"m": model(ttft={"lognormal": {"median": 1, "p90": 2}}), "q": model(tps=400)},
    variants={"slow": {}, "quick": {"model": {"m": "q"}}},
    runs=6000,
)


def _rows(df: pd.DataFrame, runs: set) -> pd.DataFrame:
    return df[df["run"].isin(runs)].reset_index(drop=True)


def _check(res: Results, runs: set) -> None:
    calls, spans = res.tables_of(runs)
    assert set(calls["run"]) <= runs and set(spans["run"]) <= runs
    assert_frames_identical(calls, _rows(res.calls, runs))
    assert_frames_identical(spans, _rows(res.spans, runs))
    assert list(calls["variant"].cat.categories) == res.variants


@pytest.mark.parametrize("keep", [False, True], ids=["simulated-again", "kept"])
@pytest.mark.parametrize("engine", ["fastpath", "des"])
def test_the_rows_of_a_few_runs_are_those_of_the_whole_tables(engine, keep):
    res = simulation.simulate_plan(compile_plan(make(DOC)), 6000, 7, engine=engine, keep_calls=keep)
    _check(res, RUNS)
    assert set(res.tables_of(RUNS)[0]["run"]) == RUNS == set(res.tables_of(RUNS)[1]["run"])


def test_a_workload_gives_the_rows_of_the_runs_in_the_order_they_started(tmp_path):
    doc = {**DOC, "workload": {"concurrent": 4, "duration": {"hours": 2}, "warmup": {"minutes": 2}}}
    res = agentsim.simulate(make(doc))
    done = res.runs.loc[res.runs["status"] == 0, "run"]
    assert done.max() >= 4096  # runs in two blocks
    _check(res, {0, 5, int(done.max())})


def test_runs_that_do_not_exist_give_no_rows():
    res = simulation.simulate_plan(compile_plan(make(DOC)), 100, 7, engine="fastpath")
    calls, spans = res.tables_of({5000, -1})
    assert len(calls) == 0 and len(spans) == 0


def test_a_report_never_builds_the_whole_calls_table(tmp_path, monkeypatch):
    from agentsim.viz.report import build_report

    def refuse(self):
        raise AssertionError("the report built the whole calls table")

    monkeypatch.setattr(Results, "calls", property(refuse))
    monkeypatch.setattr(Results, "spans", property(refuse))
    path = tmp_path / "two-blocks.yaml"
    path.write_text(yaml.safe_dump(DOC))
    page = build_report(path, runs=6000, seed=3)
    assert "Read from the runs numbered below 500 that completed (of 6,000 runs)" in page
    page = build_report(SCENARIOS / "coding-agent.yaml", runs=300, sweep=False)
    assert "Read from the runs numbered below" not in page  # every run is read: nothing to say


BUNDLED = sorted([*SCENARIOS.glob("*.yaml"), *(SCENARIOS / "claims").glob("*.yaml")])


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.stem)
def test_every_bundled_scenario_gives_the_rows_of_a_few_runs(path):
    sc = agentsim.load(path)
    if sc.workload is not None and sc.workload.simulates_many:
        pytest.skip("a workload: covered above, on a small one")
    res = simulation.simulate_plan(compile_plan(sc), 1000, sc.seed)
    _check(res, {0, 7, 299})  # the first 300 runs of a block of 1,000 simulated again

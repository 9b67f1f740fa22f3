"""Sweeps: --set syntax, ranges, applying values, errors, the sweeps: section, and determinism."""

from __future__ import annotations

import copy
import json

import pandas as pd
import pytest
import yaml

from agentsim.analysis.sweeps import (
    apply_values,
    axes_from_scenario,
    grid,
    parse_path,
    parse_set,
    parse_values,
    range_values,
    run_sweep,
    summary_rows,
)
from agentsim.model.loading import ScenarioError, load_data
from agentsim.plan.compiler import compile_plan
from agentsim.plan.validation import parse
from agentsim.sim.simulation import simulate_plan
from conftest import SCENARIOS, assert_frames_identical, model, scenario

CODING = SCENARIOS / "coding-agent.yaml"
CHAT = SCENARIOS / "chat-turn.yaml"


# --------------------------------------------------------------------------- syntax


def test_ranges_include_stop_on_the_grid_and_are_exact():
    assert range_values("1.5", "4", "0.5") == [1.5, 2.0, 2.5, 3.0, 3.5, 4.0]
    assert range_values("1", "4", "2") == [1, 3]  # 4 is not on the grid 1, 3, 5
    assert range_values("10", "40", "10") == [10, 20, 30, 40]
    assert all(isinstance(v, int) for v in range_values("10", "40", "10"))
    assert range_values("0.1", "0.3", "0.1") == [0.1, 0.2, 0.3]  # decimal arithmetic: no 0.30000000000000004
    assert range_values("4", "1", "-1") == [4, 3, 2, 1]
    for bad in (("1", "2", "0"), ("1", "2", "-1"), ("a", "2", "1")):
        with pytest.raises(ValueError):
            range_values(*bad)


def test_values_and_paths():
    assert parse_values("10,20,40") == [10, 20, 40]
    assert parse_values("fast,standard") == ["fast", "standard"]
    assert parse_values("[1, 2.5]") == [1, 2.5]
    assert parse_values("{lognormal: {median: 2, p90: 5}}") == [{"lognormal": {"median": 2, "p90": 5}}]
    assert parse_values("1:2:0.5") == [1.0, 1.5, 2.0]
    with pytest.raises(ValueError, match="start:stop:step"):
        parse_values("1:5")
    assert parse_path("agent.steps[1].repeat.times") == ("agent", "steps", 1, "repeat", "times")
    assert parse_path('models."gpt-5.2".ttft') == ("models", "gpt-5.2", "ttft")
    assert parse_path("variants.fast-plan-only.speed.plan") == ("variants", "fast-plan-only", "speed", "plan")
    for bad in ("", "a..b", "a.", "a[x]", "a[1"):
        with pytest.raises(ValueError):
            parse_path(bad)
    with pytest.raises(ValueError, match="PATH=VALUES"):
        parse_set("models.opus.ttft")


def test_grid_is_the_product_first_axis_slowest():
    a, b = parse_set("x=1,2"), parse_set("y=a,b,c")
    pts = grid([a, b])
    assert pts == [{"x": x, "y": y} for x in (1, 2) for y in "abc"]


# --------------------------------------------------------------------------- applying values


def test_apply_values_changes_only_the_target():
    data, lines = load_data(CODING)
    axis = parse_set("agent.steps[1].repeat.times=12")
    sc = apply_values(data, [axis], {axis.text: 12}, file=str(CODING), lines=lines, source=CODING)
    assert sc.agent.steps[1].repeat.times == 12
    assert data["agent"]["steps"][1]["repeat"]["times"] == {"uniform": {"low": 30, "high": 40}}  # untouched
    base = parse(copy.deepcopy(data))
    assert sc.model_dump(exclude={"agent"}) == base.model_dump(exclude={"agent"})


@pytest.mark.parametrize(
    ("option", "where", "words"),
    [
        # where: the place whose line the message must give
        ("models.opus.speeds.fsat.output_tps_x=2", ("models", "opus", "speeds"), "did you mean 'fast'"),
        ("agent.steps[7].call.output=5", ("agent", "steps"), "there are 3 items here"),
        ("models.opus.output_tps=0", ("models", "opus", "output_tps"), "above zero"),
        ("models.opus.output_tsp=50", ("models", "opus"), "did you mean 'output_tps'"),
    ],
)
def test_errors_name_the_set_option_file_line_and_path(option, where, words):
    data, lines = load_data(CODING)
    axis = parse_set(option)
    with pytest.raises(ScenarioError) as exc:
        apply_values(data, [axis], {axis.text: axis.values[0]}, file=str(CODING), lines=lines, source=CODING)
    (item,) = exc.value.items
    text = str(item)
    line = lines[where]
    assert CODING.read_text().splitlines()[line - 1].strip().startswith(str(where[-1]))  # the line is that key's
    assert text.startswith(f"{CODING}:{line}:"), text
    assert "--set " + option.split("=")[0] in text
    assert words in text


def test_sweeps_section_matches_set_options(tmp_path):
    doc = yaml.safe_load(CHAT.read_text())
    doc["sweeps"] = [
        {"set": "agent.steps[0].call.input", "values": [500, 4000]},
        {
            "set": "models.flash.output_tps",
            "range": {"start": 100, "stop": 300, "step": 100},
            "label": "Flash output speed (tokens/s)",
        },
    ]
    f = tmp_path / "chat-sweep.yaml"
    f.write_text(yaml.safe_dump(doc))
    from_file = run_sweep(f, runs=300, workers=1)
    from_opts = run_sweep(
        f,
        [parse_set("agent.steps[0].call.input=500,4000"), parse_set("models.flash.output_tps=100:300:100")],
        runs=300,
        workers=1,
    )
    assert [a.values for a in from_file.axes] == [(500, 4000), (100, 200, 300)]
    assert from_file.axes[1].title == "Flash output speed (tokens/s)"
    assert_frames_identical(from_file.table, from_opts.table)
    t = from_file.table
    assert len(t) == 2 * 3 * 2
    assert list(t.columns[:3]) == ["point", "agent.steps[0].call.input", "models.flash.output_tps"]
    # a faster Flash never makes Flash slower; the GPT variant does not depend on Flash's speed
    g = t[t.variant == "gemini-3-flash"]
    for _, part in g.groupby("agent.steps[0].call.input"):
        assert part["wall_mean_s"].is_monotonic_decreasing
    gpt = t[t.variant == "gpt-5.2-instant"]
    assert gpt.groupby("agent.steps[0].call.input")["wall_mean_s"].nunique().eq(1).all()


def test_bad_sweeps_section_is_a_scenario_error(tmp_path):
    doc = yaml.safe_load(CHAT.read_text())
    doc["sweeps"] = [{"set": "agent.steps[0].call.input", "values": [1], "range": {"start": 1, "stop": 2, "step": 1}}]
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(doc))
    with pytest.raises(ScenarioError, match="one of values or range"):
        run_sweep(f, workers=1)


# --------------------------------------------------------------------------- the same numbers as simulate


@pytest.mark.parametrize("workers", [1, 2])
def test_each_row_is_the_simulation_at_that_point(workers):
    # with 2 workers and 2 points the blocks of each point (two here) are spread over the processes
    axis = parse_set("models.flash.output_tps=150,300")
    runs = 4096 + 500
    sw = run_sweep(CHAT, [axis], runs=runs, workers=workers)
    data, lines = load_data(CHAT)
    for i, v in enumerate(axis.values):
        sc = apply_values(data, [axis], {axis.text: v}, file=str(CHAT), lines=lines, source=CHAT)
        direct = summary_rows(simulate_plan(compile_plan(sc), runs, sc.seed))
        got = sw.table[sw.table.point == i].drop(columns=["point", axis.text, "pareto_mean", "pareto_p95"])
        assert list(got.columns) == list(direct[0])
        for g, d in zip(got.to_dict(orient="records"), direct, strict=True):
            for k, want in d.items():
                if want is None:  # JSON null in summary.json: a missing value in the table
                    assert pd.isna(g[k]), k
                else:
                    assert g[k] == want, k  # exact: the same bits


def _small_grid():
    return [parse_set("models.opus.speeds.fast.output_tps_x=2:3:0.5"), parse_set("agent.steps[1].repeat.times=4,8")]


def test_workers_do_not_change_the_table():
    one = run_sweep(CODING, _small_grid(), runs=150, workers=1)
    two = run_sweep(CODING, _small_grid(), runs=150, workers=2)
    assert_frames_identical(one.table, two.table)
    assert one.table.to_csv(index=False) == two.table.to_csv(index=False)


@pytest.mark.slow
def test_dask_local_cluster_gives_the_same_table():
    pytest.importorskip("distributed")
    one = run_sweep(CODING, _small_grid(), runs=150, workers=1)
    dask = run_sweep(CODING, _small_grid(), runs=150, workers=2, executor="dask")
    assert_frames_identical(one.table, dask.table)
    assert one.table.to_csv(index=False) == dask.table.to_csv(index=False)


def test_sweep_of_a_model_name_and_progress():
    doc = scenario(
        [{"call": {"name": "a", "model": "slow", "output": 100}}],
        models={"slow": model(tps=10), "quick": model(tps=100)},
        runs=10,
    )
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "s.yaml"
        f.write_text(yaml.safe_dump(doc))
        seen = []
        sw = run_sweep(
            f,
            [parse_set("agent.steps[0].call.model=slow,quick")],
            workers=1,
            progress=lambda done, total: seen.append((done, total)),
        )
    assert sw.table["agent.steps[0].call.model"].tolist() == ["slow", "quick"]
    # constant times: 1 s TTFT + 100 tokens at 10 or 100 tokens/s
    assert sw.table["wall_mean_s"].tolist() == [11.0, 2.0]
    assert seen[0][0] == 0 and seen[-1][0] == seen[-1][1] == 2
    json.dumps(sw.table.to_dict(orient="records"), default=str)


def test_the_documented_sweeps_section_works():
    text = (SCENARIOS.parent / "docs" / "tradeoffs.md").read_text(encoding="utf-8")
    block = next(b for b in text.split("```yaml\n")[1:] if b.startswith("sweeps:")).split("```")[0]
    data, _ = load_data(CODING)
    data.update(yaml.safe_load(block))
    axes = axes_from_scenario(parse(data))
    assert [a.text for a in axes] == ["models.opus.speeds.fast.output_tps_x", "agent.steps[1].repeat.times"]
    assert axes[0].values == (1.5, 2.0, 2.5, 3.0, 3.5, 4.0) and axes[1].values == (10, 20, 40)
    assert axes[0].label == "fast-mode speed-up (×)"

"""A workload where most runs fail, computed by hand, through every surface; zipped sweeps over limits; presets;
``optimize --max-failed-share`` checked against the runs of each candidate.

The hand-computed workload: one agent (closed loop) whose run is one call of 5 s (TTFT 1 s + 200 tokens at
50 tokens/s), with 10 s of think time after every run, on an account of ``rpm: 1`` that refuses (HTTP 429)
and no retry (``max_attempts: 1``). The RPM bucket holds 1 request and refills at 1/60 per second, starting
full. The run at 0 is admitted (bucket 0) and ends at 5; the next runs start at 15, 25, 35, 45 and 55, when
the bucket holds 15/60 ... 55/60 < 1: each is refused and fails at once (wall time 0, nothing billed); the
run at 65 finds the bucket full again (min(1, 65/60)) and completes. So every 65 s: 1 completed run and 5
failed. In the window [0, 650] (both ends counted): runs at 65k (k = 0..10) complete, 5 x 10 = 50 fail;
61 counted, 11 completed, failed share 50/61. Throughput: the 10 runs that end inside the window (at
65k + 5, k = 0..9; the one started at 650 ends at 655) per 650 s. A completed run costs 100 input tokens
at $1/M + 200 output tokens at $5/M = $0.0011 and takes 5 s.
"""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from agentsim.analysis.sweeps import grid, parse_set, parse_zip, run_sweep
from agentsim.cli.main import app
from agentsim.model.limit_presets import bundled_presets, preset_limits
from agentsim.model.loading import ScenarioError
from agentsim.plan.validation import load
from agentsim.sim.simulation import simulate

runner = CliRunner()

HAND = {
    "name": "mostly-failing",
    "seed": 3,
    "models": {"m": {"price": {"input_mtok": 1, "output_mtok": 5}, "ttft": 1, "output_tps": 50,
                     "retry": {"max_attempts": 1}}},
    "limits": {"a": {"models": ["m"], "rpm": 1, "policy": "reject"}},
    "workload": {"concurrent": 1, "think_time": 10, "duration": {"seconds": 650},
                 "volume": {"runs_per_month": 1000}},
    "agent": {"steps": [{"call": {"name": "c", "model": "m", "input": 100, "output": 200}}]},
}  # fmt: skip
COUNTED, COMPLETED, FAILED = 61, 11, 50
SHARE = FAILED / COUNTED
THROUGHPUT = 10 / (650 / 3600)
COST = 100 * 1e-6 + 200 * 5e-6


def _write(tmp_path, data, name="s.yaml"):
    p = tmp_path / name
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return p


@pytest.fixture
def hand(tmp_path):
    return _write(tmp_path, HAND)


def test_the_hand_computed_workload_summary(hand):
    res = simulate(load(hand))
    v = res.summary_dict()["variants"]["baseline"]
    w = v["workload"]
    assert (w["runs_counted"], w["runs_completed"], w["runs_failed"]) == (COUNTED, COMPLETED, FAILED)
    assert w["failed_share"] == pytest.approx(SHARE, rel=1e-12)
    assert w["throughput_runs_per_hour"] == pytest.approx(THROUGHPUT, rel=1e-12)
    assert v["wall_time_s"]["mean"] == pytest.approx(5.0, rel=1e-12)
    assert v["cost_usd"]["mean"] == pytest.approx(COST, rel=1e-12)
    lim = v["limits"]
    assert lim["attempts"]["rejected_429"] == FAILED
    assert lim["accounts"]["a"]["refused_by"] == {"rpm": FAILED}
    assert lim["binding"] == {"account": "a", "limit": "rpm", "by": "refused", "refused": FAILED, "waited_s": 0.0,
                              "share": 1.0, "utilisation": pytest.approx(10 / (650 / 60))}  # fmt: skip
    # (admissions at 65k in the window [0, 650): k = 0..9, per minute of window, over the limit of 1)
    row = res.summary().loc["baseline"]  # the flat row every table is made of
    assert row["failed_share"] == pytest.approx(SHARE) and row["runs_completed"] == COMPLETED
    assert row["rejected_429"] == FAILED and (row["binding_account"], row["binding_limit"]) == ("a", "rpm")


def test_run_and_size_say_the_figures_are_of_the_completed_runs(hand):
    r = runner.invoke(app, ["size", str(hand), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    v = doc["variants"]["baseline"]
    assert v["not_completed_share"] == pytest.approx(SHARE)
    assert v["workload"]["failed_share"] == pytest.approx(SHARE)
    assert any("82%" in w and "completed runs only" in w for w in doc["warnings"])


def test_every_sweep_surface_shows_the_failed_share(hand, tmp_path):
    out = tmp_path / "sw"
    r = runner.invoke(app, ["sweep", str(hand), "--set", "workload.think_time=10,70", "-o", str(out), "--workers", "1"],
                      env={"COLUMNS": "250"})  # fmt: skip
    assert r.exit_code == 0, r.output
    # the printed table: the failed share, completed of counted, throughput, 429s, the binding limit, the dagger
    assert "82.0%" in r.stdout and "11 of 61" in r.stdout and "a.rpm" in r.stdout and "†" in r.stdout
    assert "1,000 runs, seed" not in r.stdout and "runs: those each workload's window counts" in r.stdout
    import pandas as pd

    t = pd.read_csv(out / "sweep.csv")
    first = t[t["workload.think_time"] == 10].iloc[0]
    assert first["failed_share"] == pytest.approx(SHARE) and bool(first["completed_runs_only"])
    assert first["throughput_runs_per_hour"] == pytest.approx(THROUGHPUT) and first["rejected_429"] == FAILED
    # think 70 s: each run starts >= 75 s after the last admission, when the bucket is full again: none fails
    second = t[t["workload.think_time"] == 70].iloc[0]
    assert second["failed_share"] == 0 and not bool(second["completed_runs_only"]) and second["rejected_429"] == 0
    doc = json.loads((out / "sweep.json").read_text())
    assert doc["notes"] and "completed runs only" in doc["notes"][0]
    assert doc["rows"][0]["failed_share"] == pytest.approx(SHARE)
    assert (out / "sweep-1-workload.think_time.png").stat().st_size > 0


def test_the_report_never_presents_completed_run_averages_as_the_population(hand, tmp_path):
    page = tmp_path / "r.html"
    r = runner.invoke(app, ["report", str(hand), "-o", str(page), "--quiet"])
    assert r.exit_code == 0, r.output
    html = page.read_text()
    assert "of the 11 completed runs only (11 of 61; 82.0% failed or unfinished)" in html
    assert "82.0% of its runs failed or did not finish, so this is not what the volume would spend" in html


def test_the_sweep_figure_marks_completed_only_points_and_reads_text_values(hand):
    from agentsim.viz.plots import sweep_figure

    sw = run_sweep(hand, [parse_set("limits.a.policy=reject,queue")], workers=1)
    fig = sweep_figure(sw.table, "limits.a.policy", None, "t", sw.independent_of("limits.a.policy"))
    axes = fig.axes
    assert len(axes) >= 3 and axes[2].get_ylabel() == "runs failed or unfinished"
    assert [t.get_text() for t in axes[0].get_xticklabels()] == ["reject", "queue"]
    hollow = [line for line in axes[0].lines if (line.get_gid() or "").startswith("completed-only:")]
    assert len(hollow[0].get_xdata()) == 1  # reject fails 82% of the runs; queue none (the calls wait instead)


def test_zipped_axes_vary_together_and_cross_the_others():
    zipped = parse_zip(["limits.a.rpm=1,2,4", "limits.a.input_tpm=1000,2000,4000"])
    crossed = parse_set("workload.think_time=10,70")
    points = grid([crossed, *zipped])
    assert len(points) == 6
    assert [(p["limits.a.rpm"], p["limits.a.input_tpm"]) for p in points[:3]] == [(1, 1000), (2, 2000), (4, 4000)]
    assert {p["workload.think_time"] for p in points[:3]} == {10}
    with pytest.raises(ValueError, match="same number of values"):
        grid(parse_zip(["limits.a.rpm=1,2", "limits.a.input_tpm=1,2,3"]))


def test_a_together_section_in_the_file(tmp_path):
    data = {**HAND, "sweeps": [{"together": [{"set": "limits.a.rpm", "values": [1, 3]},
                                             {"set": "workload.think_time", "values": [10, 70]}]}]}  # fmt: skip
    sw = run_sweep(_write(tmp_path, data), workers=1)
    assert len(sw.points) == 2 and sw.independent_of("limits.a.rpm") == []
    assert sw.table["failed_share"].tolist() == [pytest.approx(SHARE), 0.0]
    bad = {**HAND, "sweeps": [{"together": [{"set": "limits.a.rpm", "values": [1]}], "set": "seed"}]}
    with pytest.raises(ScenarioError):
        load(_write(tmp_path, bad, "bad.yaml"))


def test_optimize_max_failed_share_matches_each_candidate_simulated_alone(hand, tmp_path):
    rpm, tpm = [1, 2, 6], [1000, 2000, 6000]
    r = runner.invoke(app, ["optimize", str(hand), "--max-failed-share", "0.01", "--json",
                            "--zip", "limits.a.rpm=" + ",".join(map(str, rpm)),
                            "--zip", "limits.a.input_tpm=" + ",".join(map(str, tpm))])  # fmt: skip
    assert r.exit_code in (0, 3), r.output
    doc = json.loads(r.stdout)
    shares = []
    for k, (x, y) in enumerate(zip(rpm, tpm, strict=True)):  # each candidate alone, its runs table
        data = {**HAND, "limits": {"a": {**HAND["limits"]["a"], "rpm": x, "input_tpm": y}}}
        res = simulate(load(_write(tmp_path, data, f"c{k}.yaml")))
        runs = res.runs[res.runs["counted"]]
        shares.append(float((runs["status"] != 0).mean()))
        cand = next(c for c in doc["candidates"] if c["point"] == k)
        assert cand["failed_share"] == pytest.approx(shares[-1], rel=1e-12)
    assert shares[0] == pytest.approx(SHARE)
    first_ok = next((k for k, s in enumerate(shares) if s <= 0.01), None)
    assert first_ok is not None and first_ok > 0  # the bound makes a difference
    assert doc["feasible"] and doc["chosen"]["point"] == first_ok and r.exit_code == 0
    assert doc["chosen"]["limits.a.rpm"] == rpm[first_ok]
    assert doc["candidates"][0]["binding_limit"] == "rpm"


def test_optimize_max_failed_share_infeasible_exits_3_with_the_closest(hand):
    r = runner.invoke(app, ["optimize", str(hand), "--max-failed-share", "0.01", "--set", "limits.a.rpm=1,1.2"])
    assert r.exit_code == 3, r.output
    assert "no candidate keeps failed runs at most 1%" in r.stdout


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--max-failed-share", "1.5", "--set", "limits.a.rpm=1,2"], "outside the range of a probability"),
        (["--max-failed-share", "1", "--set", "limits.a.rpm=1,2"], "from 0 to below 1"),
        (["--set", "limits.a.rpm=1,2"], "go with --max-failed-share"),
        (["--max-failed-share", "0.01", "--set", "limits.a.rpm=1,2", "--max-p95", "10s"], "does not combine"),
        (["--max-failed-share", "0.01", "--set", "limits.a.rpm=1,2", "--variant", "nope"], "no variant named"),
        (["--max-failed-share", "0.01", "--zip", "limits.a.rpm=1,2"], "at least twice"),
    ],
)
def test_optimize_limits_bad_options_exit_2(hand, args, words):
    r = runner.invoke(app, ["optimize", str(hand), *args])
    assert r.exit_code == 2, r.output
    assert words in r.output and "Traceback" not in r.output


def test_presets_are_dated_sourced_data_and_fill_an_account(tmp_path):
    f = bundled_presets()["anthropic"]
    assert f.source.startswith("https://") and f.as_of[:4].isdigit()
    assert preset_limits("anthropic/tier-2/opus-4") == {"policy": "reject", "count_cache_reads": False, "rpm": 1000,
                                                         "input_tpm": 450000, "output_tpm": 90000}  # fmt: skip
    data = {**HAND, "limits": {"a": {"models": ["m"], "preset": "anthropic/tier-1/opus-4", "rpm": 7}}}
    sc = load(_write(tmp_path, data))
    a = sc.limits["a"]
    assert (a.rpm, a.input_tpm, a.output_tpm, a.policy) == (7, 30000, 8000, "reject")  # its own rpm wins
    assert a.preset == "anthropic/tier-1/opus-4"


@pytest.mark.parametrize(
    ("ref", "words"),
    [("anthropic/tier-2", "per model class"), ("anthropic/tier-9/opus-4", "no tier 'tier-9'"),
     ("nobody/tier-1/x", "no rate-limit presets for provider"), ("anthropic", "not a preset reference"), (3, "takes")],
)  # fmt: skip
def test_bad_presets_are_scenario_errors_with_their_line(tmp_path, ref, words):
    data = {**HAND, "limits": {"a": {"models": ["m"], "preset": ref}}}
    p = _write(tmp_path, data)
    r = runner.invoke(app, ["run", str(p)])
    assert r.exit_code == 2 and words in r.output and "limits.a.preset" in r.output, r.output


def test_a_workload_whose_runs_fail_fast_runs_and_the_runaway_error_names_the_cause(tmp_path):
    data = {**HAND, "workload": {"concurrent": 20, "think_time": 10, "duration": {"seconds": 600}}}
    res = simulate(load(_write(tmp_path, data)))  # most runs fail at once (refused): it runs
    w = res.summary_dict()["variants"]["baseline"]["workload"]
    assert w["failed_share"] > 0.9 and w["runs_completed"] > 0
    # no think time: a refused run fails at the instant it starts and the agent starts the next one then
    data = {**HAND, "workload": {"concurrent": 20, "duration": {"seconds": 600}}}
    r = runner.invoke(app, ["run", str(_write(tmp_path, data, "zero.yaml"))])
    assert r.exit_code == 2, r.output
    assert "runs that ended failed" in r.output and "(almost) no simulated time" not in r.output


def test_the_sweep_csv_is_safe_to_open_with_an_account_named_like_a_formula(tmp_path):
    data = {**HAND, "limits": {"=HYPERLINK(1)": {**HAND["limits"]["a"]}}}
    out = tmp_path / "sw"
    r = runner.invoke(app, ["sweep", str(_write(tmp_path, data)), "--set", "workload.think_time=10,70", "-o", str(out),
                            "--workers", "1"])  # fmt: skip
    assert r.exit_code == 0, r.output
    text = (out / "sweep.csv").read_text()
    assert "'=HYPERLINK(1)" in text and ",=HYPERLINK" not in text

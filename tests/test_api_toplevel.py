"""A top-level Python API for every command (issue 36): ``agentsim.sweep``, ``optimize``, ``size``, ``fit``,
``calibrate``, ``replay`` and ``report`` give what the commands give (each compared with the command's own
``--json`` output, another path through the code), with DataFrames, and ``import agentsim`` stays light."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from typer.testing import CliRunner

import agentsim
from agentsim.cli.main import app
from conftest import ROOT, SCENARIOS

runner = CliRunner()
SESSIONS = ROOT / "tests" / "fixtures" / "sessions" / "claude-code"
MEASUREMENTS = ROOT / "tests" / "fixtures" / "measurements" / "measurements.csv"
CODING = SCENARIOS / "coding-agent.yaml"


def _json(*args: str) -> dict:
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code in (0, 3), r.output
    return json.loads(r.stdout)


def test_every_command_has_a_function_and_import_stays_light():
    for name in ("sweep", "optimize", "size", "fit", "calibrate", "replay", "report", "load", "simulate"):
        assert callable(getattr(agentsim, name)), name
        assert name in dir(agentsim)
    probe = (
        "import sys, agentsim; import agentsim.fit.agent_fit, agentsim.replay.retime; "  # the subpackages bound
        "print(callable(agentsim.fit), callable(agentsim.replay), agentsim.fit.agent_fit.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.stdout.split() == ["True", "True", "agentsim.fit.agent_fit"], out.stderr
    light = "import sys, agentsim; print(sorted(m for m in ('numpy', 'pandas', 'scipy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", light], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.stdout.strip() == "[]", out.stderr


def test_sweep_is_the_command_with_gains():
    sw = agentsim.sweep(CODING, {"models.opus.speeds.fast.output_tps_x": [1.5, 2.5, 4]}, runs=20)
    doc = _json("sweep", str(CODING), "--set", "models.opus.speeds.fast.output_tps_x=1.5,2.5,4", "--runs", "20",
                "--workers", "1")  # fmt: skip
    assert sw.table["wall_mean_s"].tolist() == [r["wall_mean_s"] for r in doc["rows"]]
    assert isinstance(sw.gains(), pd.DataFrame) and isinstance(sw.knees(), pd.DataFrame)
    same = agentsim.sweep(CODING, ["models.opus.speeds.fast.output_tps_x=1.5:4:2.5"], runs=20)  # the --set text
    assert same.table["models.opus.speeds.fast.output_tps_x"].unique().tolist() == [1.5, 4.0]
    with pytest.raises(ValueError, match="range"):
        agentsim.sweep(CODING, {"models.opus.ttft": "1:2"})


def test_size_is_the_command():
    sized = agentsim.size(CODING, 20000, runs=30)
    doc = _json("size", str(CODING), "--runs-per-month", "20000", "--runs", "30")
    assert sized.spend["api_usd_per_month"].to_dict() == {k: v["api_usd_per_month"] for k, v in doc["variants"].items()}
    assert sized.volume.runs_per_month == 20000 and "20,000 runs a month" in sized.volume.derivation
    assert set(sized.break_even.index) == set(doc["variants"])
    with pytest.raises(ValueError, match="runs-per-seat-per-day"):
        agentsim.size(CODING, seats=20)


def test_optimize_takes_a_path_a_dict_or_a_scenario():
    doc = _json("optimize", str(CODING), "--max-mean", "3000", "--runs", "30")
    got = agentsim.optimize(CODING, max_time_s=3000, metric="mean", runs=30)
    assert got.choices == doc["choices"] and got.chosen["cost_mean_usd"] == doc["chosen"]["cost_mean_usd"]
    assert isinstance(got.frontier, pd.DataFrame)
    sc = agentsim.load(CODING)
    assert agentsim.optimize(sc, max_time_s=3000, metric="mean", runs=30).choices == got.choices


def test_replay_and_calibrate_are_the_commands():
    rep = agentsim.replay(SESSIONS, "fast")
    doc = _json("replay", str(SESSIONS), "--variant", "fast")
    assert rep.summary().loc["fast", "cost_usd"] == pytest.approx(doc["variants"]["fast"]["cost_usd"], rel=1e-12)
    cal = agentsim.calibrate(MEASUREMENTS)
    assert cal.counts["requests"] == len(cal.measurements)
    r = runner.invoke(app, ["calibrate", str(MEASUREMENTS), "-o", "-"])
    assert r.exit_code == 0, r.output
    import yaml

    profile = yaml.safe_load(r.stdout)
    assert profile["ttft"]["lognormal"]["median"] == pytest.approx(cal.ttft.median_s, rel=1e-3)  # 4 digits there


def test_fit_returns_the_comparison_as_a_frame(tmp_path):
    fitted = agentsim.fit(SESSIONS, name="mine", runs=50, sim_runs=50)
    assert {"wall_time_s", "cost_usd"} <= set(fitted.comparison.index)
    assert fitted.comparison.loc["wall_time_s", "recorded_n"] == fitted.report["quantities"]["wall_time_s"][
        "recorded"]["n"]  # fmt: skip
    written = fitted.write(tmp_path)
    assert (tmp_path / "mine.yaml").exists() and tmp_path / "mine.fit.json" in written
    res = agentsim.simulate(tmp_path / "mine.yaml", runs=20)  # the written set loads and runs
    assert len(res.runs) == 20 * len(res.variants)


def test_report_returns_the_page_and_writes_it_when_asked(tmp_path):
    out = tmp_path / "chat.html"
    page = agentsim.report(SCENARIOS / "chat-turn.yaml", out=out, runs=30, sweep=False)
    assert page.startswith("<!DOCTYPE html>") and out.read_text(encoding="utf-8") == page
    before = (SCENARIOS / "chat-turn.yaml").read_bytes()
    with pytest.raises(Exception, match="reads"):  # never over the scenario it was made from
        agentsim.report(SCENARIOS / "chat-turn.yaml", out=SCENARIOS / "chat-turn.yaml", runs=10, sweep=False)
    assert (SCENARIOS / "chat-turn.yaml").read_bytes() == before

"""The command line through typer's CliRunner: exit codes, messages, outputs."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
from typer.testing import CliRunner

from agentsim.cli.main import app
from conftest import FIXTURES, SCENARIOS

runner = CliRunner()

# fixture -> (line, dotted path, words the message must contain)
BAD = {
    "yaml-syntax.yaml": (5, "", "not valid YAML"),
    "unknown-key.yaml": (6, "models.opus.output_tsp", "did you mean 'output_tps'"),
    "wrong-type.yaml": (15, "agent.steps[1].repeat.steps[0].call.output", "expected a number"),
    "zero-speed.yaml": (6, "models.opus.output_tps", "above zero"),
    "negative-speed.yaml": (6, "models.opus.output_tps", "min"),
    "prob-sum.yaml": (15, "agent.steps[1].repeat.steps[0].choose", "sum to 1.1"),
    "undefined-model.yaml": (15, "agent.steps[1].repeat.steps[0].call.model", "did you mean 'opus'"),
    "variant-unknown-step.yaml": (18, "variants.fast.speed.plna", "did you mean 'plan'"),
    "variant-unknown-tier.yaml": (18, "variants.fast.speed.opus", "no speed tier 'turbo'"),
    "repeat-never-ends.yaml": (12, "agent.steps[1].repeat", "never end"),
    "negative-runs.yaml": (16, "runs", "at least 1"),
    "unknown-step.yaml": (11, "agent.steps[0]", "did you mean 'call'"),
}


@pytest.mark.parametrize("fixture", sorted(BAD))
@pytest.mark.parametrize("command", ["validate", "run"])
def test_bad_input_exits_2_with_file_line_and_path(fixture, command):
    line, path, words = BAD[fixture]
    f = FIXTURES / "bad" / fixture
    result = runner.invoke(app, [command, str(f)])
    assert result.exit_code == 2, result.output
    msg = result.stderr
    assert f"{f}:{line}:" in msg
    if path:
        assert f": {path}:" in msg
    assert words in msg
    assert "Traceback" not in result.output
    assert len(msg.strip().splitlines()) == 1  # one paragraph


def test_missing_file_and_bad_options():
    r = runner.invoke(app, ["run", "nope.yaml"])
    assert r.exit_code == 2 and "nope.yaml" in r.stderr and "no such file" in r.stderr
    r = runner.invoke(app, ["run", str(FIXTURES / "good.yaml"), "--runs", "0"])
    assert r.exit_code == 2
    r = runner.invoke(app, ["run", str(FIXTURES / "good.yaml"), "--engine", "warp"])
    assert r.exit_code == 2 and "unknown engine" in r.stderr


def test_validate_good_file():
    r = runner.invoke(app, ["validate", str(FIXTURES / "good.yaml"), *map(str, SCENARIOS.glob("*.yaml"))])
    assert r.exit_code == 0, r.output
    assert r.stdout.count("ok:") >= 4


def test_run_prints_a_comparison_table():
    r = runner.invoke(app, ["run", str(SCENARIOS / "coding-agent.yaml"), "--runs", "50"])
    assert r.exit_code == 0, r.output
    for word in (
        "standard",
        "fast",
        "wall time mean",
        "p95",
        "p99",
        "cost mean",
        "USD per hour saved",
        "pays off at $100/h",
        "calls per run",
    ):
        assert word in r.stdout


def test_json_is_exactly_the_summary_file(tmp_path):
    out = tmp_path / "res"
    r = runner.invoke(
        app, ["run", str(SCENARIOS / "coding-agent.yaml"), "--runs", "40", "--seed", "5", "--json", "--out", str(out)]
    )
    assert r.exit_code == 0, r.output
    assert r.stdout == (out / "summary.json").read_text()
    doc = json.loads(r.stdout)
    assert doc["seed"] == 5 and doc["runs"] == 40 and doc["scenario"] == "coding-agent"
    for name in ("calls.parquet", "runs.parquet", "summary.json", "scenario.resolved.yaml", "tradeoff.png"):
        assert (out / name).stat().st_size > 0
    runs = pd.read_parquet(out / "runs.parquet")
    assert len(runs) == 40 * len(doc["variants"])
    calls = pd.read_parquet(out / "calls.parquet")
    assert calls["run"].nunique() == 40


def test_summary_json_shape():
    r = runner.invoke(app, ["run", str(SCENARIOS / "research-fanout.yaml"), "--runs", "30", "--json"])
    doc = json.loads(r.stdout)
    assert {"scenario", "seed", "runs", "agentsim_version", "variants"} <= set(doc)
    for v in doc["variants"].values():
        assert set(v["wall_time_s"]) >= {"mean", "ci95", "p50", "p90", "p95", "p99"}
        assert set(v["cost_usd"]) >= {"mean", "ci95", "p50", "p95"}
        assert set(v["calls"]) >= {"mean"}
        assert set(v["tokens"]) >= {"input", "cache_read", "cache_write", "output", "reasoning"}
        assert set(v["breakdown_s"]) == {"queue", "ttft", "decode", "tool", "wait"}
        assert set(v["vs_baseline"]) == {
            "delta_time_s", "delta_cost_usd", "usd_per_hour_saved", "pays_off", "delta_waiting_s", "basis",
        }  # fmt: skip
        assert v["vs_baseline"]["basis"] == "wall_time_s" and v["waiting_s"]["mean"] == v["wall_time_s"]["mean"]
        assert v["turns"] == {"mean": 1.0}
        lo, hi = v["wall_time_s"]["ci95"]
        assert lo <= v["wall_time_s"]["mean"] <= hi
        assert abs(sum(v["breakdown_s"].values()) - v["wall_time_s"]["mean"]) < 1e-6 * v["wall_time_s"]["mean"]


def test_out_is_not_half_written_on_failure(tmp_path):
    target = tmp_path / "file-not-dir"
    target.write_text("x")
    r = runner.invoke(app, ["run", str(FIXTURES / "good.yaml"), "--runs", "5", "--out", str(target)])
    assert r.exit_code != 0
    assert target.read_text() == "x"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_python_dash_m_works():
    r = subprocess.run([sys.executable, "-m", "agentsim", "--help"], capture_output=True, text=True, check=False)
    assert r.returncode == 0 and "validate" in r.stdout


def test_forcing_the_fast_path_on_a_limits_scenario_is_exit_2():
    r = runner.invoke(app, ["run", str(SCENARIOS / "team-of-agents.yaml"), "--engine", "fastpath"])
    assert r.exit_code == 2
    assert "fast path cannot run this scenario" in r.stderr and "limits" in r.stderr


def test_engine_is_reported():
    r = runner.invoke(app, ["run", str(SCENARIOS / "chat-turn.yaml"), "--runs", "20", "--json"])
    assert json.loads(r.stdout)["engine"] == "fastpath"
    r = runner.invoke(app, ["run", str(SCENARIOS / "chat-turn.yaml"), "--runs", "20", "--json", "--engine", "des"])
    assert json.loads(r.stdout)["engine"] == "des"

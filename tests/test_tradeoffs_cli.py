"""The sweep, size, optimize and report commands through typer's CliRunner."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from agentsim.analysis.sweeps import parse_set, run_sweep
from agentsim.cli.main import app
from conftest import SCENARIOS

runner = CliRunner()
CHAT = str(SCENARIOS / "chat-turn.yaml")
CODING = str(SCENARIOS / "coding-agent.yaml")


def test_sweep_writes_tables_and_figures(tmp_path):
    out = tmp_path / "sw"
    r = runner.invoke(
        app,
        ["sweep", CHAT, "--set", "models.flash.output_tps=100,300", "--runs", "50", "--workers", "1", "-o", str(out)],
    )
    assert r.exit_code == 0, r.output
    assert "◆" in r.stdout and "models.flash.output_tps" in r.stdout
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        ".agentsim-result",
        "frontier-mean.png",
        "frontier-p95.png",
        "sweep-1-models.flash.output_tps.png",
        "sweep.csv",
        "sweep.json",
        "sweep.parquet",
    ]
    a, b = pd.read_parquet(out / "sweep.parquet"), pd.read_csv(out / "sweep.csv")
    assert len(a) == len(b) == 2 * 2
    assert a["wall_mean_s"].tolist() == b["wall_mean_s"].tolist()


def test_sweep_json_is_only_json():
    r = runner.invoke(
        app, ["sweep", CHAT, "--set", "models.flash.output_tps=100,300", "--runs", "30", "--workers", "1", "--json"]
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["axes"] == [{"set": "models.flash.output_tps", "values": [100, 300], "label": None}]
    assert len(doc["rows"]) == 4 and {"pareto_mean", "pareto_p95", "wall_p95_s"} <= set(doc["rows"][0])
    # full precision: the very numbers of the sweep table
    table = run_sweep(CHAT, [parse_set("models.flash.output_tps=100,300")], runs=30, workers=1).table
    assert [r["wall_mean_s"] for r in doc["rows"]] == table["wall_mean_s"].tolist()
    assert [r["cost_ci95_hi_usd"] for r in doc["rows"]] == table["cost_ci95_hi_usd"].tolist()
    assert doc["rows"][0]["usd_per_hour_saved"] is None and doc["rows"][0]["pays_off"] is None  # baseline


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--set", "models.flash.output_tps"], "PATH=VALUES"),
        (["--set", "models.flahs.output_tps=1,2"], "did you mean 'flash'"),
        (["--set", "models.flash.output_tps=0"], "above zero"),
        (["--set", "models.flash.output_tps=100,0", "--workers", "2"], "output_tps=0)"),  # found in a worker
        (["--set", "models.flash.output_tps=1:5"], "start:stop:step"),
        (["--executor", "spark"], "choose process or dask"),
        ([], "nothing to sweep"),
    ],
)
def test_sweep_bad_input_exits_2(args, words):
    r = runner.invoke(app, ["sweep", CHAT, "--runs", "10", "--workers", "1", *args])
    assert r.exit_code == 2, r.output
    assert words in r.stderr and "Traceback" not in r.output


def test_size():
    r = runner.invoke(app, ["size", CHAT, "--runs", "200", "--runs-per-month", "10000"])
    assert r.exit_code == 0, r.output
    assert "API spend per month" in r.stdout and "premium per saved hour" in r.stdout
    r = runner.invoke(app, ["size", CHAT, "--runs", "200", "--runs-per-month", "10000", "--json"])
    doc = json.loads(r.stdout)
    summary = json.loads(runner.invoke(app, ["run", CHAT, "--runs", "200", "--json"]).stdout)["variants"]
    v, s, base = doc["variants"]["gemini-3-flash"], summary["gemini-3-flash"], summary["gpt-5.2-instant"]
    assert v["api_usd_per_month"] == pytest.approx(10_000 * s["cost_usd"]["mean"], rel=1e-12)
    saved_h = 10_000 * (base["wall_time_s"]["mean"] - s["wall_time_s"]["mean"]) / 3600
    assert v["hours_saved_per_month"] == pytest.approx(saved_h, rel=1e-12)
    assert doc["cheapest_by_value_of_time"][0]["variant"] == "gemini-3-flash"  # faster and cheaper
    r = runner.invoke(app, ["size", CHAT])
    assert r.exit_code == 2 and "workload" in r.stderr and "--runs-per-month" in r.stderr


def test_optimize():
    r = runner.invoke(app, ["optimize", CODING, "--budget-usd-per-run", "3", "--runs", "100", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["method"] == "exhaustive" and doc["feasible"]
    # today's fast mode everywhere costs ~$2.9 a run (fast acting at the launch price ~$8.5)
    assert doc["choices"] == {"plan": "fast-now", "act-observe": "fast-now"}
    assert doc["chosen"]["cost_mean_usd"] <= 3
    assert {c["step"] for c in doc["critical_path"]} == {"plan", "act", "run", "review"}
    r = runner.invoke(app, ["optimize", CODING, "--max-p95", "1400", "--runs", "100"])
    assert r.exit_code == 0, r.output
    assert "act-observe" in r.stdout and "as a variant" in r.stdout
    r = runner.invoke(app, ["optimize", CODING])
    assert r.exit_code == 2 and "exactly one of" in r.stderr
    r = runner.invoke(app, ["optimize", CODING, "--max-p95", "1400", "--steps", "pla"])
    assert r.exit_code == 2 and "did you mean 'plan'" in r.stderr


def test_report_command(tmp_path):
    out = tmp_path / "r.html"
    r = runner.invoke(app, ["report", CHAT, "--runs", "50", "-o", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    r = runner.invoke(app, ["report", CHAT, "-o", str(tmp_path)])
    assert r.exit_code == 2 and "is a folder" in r.stderr

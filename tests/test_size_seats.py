"""`size`: working days per month and per-seat usage (CLI and workload.volume), closed forms; seats given as
options default to 21 working days (a month of weekdays), a scenario's volume keeps the scenario reference's
30 calendar days. `sweep --label PATH=TEXT` titles an axis."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.plan.validation import parse
from conftest import ROOT

CODING = ROOT / "scenarios" / "coding-agent.yaml"


def _size(*args):
    r = CliRunner().invoke(app, ["size", str(CODING), "--runs", "20", "--json", *map(str, args)])
    return r


def test_seats_times_runs_times_working_days():
    r = _size("--seats", 20, "--runs-per-seat-per-day", 5, "--working-days", 21)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["runs_per_month"] == 20 * 5 * 21
    # spend scales with the runs: the API spend per month is runs × mean cost per run
    r2 = _size("--runs-per-month", 2100)
    doc2 = json.loads(r2.stdout)
    for name, v in doc["variants"].items():
        assert v["api_usd_per_month"] == pytest.approx(doc2["variants"][name]["api_usd_per_month"], rel=1e-12)


def test_seats_default_to_twenty_one_working_days():
    doc = json.loads(_size("--seats", 3, "--runs-per-seat-per-day", 4).stdout)
    assert doc["runs_per_month"] == 3 * 4 * 21
    assert doc["volume"]["derivation"].startswith("3 seats × 4 runs × 21 working days")


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--seats", 3), "--seats needs --runs-per-seat-per-day"),
        (("--runs-per-seat-per-day", 3), "--runs-per-seat-per-day needs --seats"),
        (("--runs-per-month", 100, "--seats", 2, "--runs-per-seat-per-day", 1), "not both"),
        (("--seats", 2, "--runs-per-seat-per-day", 1, "--working-days", 40), "at most 31"),
    ],
)
def test_bad_combinations_exit_2(args, words):
    r = _size(*args)
    assert r.exit_code == 2 and words in r.stderr


def _volume(volume: dict):
    data = {
        "name": "v",
        "models": {"m": {"price": {"input_mtok": 1, "output_mtok": 5}, "ttft": 0.5, "output_tps": 100}},
        "agent": {"steps": [{"call": {"model": "m", "input": 100, "output": 10}}]},
        "workload": {"volume": volume},
    }
    return parse(data).workload.volume


def test_volume_in_yaml():
    assert _volume({"runs_per_day": 300}).per_month == 9000  # unchanged default: 30 days
    assert _volume({"runs_per_day": 300, "working_days": 21}).per_month == 6300
    assert _volume({"seats": 40, "runs_per_seat_per_day": 12, "working_days": 21}).per_month == 40 * 12 * 21
    assert _volume({"seats": 40, "runs_per_seat_per_day": 12}).per_month == 40 * 12 * 30


@pytest.mark.parametrize(
    "volume",
    [
        {"seats": 4},
        {"runs_per_month": 10, "working_days": 20},
        {"runs_per_day": 1, "seats": 2, "runs_per_seat_per_day": 1},
    ],
)
def test_volume_errors(volume):
    import agentsim

    with pytest.raises(agentsim.ScenarioError):
        _volume(volume)


def test_working_days_on_a_scenario_runs_per_day(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text(CODING.read_text(encoding="utf-8") + "\nworkload: {volume: {runs_per_day: 100}}\n", encoding="utf-8")
    r = CliRunner().invoke(app, ["size", str(p), "--runs", "20", "--json", "--working-days", "21"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["runs_per_month"] == 2100


def test_sweep_label(tmp_path):
    r = CliRunner().invoke(
        app,
        [
            "sweep", str(CODING), "--runs", "10", "-q", "--workers", "1",
            "--set", "models.opus.speeds.fast.output_tps_x=1.5,2.5",
            "--label", "models.opus.speeds.fast.output_tps_x=fast speed-up",
            "-o", str(tmp_path / "sw"),
        ],
        env={"COLUMNS": "200"},
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "fast speed-up" in r.stdout
    r = CliRunner().invoke(
        app,
        ["sweep", str(CODING), "--runs", "10", "-q", "--set", "models.opus.ttft=1,2", "--label", "models.x=y"],
    )
    assert r.exit_code == 2 and "not swept" in r.stderr

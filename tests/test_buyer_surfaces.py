"""What a buyer forwards shows what `run` knows (issue 26).

* The team-of-agents report and `size` show the failure share, the 429 count and the completed-runs
  warning, with the counts of `run --json` on the same seed; the report counts runs per variant as
  `run` does.
* `size`, `report`, `optimize` and `sweep` given the same seats, runs per seat and working days state and
  use the same runs per month (20 × 10 × 21 = 4,200).
* A chat-turn report holds the reader's figures per variant exactly as `run --json` gives them; a report
  of a scenario with `fail` steps holds its success share and cost per success.
* `optimize` exits with its documented code (3) when no assignment meets the constraint.
* The `run` and `size` tables fit 80 columns with one time unit per row.
"""

from __future__ import annotations

import html
import json
import re

import pytest
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.cli.tradeoffs import EXIT_INFEASIBLE
from agentsim.viz import format as fmt
from agentsim.viz.report import build_report
from conftest import SCENARIOS

TEAM = SCENARIOS / "team-of-agents.yaml"
CODING = SCENARIOS / "coding-agent.yaml"
runner = CliRunner()


def _ok(args, env=None):
    r = runner.invoke(app, [str(a) for a in args], env=env or {"COLUMNS": "200"})
    assert r.exit_code == 0, r.output
    return r


def _text(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def _values(page: str) -> set[str]:
    return set(re.findall(r'data-value="([^"]+)"', page))


# --------------------------------------------------------------------------- the team: failures and 429s


@pytest.fixture(scope="module")
def team():
    run = json.loads(_ok(["run", TEAM, "--json"]).stdout)
    size_json = json.loads(_ok(["size", TEAM, "--json", "--runs-per-month", 9000]).stdout)
    size_text = _ok(["size", TEAM, "--runs-per-month", 9000], env={"COLUMNS": "80"})
    page = build_report(TEAM, runs_per_month=9000)
    return run, size_json, size_text, page


@pytest.mark.slow
def test_team_report_shows_failures_429s_and_the_warning_as_run_does(team):
    run, _, _, page = team
    text, values = _text(page), _values(page)
    fast = run["variants"]["fast"]
    assert fast["workload"]["runs_failed"] > 0 and fast["limits"]["attempts"]["rejected_429"] > 0
    for name, v in run["variants"].items():
        w, a = v["workload"], v["limits"]["attempts"]
        for x in (w["runs_counted"], w["runs_failed"], w["failed_share"], a["rejected_429"], a["retries"]):
            assert repr(float(x)) in values, (name, x)
        assert f"{name} {w['runs_counted']:,}" in text  # runs per variant as run counts them, in the header
    share = fast["workload"]["failed_share"]
    assert f"Warning: In variant 'fast', {share:.0%} of the runs counted did not complete" in text
    assert "wall-time and cost figures describe the completed runs only" in text.split("Variants compared")[0]


@pytest.mark.slow
def test_team_size_shows_failures_429s_and_the_warning_as_run_does(team):
    run, doc, text, _ = team
    for name, v in run["variants"].items():
        got = doc["variants"][name]
        assert got["runs"] == v["workload"]["runs_counted"]
        assert got["runs_failed"] == v["workload"]["runs_failed"]
        assert got["limits"]["attempts"] == v["limits"]["attempts"]
    assert any("did not complete" in w for w in doc["warnings"])

    def row(label: str) -> list[str]:
        line = next(ln for ln in text.stdout.splitlines() if ln.startswith(f"│   {label} "))
        return [c.strip() for c in line.split("│")[2:-1]]

    names = list(run["variants"])
    assert row("429s") == [f"{run['variants'][n]['limits']['attempts']['rejected_429']:,}" for n in names]
    assert row("failed share") == [f"{100 * run['variants'][n]['workload']['failed_share']:.1f}%" for n in names]
    assert row("runs counted") == [f"{run['variants'][n]['workload']['runs_counted']:,}" for n in names]
    assert "warning: in variant 'fast'" in " ".join(text.stderr.split())
    _fits_80(text.stdout)


# --------------------------------------------------------------------------- one volume, four commands


VOLUME = ["--seats", "20", "--runs-per-seat-per-day", "10", "--working-days", "21"]
DERIVATION = "20 seats × 10 runs × 21 working days = 4,200 runs a month"


def test_size_report_optimize_and_sweep_state_the_same_volume(tmp_path):
    size = json.loads(_ok(["size", CODING, "--runs", "20", "--json", *VOLUME]).stdout)
    assert size["runs_per_month"] == 4200 and size["volume"]["derivation"] == DERIVATION
    opt = json.loads(_ok(["optimize", CODING, "--budget-usd-per-run", "3", "--runs", "20", "--json", *VOLUME]).stdout)
    assert opt["volume"] == size["volume"]
    assert opt["api_usd_per_month"]["base"] == pytest.approx(4200 * opt["baseline"]["cost_mean_usd"], rel=1e-12)
    sweep = json.loads(_ok(["sweep", CODING, "--runs", "10", "--json", "-q", "--workers", "1",
                            "--set", "models.opus.speeds.fast.output_tps_x=2,3", *VOLUME]).stdout)  # fmt: skip
    assert sweep["volume"] == size["volume"]
    for row in sweep["rows"]:
        assert row["api_usd_per_month"] == pytest.approx(4200 * row["cost_mean_usd"], rel=1e-12)
    out = tmp_path / "r.html"
    _ok(["report", CODING, "--runs", "20", "-q", "-o", out, *VOLUME])
    text = _text(out.read_text(encoding="utf-8"))
    assert f"Volume: {DERIVATION}." in text
    for name, v in size["variants"].items():  # the same spend per month as size, in the summary box
        assert f"{name} {fmt.usd(v['api_usd_per_month'])}" in text.split("Variants compared")[0]
    # the text outputs state it too
    for args in (["size", CODING, "--runs", "20"], ["optimize", CODING, "--budget-usd-per-run", "3", "--runs", "20"]):
        assert DERIVATION in " ".join(_ok([*args, *VOLUME]).stdout.split())


# --------------------------------------------------------------------------- streaming and success in the report


def test_chat_turn_report_holds_the_readers_figures_as_run_json_gives_them():
    run = json.loads(_ok(["run", SCENARIOS / "chat-turn.yaml", "--runs", "60", "--json"]).stdout)
    page = build_report(SCENARIOS / "chat-turn.yaml", runs=60)
    values, text = _values(page), _text(page)
    assert "<h2>Streaming</h2>" in page and "reader done" in text
    for v in run["variants"].values():
        reader = v["streaming"]["calls"]["answer"]
        for metric in ("reader_done_s", "reader_wait_s", "ttft_s"):
            for stat in ("mean", "p50", "p95"):
                assert repr(float(reader[metric][stat])) in values, (metric, stat)
        assert f"{v['streaming']['apparate']['answer']['tokens_per_s']:.1f} tokens/s" in text


def test_a_fail_step_report_holds_success_share_and_cost_per_success():
    doc = json.loads(_ok(["run", SCENARIOS / "cheaper-model-per-task.yaml", "--runs", "60", "--json"]).stdout)
    page = build_report(SCENARIOS / "cheaper-model-per-task.yaml", runs=60)
    values = _values(page)
    assert "<h2>Success</h2>" in page
    for v in doc["variants"].values():
        for key in ("share", "cost_per_success_usd", "time_to_success_s"):
            assert repr(float(v["success"][key])) in values, key


def test_sections_a_scenario_lacks_are_left_out():
    page = build_report(SCENARIOS / "claims" / "seconds-per-step-30.yaml", runs=5)
    for section in ("Success", "Streaming", "Shared limits and workload"):
        assert f"<h2>{section}</h2>" not in page
    assert "Warning:" not in page


# --------------------------------------------------------------------------- scripting


def test_optimize_exits_3_when_nothing_meets_the_constraint():
    assert EXIT_INFEASIBLE == 3
    r = runner.invoke(app, ["optimize", str(CODING), "--max-p95", "100", "--runs", "20", "--json"])
    assert r.exit_code == EXIT_INFEASIBLE
    doc = json.loads(r.stdout)
    assert doc["feasible"] is False and doc["exit_code"] == 3
    r = runner.invoke(app, ["optimize", str(CODING), "--max-p95", "100", "--runs", "20"])
    assert r.exit_code == 3 and "NO assignment meets the constraint" in r.stdout and "exit code 3" in r.stderr


# --------------------------------------------------------------------------- 80 columns


UNIT = re.compile(r"(?<![\w.])[−+±]?\d[\d,]*(?:\.(\d+))? (s|min|h)(?![\w/])")


def _fits_80(text: str) -> None:
    assert "…" not in text
    for line in text.splitlines():
        assert len(line) <= 80, line
        cells = [c for c in re.split(r"[│┃]", line)[2:] if c.strip()]  # a row's cells after its label
        kinds = {(m.group(2), len(m.group(1) or "")) for c in cells for m in UNIT.finditer(c)}
        assert len(kinds) <= 1, line  # one unit (and one number of decimals) per row


def test_run_and_size_tables_fit_80_columns_one_unit_per_row():
    env = {"COLUMNS": "80"}
    _fits_80(_ok(["run", CODING, "--runs", "30"], env=env).stdout)
    _fits_80(_ok(["size", CODING, "--runs", "30", *VOLUME], env=env).stdout)
    _fits_80(_ok(["run", SCENARIOS / "cheaper-model-per-task.yaml", "--runs", "30"], env=env).stdout)

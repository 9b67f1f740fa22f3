"""Honest headers: the report and `run` name the price list used per model (catalog and date, or
explicit prices in the scenario) and where the speeds come from (profile name, kind, date, source)."""

from __future__ import annotations

import html
import re

import yaml
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.viz.report import build_report
from conftest import SCENARIOS


def _text(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def test_report_with_explicit_prices_says_so():
    text = _text(build_report(SCENARIOS / "chat-turn.yaml", runs=30))
    assert "today (catalog prices)" not in text
    doc = yaml.safe_load((SCENARIOS / "chat-turn.yaml").read_text(encoding="utf-8"))
    for name in doc["models"]:
        assert f"prices: {name} explicit prices in the scenario" in text


def test_report_names_catalog_dates_per_model():
    text = _text(build_report(SCENARIOS / "fast-mode-pricing-history.yaml", runs=20))
    # opus: no date of its own, so the scenario's prices_as_of; opus-4-6: its own date
    assert "prices: opus catalog anthropic/claude-opus-4-8 as of 2026-11-29" in text
    assert (
        "prices: opus/fast catalog anthropic/claude-opus-4-8 as of 2026-11-29 (speed=fast; Claude Opus 4.8 in "
        "genai-prices" in text
    )
    assert "prices: opus-4-6 catalog anthropic/claude-opus-4-6 as of 2026-02-15" in text
    assert "prices: opus-4-6/fast explicit prices in the scenario" in text


def test_run_prints_price_and_speed_sources():
    import agentsim

    sc = agentsim.load(SCENARIOS / "measured-vs-assumed.yaml")
    profiled = {name: m.profile for name, m in sc.models.items() if m.profile}
    assert profiled
    r = CliRunner().invoke(
        app, ["run", str(SCENARIOS / "measured-vs-assumed.yaml"), "--runs", "20"], env={"COLUMNS": "200"}
    )
    assert r.exit_code == 0, r.output
    flat = " ".join(r.stdout.split())
    for name, prof in profiled.items():
        assert f"speeds {name}: profile {prof} (" in flat
    for name, m in sc.models.items():
        if not m.profile:
            assert f"speeds {name}: set in the scenario" in flat


def test_report_baseline_reads_baseline_not_zero():
    page = build_report(SCENARIOS / "coding-agent.yaml", runs=20)
    table = page.split("<h2>Break-even</h2>", 1)[1].split("</table>", 1)[0]
    first_row = table.split("<tr>")[2]  # header row, then the baseline's row
    cells = re.findall(r"<td[^>]*>(.*?)</td>", first_row)
    assert cells[1:3] == ["baseline", "baseline"], cells

"""At 80 columns (COLUMNS=80) every table is readable: no cell cut to '…', no line wider than 80;
one time unit per row; the baseline's Δ reads 'baseline'; profiles say which fields are assumed."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.cli.tables import fmt_time, time_unit
from conftest import ROOT

ENV = {"COLUMNS": "80"}


def _invoke(args):
    r = CliRunner().invoke(app, args, env=ENV)
    assert r.exit_code == 0, r.output
    return r.stdout


def _fits(text: str) -> None:
    assert "…" not in text
    for line in text.splitlines():
        assert len(line) <= 80, line


def test_prices_at_80_columns_show_every_price():
    from agentsim.pricing.rates import describe_catalog_model, find_catalog_model, today

    text = _invoke(["prices", "opus"])
    _fits(text)
    d = describe_catalog_model(*find_catalog_model("anthropic/claude-opus-4-6"), today())
    flat = " ".join(text.split())
    for kind, label in (("input_mtok", "input"), ("output_mtok", "output"), ("cache_read_mtok", "cache read")):
        price = d["prices"][kind]
        value = price["base"] if isinstance(price, dict) else price
        assert f"{label} {value:g}" in flat


def test_prices_show_at_80_columns():
    _fits(_invoke(["prices", "show", "anthropic/claude-opus-4-6", "--date", "2026-03-01"]))


def test_profiles_at_80_columns_show_sources_and_field_provenance():
    import yaml

    text = _invoke(["profiles"])
    _fits(text)
    flat = " ".join(text.split())
    for path in sorted((ROOT / "src" / "agentsim" / "profiles").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        assert " ".join(doc["source"].split()) in flat, path.name
    # the YAML comments say: Codex-Spark's TTFT is an assumption, Gemini 3 Flash's median is measured
    block = flat.split("gpt-5.3-codex-spark", 1)[1]
    assert re.search(r"TTFT p50 [0-9.]+ s \(assumed\)", block)
    block = flat.split("gemini-3-flash", 1)[1]
    assert re.search(r"TTFT p50 [0-9.]+ s \(measured\)", block)


def test_run_table_at_80_columns_baseline_and_units():
    text = _invoke(["run", str(ROOT / "scenarios" / "coding-agent.yaml"), "--runs", "60"])
    _fits(text)
    delta = next(line for line in text.splitlines() if "Δ time vs first" in line)
    assert "baseline" in delta and "±0" not in delta
    # the wall-time block (mean, p50, p95, p99) uses one unit
    units = set()
    for line in text.splitlines():
        if re.match(r"│ (wall time mean|  p50|  p95|  p99) ", line) and "$" not in line:
            units |= set(re.findall(r"\d (s|min|h)\b", line))
    assert len(units) == 1, units


def test_sweep_table_at_80_columns(tmp_path):
    text = _invoke(
        [
            "sweep",
            str(ROOT / "scenarios" / "coding-agent.yaml"),
            "--runs",
            "30",
            "-q",
            "--workers",
            "1",
            "--set",
            "models.opus.speeds.fast.output_tps_x=1.5,2.5",
            "-o",
            str(tmp_path / "sw"),
        ]
    )
    _fits(text)
    assert "Δ time" in text and "$/h saved" in text and "pays off" in text


def test_size_table_at_80_columns():
    text = _invoke(["size", str(ROOT / "scenarios" / "coding-agent.yaml"), "--runs", "30", "--runs-per-month", "1000"])
    _fits(text)
    for name in ("standard", "fast", "fast-plan-only"):
        assert name in text  # every variant, on one page or the next


@pytest.mark.parametrize(
    ("values", "unit"),
    [([112.6, 126.0], "min"), ([5.0, 119.0], "s"), ([7200.0, 10.0], "h"), ([None, 30.0], "s")],
)
def test_time_unit_from_the_largest_value(values, unit):
    assert time_unit(values)[0] == unit


def test_fmt_time_converts():
    assert fmt_time(126.0, ("min", 60.0)) == "2.10 min"
    assert fmt_time(112.6, ("min", 60.0)) == "1.88 min"
    assert fmt_time(None, ("s", 1.0)) == "–"

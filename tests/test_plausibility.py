"""Plausibility warnings: one CLI test per warning (validate and run list it with file:line on stderr,
the scenario still runs), silencing per key with ``warnings: {ignore: [...]}``."""

from __future__ import annotations

import typing

import pytest
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.model.scenario import WarningsSpec
from agentsim.plan.plausibility import KEYS

BASE = """name: w
{extra}models:
  m:
    price: {{input_mtok: 1, output_mtok: 5}}
    ttft: {ttft}
    output_tps: {tps}
    speeds:
      fast: {{output_tps_x: {sx}, ttft_x: {tx}, price_x: {px}}}
agent:
  steps:
    - call: {{model: m, input: 100, output: {out}}}
"""
OK = {"extra": "", "ttft": 1.5, "tps": 80, "sx": 2.5, "tx": 1, "px": 6, "out": 200}

# key -> (changed fields, the line the warning names, words of the message)
CASES = {
    "ttft_over_60s": ({"ttft": 1500}, 5, "median TTFT is 1500 s"),
    "output_tps_over_50000": ({"tps": 80000}, 6, "80,000 tokens/s"),
    "output_tps_under_1": ({"tps": 0.5}, 6, "0.5 tokens/s"),
    "speed_multiplier_over_20": ({"sx": 250}, 8, "output_tps_x is 250"),
    "price_multiplier_over_20": ({"px": 600}, 8, "price_x is 600"),
}


def _write(tmp_path, **changes):
    p = tmp_path / "s.yaml"
    p.write_text(BASE.format(**{**OK, **changes}), encoding="utf-8")
    return p


def _cli(*args):
    return CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "100"})


def test_keys_match_the_vocabulary():
    (arg,) = typing.get_args(WarningsSpec.model_fields["ignore"].annotation)
    assert set(typing.get_args(arg)) == set(KEYS)


def test_a_plausible_scenario_has_no_warning(tmp_path):
    r = _cli("validate", _write(tmp_path))
    assert r.exit_code == 0 and "warning" not in r.stderr


@pytest.mark.parametrize("key", sorted(CASES))
def test_warning_in_validate_and_run(tmp_path, key):
    changes, line, words = CASES[key]
    p = _write(tmp_path, **changes)
    r = _cli("validate", p)
    assert r.exit_code == 0, r.output
    assert f"warning: {p}:{line}:" in r.stderr and words in r.stderr and key in r.stderr
    r = _cli("run", p, "--runs", "5")
    assert r.exit_code == 0, r.output
    assert words in r.stderr and key in r.stderr
    # silenced per key
    p = _write(tmp_path, **changes, extra=f"warnings: {{ignore: [{key}]}}\n")
    r = _cli("validate", p)
    assert r.exit_code == 0 and "warning" not in r.stderr


def test_run_longer_than_a_day(tmp_path):
    # 100,000 output tokens at 1 token/s: 1.5 s + 100,000 s > 86,400 s, a plausible speed otherwise
    p = _write(tmp_path, tps=1, out=100_000)
    r = _cli("validate", p)
    assert "warning" not in r.stderr  # only a simulation shows it
    r = _cli("run", p, "--runs", "3")
    assert r.exit_code == 0, r.output
    assert "run_over_a_day" in r.stderr and "longer than a day" in r.stderr
    assert r.stderr.index("longer than a day") >= 0
    p = _write(tmp_path, tps=1, out=100_000, extra="warnings: {ignore: [run_over_a_day]}\n")
    r = _cli("run", p, "--runs", "3")
    assert r.exit_code == 0 and "run_over_a_day" not in r.stderr


def test_unknown_key_is_an_error(tmp_path):
    p = _write(tmp_path, extra="warnings: {ignore: [ttft_over_6s]}\n")
    r = _cli("validate", p)
    assert r.exit_code == 2 and "warnings.ignore" in r.stderr

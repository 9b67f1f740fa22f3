"""The one pays-off rule (agentsim.sim.payoff), by hand for every case, and its users agreeing with it.

Each case is (Δ time s, Δ cost USD) of a variant against its baseline. Hand-computed expectations:
total cost at value of time V is ``cost + V × wall / 3600``; the variant pays off when it is faster or
cheaper and its total is not above the baseline's (ties pay off).
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from agentsim.analysis.tradeoffs import break_even as break_even_table
from agentsim.cli.main import app
from agentsim.sim import payoff

# name: (dt, dc, usd_per_hour_saved, (when, V*), {V: pays_off})
CASES = {
    # $0.90 more for 36 s saved: 0.9 / 0.01 h = $90/h; pays off from $90/h (tie included)
    "faster-dearer": (-36.0, 0.9, 90.0, ("above", 90.0), {0.0: False, 89.0: False, 90.0: True, 91.0: True}),
    # $0.50 less and 60 s saved: -0.5 / (1/60 h) = -$30/h; always pays, even when time is worth nothing
    "faster-cheaper": (-60.0, -0.5, -30.0, ("always", None), {0.0: True, 1.0: True, 1e6: True}),
    # same price, 60 s saved: $0 per hour saved; at V = 0 the totals tie, and it is faster: pays
    "faster-same-cost": (-60.0, 0.0, 0.0, ("always", None), {0.0: True, 50.0: True}),
    # $0.75 less for 300 s lost: pays off while an hour is worth at most 0.75 / (300/3600) = $9/h
    "slower-cheaper": (300.0, -0.75, None, ("below", 9.0), {0.0: True, 8.0: True, 9.0: True, 9.5: False}),
    "slower-dearer": (10.0, 0.1, None, ("never", None), {0.0: False, 100.0: False}),
    # nothing gained: at V = 0 the totals tie, but it never pays (break_even said "never", pays_off was true)
    "slower-same-cost": (10.0, 0.0, None, ("never", None), {0.0: False, 100.0: False}),
    "same-time-cheaper": (0.0, -0.1, None, ("always", None), {0.0: True, 100.0: True}),
    "same-time-dearer": (0.0, 0.1, None, ("never", None), {0.0: False, 100.0: False}),
    "identical": (0.0, 0.0, None, ("never", None), {0.0: False, 100.0: False}),
}


@pytest.mark.parametrize("name", CASES)
def test_each_case_by_hand(name):
    dt, dc, per_hour, (when, v_star), pays = CASES[name]
    got = payoff.usd_per_hour_saved(dt, dc)
    assert (got is None) if per_hour is None else got == pytest.approx(per_hour, rel=1e-12)
    be = payoff.break_even(dt, dc)
    assert be.when == when
    assert (be.usd_per_hour is None) if v_star is None else be.usd_per_hour == pytest.approx(v_star, rel=1e-12)
    for vot, expected in pays.items():
        assert payoff.pays_off(dt, dc, vot) is expected, (name, vot)


def _verdict(be: payoff.BreakEven, vot: float) -> bool:
    return {
        "always": True,
        "never": False,
        "above": be.usd_per_hour is not None and vot >= be.usd_per_hour,
        "below": be.usd_per_hour is not None and vot <= be.usd_per_hour,
    }[be.when]


@pytest.mark.parametrize("name", CASES)
def test_break_even_and_pays_off_agree_at_every_value_of_time(name):
    dt, dc = CASES[name][:2]
    be = payoff.break_even(dt, dc)
    values = [0.0, 1e-9, 0.5, 1.0, 9.0, 30.0, 90.0, 1e3, 1e9]
    if be.usd_per_hour is not None:
        values += [be.usd_per_hour, be.usd_per_hour * (1 - 1e-6), be.usd_per_hour * (1 + 1e-6)]
    for vot in values:
        assert payoff.pays_off(dt, dc, vot) is _verdict(be, vot), (name, vot)


@pytest.mark.parametrize(
    ("dt", "dc"),
    [(a, b) for a in (-7.3, -0.001, 0.0, 0.25, 1234.5) for b in (-3.1e-4, 0.0, 2e-6, 0.77)],
)
def test_pays_off_is_exact_total_cost_away_from_the_break_even(dt, dc):
    """A second computation in exact rationals: gains something and total cost not above the baseline's."""
    v_star = payoff.break_even(dt, dc).usd_per_hour
    for vot in (0.0, 0.3, 3.0, 77.0, 5000.0):
        if v_star is not None and math.isclose(vot, v_star, rel_tol=1e-6):
            continue
        d = Fraction(dc) + Fraction(vot) * Fraction(dt) / 3600
        expected = (dt < 0 or dc < 0) and d <= 0
        assert payoff.pays_off(dt, dc, vot) is expected, (dt, dc, vot)


def test_premium_text():
    money = "${:.2f}".format
    assert payoff.premium_text(None, money) == "–"
    assert payoff.premium_text(math.nan, money) == "–"
    assert payoff.premium_text(-30.0, money, "/h") == "always pays"
    assert payoff.premium_text(90.0, money, "/h") == "$90.00/h"


def test_trade_off_table_uses_the_rule():
    # variants: the cases above, each against a baseline of 600 s and $1.00
    rows = {"base": (600.0, 1.0)} | {n: (600.0 + c[0], 1.0 + c[1]) for n, c in CASES.items()}
    table = pd.DataFrame.from_dict(rows, orient="index", columns=["wall_mean_s", "cost_mean_usd"])
    for vot in (0.0, 9.0, 90.0):
        be = break_even_table(table, value_of_time=vot)
        for name, (_, _, per_hour, (when, _), pays) in CASES.items():
            assert be.loc[name, "pays_off_when"] == when, name
            if vot in pays:
                assert be.loc[name, "pays_off"] == pays[vot], (name, vot)
            assert math.isnan(be.loc[name, "usd_per_hour_saved"]) == (per_hour is None)


def test_replay_summary_uses_the_rule_for_every_variant():
    """Replay used to leave pays_off empty for variants that are not faster; now it follows the rule."""
    fix = Path(__file__).resolve().parent / "fixtures" / "sessions"
    args = ["replay", str(fix), "--json", "-v", "fast", "-v", "identity", "-v", "model=anthropic/claude-haiku-4-5"]
    r = CliRunner().invoke(app, [*args, "--value-of-time", "100"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    rec = doc["recorded"]
    for name, v in doc["variants"].items():
        dt, dc = v["wall_time_s"] - rec["wall_time_s"], v["cost_usd"] - rec["cost_usd"]
        total_v = v["cost_usd"] + 100 * v["wall_time_s"] / 3600
        total_rec = rec["cost_usd"] + 100 * rec["wall_time_s"] / 3600
        expected = (dt < 0 or dc < 0) and total_v <= total_rec + 1e-12
        assert v["vs_recorded"]["pays_off"] is expected, name
    assert doc["variants"]["identity"]["vs_recorded"]["pays_off"] is False

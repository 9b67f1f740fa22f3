"""The two rules every buyer-facing output shares, by hand: the monthly volume and how numbers are written.

`monthly_volume` (agentsim.analysis.volume) derives runs per month from the options or the scenario and
says how; `agentsim.viz.format` writes money (whole dollars from $10, cents from $1, three significant
digits below), a column of durations in one unit with one number of decimals, and plain-number columns.
"""

from __future__ import annotations

import math

import pytest

from agentsim.analysis.volume import monthly_volume
from agentsim.plan.validation import parse
from agentsim.viz import format as fmt
from agentsim.viz.notes import comment_blocks, paragraphs


def _scenario(workload: dict | None = None):
    doc = {
        "name": "v",
        "models": {"m": {"price": {"input_mtok": 1, "output_mtok": 5}, "ttft": 0.5, "output_tps": 100}},
        "agent": {"steps": [{"call": {"model": "m", "input": 100, "output": 10}}]},
    }
    if workload is not None:
        doc["workload"] = workload
    return parse(doc)


PLAIN = _scenario()


# --------------------------------------------------------------------------- volume


def test_options():
    v = monthly_volume(PLAIN, 4200)
    assert (v.runs_per_month, v.derivation, v.options) == (4200, "4,200 runs a month (--runs-per-month)",
                                                           ("--runs-per-month", "4200"))  # fmt: skip
    v = monthly_volume(PLAIN, seats=20, runs_per_seat_per_day=10)
    assert v.runs_per_month == 20 * 10 * 21
    assert (
        v.derivation == "20 seats × 10 runs × 21 working days (the default: a month of weekdays) = 4,200 runs a month"
    )
    assert v.options == ("--seats", "20", "--runs-per-seat-per-day", "10")
    v = monthly_volume(PLAIN, seats=3, runs_per_seat_per_day=2.5, working_days=20)
    assert v.runs_per_month == 150 and v.derivation == "3 seats × 2.5 runs × 20 working days = 150 runs a month"
    assert v.options[-2:] == ("--working-days", "20")
    assert v.to_json() == {"runs_per_month": 150.0, "derivation": v.derivation, "source": "options"}


@pytest.mark.parametrize(
    ("kw", "words"),
    [
        ({"seats": 3}, "--seats needs --runs-per-seat-per-day too"),
        ({"runs_per_seat_per_day": 3}, "--runs-per-seat-per-day needs --seats too"),
        ({"runs_per_month": 10, "seats": 2, "runs_per_seat_per_day": 1}, "drop --seats and --runs-per-seat-per-day"),
        ({"runs_per_month": 10, "working_days": 20}, "drop --working-days or --runs-per-month"),
        ({"seats": 2, "runs_per_seat_per_day": 1, "working_days": 32}, "at most 31"),
        ({"runs_per_month": 0}, "--runs-per-month 0: give a number above 0"),
        ({"runs_per_month": math.nan}, "--runs-per-month nan"),
        ({"seats": math.inf, "runs_per_seat_per_day": 1}, "--seats inf"),
        ({}, "no volume given"),
        ({"working_days": 20}, "--working-days needs --seats"),
    ],
)
def test_contradictions_name_the_option(kw, words):
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        monthly_volume(PLAIN, kw.pop("runs_per_month", None), **kw)


def test_the_scenarios_volume():
    v = monthly_volume(_scenario({"volume": {"runs_per_month": 20000}}))
    assert (v.runs_per_month, v.source, v.options) == (20000, "scenario", ())
    v = monthly_volume(_scenario({"volume": {"runs_per_day": 300}}))  # the scenario reference's 30 days
    assert v.runs_per_month == 9000 and v.derivation.startswith("300 runs a day × 30 days (the scenario reference")
    v = monthly_volume(_scenario({"volume": {"runs_per_day": 300}}), working_days=21)
    assert v.runs_per_month == 6300 and v.options == ("--working-days", "21")
    v = monthly_volume(_scenario({"volume": {"seats": 4, "runs_per_seat_per_day": 5, "working_days": 20}}))
    assert v.runs_per_month == 400 and v.derivation.startswith("4 seats × 5 runs × 20 working days = 400 runs")
    with pytest.raises(ValueError, match="drop --working-days"):
        monthly_volume(_scenario({"volume": {"runs_per_month": 100}}), working_days=20)
    # arrivals over the workload's duration, read as one day's window: 120/h × 8 h × 30 days
    v = monthly_volume(_scenario({"arrivals": {"per_hour": 120}, "duration": {"hours": 8}}))
    assert v.runs_per_month == 28_800 and "120 runs/h × 8 h a day × 30 days = 28,800 runs a month" in v.derivation


# --------------------------------------------------------------------------- money


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (0, "$0"), (122.4, "$122"), (10, "$10"), (9.996, "$10"), (6.99, "$6.99"), (1, "$1.00"),
        (0.6157, "$0.616"), (0.01234, "$0.0123"), (0.99951, "$1.00"), (-3.4, "−$3.40"), (35_833.2, "$35,833"),
        (None, "–"), (math.nan, "–"), (math.inf, "–"),
    ],
)  # fmt: skip
def test_money_has_one_precision_rule(x, text):
    assert fmt.usd(x) == text


def test_signed_money_and_per_hour():
    assert (fmt.signed_usd(6.95), fmt.signed_usd(-0.12), fmt.signed_usd(0)) == ("+$6.95", "−$0.120", "±$0")
    assert (fmt.usd_per_hour(125.2), fmt.usd_per_hour(None)) == ("$125/h", "–")


# --------------------------------------------------------------------------- durations and numbers


def test_a_column_of_durations_has_one_unit_and_one_number_of_decimals():
    # the largest is 8.87 min: every value in min, two decimals (the largest is below 10)
    assert fmt.durations([532.2, 331.2, 2.84]) == ["8.87 min", "5.52 min", "0.05 min"]
    # below 2 minutes: seconds; the largest (112.6) has three digits, so no decimals
    assert fmt.durations([112.6, 7.12, None]) == ["113 s", "7 s", "–"]
    assert fmt.durations([7200, 3600]) == ["2.00 h", "1.00 h"]
    assert fmt.durations([45.0, 3.5]) == ["45.0 s", "3.5 s"]
    unit = fmt.time_unit([-204.0])
    assert fmt.signed_time(-204.0, unit, 2) == "−3.40 min" and fmt.signed_time(0.0, unit, 2) == "±0.00 min"
    assert fmt.signed_time(12.0, fmt.time_unit([12.0])) == "+12.0 s"


def test_a_column_of_numbers_shares_its_decimals():
    assert fmt.numbers([241.2, 8.31, 0.0], " h") == ["241 h", "8 h", "0 h"]
    assert fmt.numbers([21.7, 0.39]) == ["21.7", "0.4"]
    assert fmt.numbers([-0.001, 1.5]) == ["0.00", "1.50"]  # no minus sign on a value that rounds to zero
    assert (fmt.count(1346.0), fmt.pct(0.0344), fmt.pct(None)) == ("1,346", "3.4%", "–")
    assert fmt.capitalise("fast pays off") == "Fast pays off" and fmt.capitalise("") == ""


# --------------------------------------------------------------------------- comments as prose


def test_comment_lines_are_joined_into_paragraphs_and_list_items():
    text = """# yaml-language-server: $schema=x.json
# A question on two
# lines?
#
# Where the numbers come from:
# - Prices: $5 input / $25 output per Mtok; reads
#   0.1x (Anthropic, Feb 2026).
# - Speeds: ASSUMPTIONS.
# A paragraph after the list.
name: x
# a comment in the body is not part of the header
"""
    blocks = [(b.text, b.items) for b in comment_blocks(text)]
    assert blocks == [
        ("A question on two lines?", []),
        ("Where the numbers come from:", []),
        ("", ["Prices: $5 input / $25 output per Mtok; reads 0.1x (Anthropic, Feb 2026).", "Speeds: ASSUMPTIONS."]),
        ("A paragraph after the list.", []),
    ]
    assert paragraphs("One line\nwrapped.\n\nSecond.") == ["One line wrapped.", "Second."]
    assert paragraphs(None) == []

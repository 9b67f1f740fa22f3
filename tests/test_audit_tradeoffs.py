"""An independent, black-box audit of the trade-off and decision outputs (DESIGN.md §4, docs/tradeoffs.md).

Every scenario is written in the contract's vocabulary and run through the command line (``size --json``,
``sweep --json`` / ``sweep -o``, ``optimize --json``, ``run --json``); the numbers are compared with a hand
computation written from docs/tradeoffs.md and docs/metrics.md (in the comments), never with agentsim's
own output. What tests/test_audit_core.py, test_tradeoffs*.py, test_payoff.py and test_optimize.py already
check (Δtime/Δcost/USD per hour saved against the first variant, ``size`` on one variant, a simple mean
frontier) is not repeated; this file covers the break-even between *every* pair, exact ties, the cheapest
variant per value-of-time interval, the p95 frontier against the mean one, the frontier across a sweep's grid,
the documented sweep.csv columns, the monthly spend from ``workload.volume``, the per-success basis and the
optimiser's choice among hand-enumerated assignments.

Model ``big`` throughout: TTFT 2 s, 100 output tokens/s, $15 per Mtok output, input free (so context growth
costs nothing and there is no prefill term). One call of N output tokens: 2 + N/100 s and 15e-6 × N USD.
Its tiers: ``fast`` 2.5× the speed at 6× the price, ``batch`` half speed at half price, ``priority`` the same
speed at twice the price, ``clone`` identical to standard. For any call, going ``fast`` costs 5 × 15e-6 = 75e-6
USD more per token and saves 0.01 − 0.004 = 0.006 s per token: 0.0125 USD/s = **45 USD per hour saved**
whatever the call's size, so every fast-tier break-even below is 45 $/h.
"""

from __future__ import annotations

import copy
import csv
import json
import math

import pandas as pd
import pytest
import yaml
from scipy import stats
from typer.testing import CliRunner

import agentsim
from agentsim.analysis.tradeoffs import cheapest_intervals, paired_deltas, variant_table
from agentsim.cli.main import app
from agentsim.plan.validation import parse

RUNNER = CliRunner()

BIG = {
    "price": {"input_mtok": 0, "output_mtok": 15},
    "ttft": 2,
    "output_tps": 100,
    "speeds": {
        "clone": {"output_tps_x": 1},
        "fast": {"output_tps_x": 2.5, "price_x": 6},
        "batch": {"output_tps_x": 0.5, "price_x": 0.5},
        "priority": {"price_x": 2},
    },
}


def cli(tmp_path, doc: dict, *args: str, name: str = "s.yaml") -> dict:
    """``agentsim ARGS[0] FILE ARGS[1:]`` on the scenario written as YAML; its JSON output."""
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    r = RUNNER.invoke(app, [args[0], str(path), *args[1:]])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def sweep_json(tmp_path, doc: dict, set_: str) -> dict:
    """``agentsim sweep FILE --set SET --json`` on one process."""
    return cli(tmp_path, doc, "sweep", "--set", set_, "--json", "--workers", "1")


def close(got, want, rel=1e-9, abs_=1e-12):
    if want is None:
        assert got is None
    else:
        assert got == pytest.approx(want, rel=rel, abs=abs_)


# --------------------------------------------------------------------------- scenario A: constant, six variants
#
# plan (500 tokens) then act (500 tokens), both on big.  Per call: standard 7 s / $0.0075, fast 4 s / $0.045,
# batch 12 s / $0.00375, priority 7 s / $0.015.  Per run (wall s, cost $):
#   std       both standard               (14, 0.015)
#   fast      both fast                   ( 8, 0.09)
#   fast-act  act fast                    (11, 0.0525)
#   batch     both batch                  (24, 0.0075)
#   dear      plan priority               (14, 0.0225)   same time as std, dearer: dominated
#   twin      plan fast, act fast by step ( 8, 0.09)     the same point as fast
A_POINTS = {
    "std": (14.0, 0.015),
    "fast": (8.0, 0.09),
    "fast-act": (11.0, 0.0525),
    "batch": (24.0, 0.0075),
    "dear": (14.0, 0.0225),
    "twin": (8.0, 0.09),
}
A_VARIANTS = {
    "std": {},
    "fast": {"speed": {"big": "fast"}},
    "fast-act": {"speed": {"act": "fast"}},
    "batch": {"speed": {"big": "batch"}},
    "dear": {"speed": {"plan": "priority"}},
    "twin": {"speed": {"plan": "fast", "act": "fast"}},
}


def scenario_a(first: str = "std") -> dict:
    order = [first] + [v for v in A_VARIANTS if v != first]
    return {
        "name": "audit-a",
        "seed": 3,
        "runs": 4,
        "models": {"big": copy.deepcopy(BIG)},
        "agent": {
            "steps": [
                {"call": {"name": "plan", "model": "big", "output": 500}},
                {"call": {"name": "act", "model": "big", "output": 500}},
            ]
        },
        "variants": {v: A_VARIANTS[v] for v in order},
        "value_of_time": {"usd_per_hour": 45},
        "workload": {"volume": {"runs_per_month": 20000}},
    }


# Break-even of each variant against each baseline (the first variant), by the rule of docs/tradeoffs.md:
# Δt, Δc = variant − baseline; neither faster nor cheaper -> never; faster (or same) and not dearer -> always;
# else V* = −3600 Δc / Δt, "above" for a faster variant, "below" for a slower one.
# (pays_off_when, V*, USD per hour saved = Δc / (−Δt/3600) when Δt < 0, pays off at V = 45)
PAIRS = {
    "std": {
        "fast": ("above", 45.0, 45.0, True),  # Δt −6, Δc +0.075: 3600 × 0.075 / 6 = 45; tie at V = 45 pays
        "fast-act": ("above", 45.0, 45.0, True),  # Δt −3, Δc +0.0375
        "batch": ("below", 2.7, None, False),  # Δt +10, Δc −0.0075: 3600 × 0.0075 / 10 = 2.7
        "dear": ("never", None, None, False),  # Δt 0, Δc +0.0075
        "twin": ("above", 45.0, 45.0, True),
    },
    "fast": {
        "std": ("below", 45.0, None, True),  # Δt +6, Δc −0.075: below 45, tie at 45 pays
        "fast-act": ("below", 45.0, None, True),  # Δt +3, Δc −0.0375
        "batch": ("below", 18.5625, None, False),  # Δt +16, Δc −0.0825: 3600 × 0.0825 / 16
        "dear": ("below", 40.5, None, False),  # Δt +6, Δc −0.0675: 3600 × 0.0675 / 6
        "twin": ("never", None, None, False),  # identical: nothing gained
    },
    "batch": {
        "std": ("above", 2.7, 2.7, True),  # Δt −10, Δc +0.0075
        "fast": ("above", 18.5625, 18.5625, True),  # Δt −16, Δc +0.0825
        "fast-act": ("above", 162 / 13, 162 / 13, True),  # Δt −13, Δc +0.045: 3600 × 0.045 / 13
        "dear": ("above", 5.4, 5.4, True),  # Δt −10, Δc +0.015
        "twin": ("above", 18.5625, 18.5625, True),
    },
    "dear": {
        "std": ("always", None, None, True),  # Δt 0, Δc −0.0075: same time, cheaper; no hour saved: no premium
        "fast": ("above", 40.5, 40.5, True),  # Δt −6, Δc +0.0675
        "fast-act": ("above", 36.0, 36.0, True),  # Δt −3, Δc +0.03
        "batch": ("below", 5.4, None, False),  # Δt +10, Δc −0.015
        "twin": ("above", 40.5, 40.5, True),
    },
}


@pytest.mark.parametrize("first", list(PAIRS))
def test_break_even_between_every_pair(tmp_path, first):
    # The baseline is the first variant, so putting each variant first gives every pair's break-even.
    out = cli(tmp_path, scenario_a(first), "size", "--json")
    rows = out["variants"]
    assert list(rows) == [first] + [v for v in A_VARIANTS if v != first]
    assert rows[first]["pays_off_when"] == "baseline" and rows[first]["pays_off"] is None
    t0, c0 = A_POINTS[first]
    for name, (when, v_star, per_hour, pays) in PAIRS[first].items():
        r = rows[name]
        t, c = A_POINTS[name]
        assert r["pays_off_when"] == when, name
        close(r["break_even_usd_per_hour"], v_star)
        close(r["usd_per_hour_saved"], per_hour)
        assert r["pays_off"] is pays, name
        close(r["delta_time_s"], t - t0)
        close(r["delta_cost_usd"], c - c0)
        # total cost at V = 45 $/h: API cost + 45 × wall / 3600
        close(r["total_usd_per_run"], c + 45 * t / 3600)


def test_pays_off_at_exactly_the_break_even_in_summary_json(tmp_path):
    # V = 45 $/h is std->fast's break-even: the four lines std, fast, fast-act and twin all total
    # 0.015 + 45 × 14/3600 = 0.09 + 45 × 8/3600 = 0.0525 + 45 × 11/3600 = 0.19 $; "ties pay off".
    s = cli(tmp_path, scenario_a(), "run", "--json")
    for name in ("fast", "fast-act", "twin"):
        assert s["variants"][name]["vs_baseline"]["pays_off"] is True
        close(s["variants"][name]["total_cost_usd"]["mean"], 0.19)
    close(s["variants"]["std"]["total_cost_usd"]["mean"], 0.19)
    close(s["variants"]["batch"]["total_cost_usd"]["mean"], 0.0075 + 45 * 24 / 3600)  # 0.3075
    close(s["variants"]["dear"]["total_cost_usd"]["mean"], 0.0225 + 0.175)


def test_cheapest_variant_per_value_of_time_interval(tmp_path):
    # Lines cost + V × wall / 3600:  batch 0.0075 + V·24/3600, std 0.015 + V·14/3600, fast-act 0.0525 + V·11/3600,
    # fast = twin 0.09 + V·8/3600, dear 0.0225 + V·14/3600 (above std everywhere).
    # batch = std at 10 V/3600 = 0.0075 -> V = 2.7; std = fast-act = fast at V = 45 (all three 0.19).
    # Envelope: batch [0, 2.7], std [2.7, 45], fast [45, ∞). fast-act only touches it at 45 (no interval);
    # twin ties fast everywhere and the earlier variant (fast) takes it; dear never.
    out = cli(tmp_path, scenario_a(), "size", "--json")
    env = out["cheapest_by_value_of_time"]
    assert [r["variant"] for r in env] == ["batch", "std", "fast"]
    close(env[0]["from_usd_per_hour"], 0.0)
    close(env[0]["to_usd_per_hour"], 2.7)
    close(env[1]["from_usd_per_hour"], 2.7)
    close(env[1]["to_usd_per_hour"], 45.0)
    close(env[2]["from_usd_per_hour"], 45.0)
    assert env[2]["to_usd_per_hour"] is None  # ∞ (JSON has no infinity)


@pytest.mark.parametrize("first", ["fast-act", "twin"])
def test_cheapest_intervals_have_no_rounding_slivers_at_a_three_way_tie(tmp_path, first):
    # The same lines in another order: std, fast-act and fast (or twin) meet at V = 45, where the pairwise
    # crossings computed in floats land a hair apart (44.99999999999999, 45.0, 45.000000000000014). The envelope
    # is still batch [0, 2.7], std [2.7, 45], then the fastest line [45, ∞) — fast, or twin when twin comes
    # before fast (ties go to the earlier variant); fast-act only touches it at V = 45 and has no interval.
    # (Before the fix: ... std [2.7, 44.99999999999999], fast-act [44.99999999999999, 45.0],
    # std [45.0, 45.000000000000014], fast [45.000000000000014, ∞) — std twice, and slivers 1e-14 wide.)
    env = cli(tmp_path, scenario_a(first), "size", "--json")["cheapest_by_value_of_time"]
    fastest = "twin" if first == "twin" else "fast"
    assert [r["variant"] for r in env] == ["batch", "std", fastest]
    close(env[1]["to_usd_per_hour"], 45.0)
    close(env[2]["from_usd_per_hour"], 45.0)


def test_cheapest_intervals_treat_lines_a_rounding_error_apart_as_tied():
    # Two options that are the same line up to the last bit of their cost (0.09 and the float just below it)
    # tie everywhere: the earlier variant is cheapest for every V (the function's documented tie rule), not the
    # one that happens to be an ulp cheaper.
    table = pd.DataFrame(
        {"wall_mean_s": [8.0, 8.0, 24.0], "cost_mean_usd": [0.09, math.nextafter(0.09, 0.0), 0.0075]},
        index=pd.Index(["first", "second", "slow"], name="variant"),
    )
    env = cheapest_intervals(table)
    # slow vs first: 0.0825 = 16 V / 3600 -> V = 18.5625
    assert env["variant"].tolist() == ["slow", "first"]
    close(env["to_usd_per_hour"].iloc[0], 18.5625)


def test_monthly_spend_from_workload_volume(tmp_path):
    # workload.volume.runs_per_month = 20000 (no option given). Per variant (docs/tradeoffs.md, spend sizing):
    # spend N × cost; hours waiting N × wall / 3600; saved = std's 77.78 h − variant's; extra = spend − $300;
    # premium = extra / saved when hours are saved; net at V = 45 = saved × 45 − extra.
    out = cli(tmp_path, scenario_a(), "size", "--json")
    assert out["runs_per_month"] == 20000
    n = 20000
    want = {  # spend, hours waiting, hours saved, extra, premium, net
        "std": (300.0, n * 14 / 3600, 0.0, 0.0, None, 0.0),
        "fast": (1800.0, n * 8 / 3600, n * 6 / 3600, 1500.0, 45.0, 0.0),  # 33.33 h × 45 = 1500: break-even
        "fast-act": (1050.0, n * 11 / 3600, n * 3 / 3600, 750.0, 45.0, 0.0),
        "batch": (150.0, n * 24 / 3600, -n * 10 / 3600, -150.0, None, -2500.0 + 150.0),  # −55.56 h × 45 + 150
        "dear": (450.0, n * 14 / 3600, 0.0, 150.0, None, -150.0),  # no hour saved: no premium
        "twin": (1800.0, n * 8 / 3600, n * 6 / 3600, 1500.0, 45.0, 0.0),
    }
    for name, (spend, hours, saved, extra, premium, net) in want.items():
        r = out["variants"][name]
        close(r["api_usd_per_month"], spend)
        close(r["api_usd_per_month_lo"], spend)  # constant cost: the CI of the mean is a point
        close(r["api_usd_per_month_hi"], spend)
        close(r["wait_hours_per_month"], hours)
        close(r["hours_saved_per_month"], saved, abs_=1e-9)
        close(r["extra_usd_per_month"], extra, abs_=1e-9)
        close(r["premium_usd_per_saved_hour"], premium)
        close(r["net_usd_per_month"], net, abs_=1e-9)


def test_report_verdict_names_the_cheapest_at_the_value_of_time_and_says_at_least(tmp_path):
    # V = 50 $/h: totals std 0.015 + 50·14/3600 = 0.2094, fast-act 0.0525 + 50·11/3600 = 0.2053,
    # fast = twin 0.09 + 50·8/3600 = 0.2011 (the earlier, fast, takes the tie), batch 0.3408, dear 0.2169.
    # The faster, dearer variants pay off "at or above" V* = 45 (docs/tradeoffs.md), so the page must not say
    # "more than" (it did: at V = 45 exactly, summary.json said pays_off true and the page "worth more than $45").
    import html
    import re

    doc = scenario_a()
    doc["value_of_time"] = {"usd_per_hour": 50}
    path = tmp_path / "a.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    page = tmp_path / "a.html"
    r = RUNNER.invoke(app, ["report", str(path), "-o", str(page), "--no-sweep"])
    assert r.exit_code == 0, r.output
    text = html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.read_text())))
    assert "the cheapest overall is fast ." in text
    assert "Cheapest: batch" in text
    for name in ("fast", "fast-act", "twin"):
        assert f"{name} pays off when an hour of waiting is worth at least $45," in text  # whole dollars from $10
    assert "worth more than" not in text


# --------------------------------------------------------------------------- a sweep: frontier across the grid


def test_sweep_frontier_spans_the_grid_and_csv_has_the_documented_columns(tmp_path):
    # Sweep fast's speed-up over 2, 2.5, 5. A fast call of 500 tokens: 2 + 500/(100x) s -> 4.5, 4, 3 s.
    #   x=2:   fast = twin (9, 0.09),  fast-act (11.5, 0.0525)
    #   x=2.5: fast = twin (8, 0.09),  fast-act (11, 0.0525)
    #   x=5:   fast = twin (6, 0.09),  fast-act (10, 0.0525)
    #   every point: std (14, 0.015), batch (24, 0.0075), dear (14, 0.0225)
    # One frontier over all 18 points (a variant at a grid point is one option): at x=5 fast/twin (6, 0.09) beat
    # the fast/twin of x=2, 2.5, and fast-act (10, 0.0525) beats the other fast-acts; std's three identical points
    # and batch's three are all on it; dear is beaten by std. Constant runs: p95 = mean, same frontier.
    # Δ is against the first variant (std) at each grid point: fast's USD per hour saved = 0.075 / (Δt/3600):
    # x=2: 0.075 × 3600 / 5 = 54; x=2.5: 45; x=5: 0.075 × 3600 / 8 = 33.75; pays off at 45 $/h for x ≥ 2.5.
    path = tmp_path / "a.yaml"
    path.write_text(yaml.safe_dump(scenario_a(), sort_keys=False))
    out = tmp_path / "sweep"
    set_ = "models.big.speeds.fast.output_tps_x=2,2.5,5"
    r = RUNNER.invoke(app, ["sweep", str(path), "--set", set_, "--workers", "1", "-q", "-o", str(out)])
    assert r.exit_code == 0, r.output
    # docs/tradeoffs.md: sweep.parquet, sweep.csv, sweep.json, frontier-mean.png, frontier-p95.png and per swept
    # parameter sweep-<i>-<path>.png
    names = {p.name for p in out.iterdir()}
    assert {"sweep.parquet", "sweep.csv", "sweep.json", "frontier-mean.png", "frontier-p95.png"} <= names
    per_parameter = [n for n in names if n.startswith("sweep-") and n.endswith(".png")]
    assert len(per_parameter) == 1 and per_parameter[0].endswith("-models.big.speeds.fast.output_tps_x.png")
    with (out / "sweep.csv").open() as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames
        rows = list(reader)
    documented = [  # docs/tradeoffs.md "Output": swept values, summary figures flattened, Δ, frontier marks
        "models.big.speeds.fast.output_tps_x", "variant", "wall_mean_s", "wall_ci95_lo_s", "wall_ci95_hi_s",
        "wall_p50_s", "wall_p90_s", "wall_p95_s", "wall_p99_s", "cost_mean_usd", "cost_ci95_lo_usd",
        "cost_ci95_hi_usd", "queue_s", "ttft_s", "decode_s", "tool_s", "wait_s", "delta_time_s", "delta_cost_usd",
        "usd_per_hour_saved", "pareto_mean", "pareto_p95",
    ]  # fmt: skip
    assert set(documented) <= set(header)
    assert len(rows) == 3 * 6
    x_of = "models.big.speeds.fast.output_tps_x"
    want = {(x, v) for x in (2.0, 2.5, 5.0) for v in ("std", "batch")}
    want |= {(5.0, v) for v in ("fast", "twin", "fast-act")}
    for column in ("pareto_mean", "pareto_p95"):
        assert {(float(r[x_of]), r["variant"]) for r in rows if r[column] == "True"} == want, column
    fast = {float(r[x_of]): r for r in rows if r["variant"] == "fast"}
    for x, wall, per_hour, pays in ((2.0, 9.0, 54.0, "False"), (2.5, 8.0, 45.0, "True"), (5.0, 6.0, 33.75, "True")):
        close(float(fast[x]["wall_mean_s"]), wall)
        close(float(fast[x]["delta_time_s"]), wall - 14)
        close(float(fast[x]["usd_per_hour_saved"]), per_hour)
        assert fast[x]["pays_off"] == pays
    # sweep.json holds the same rows
    doc = json.loads((out / "sweep.json").read_text())
    assert [(r["variant"], r["pareto_mean"]) for r in doc["rows"]] == [
        (r["variant"], r["pareto_mean"] == "True") for r in rows
    ]


# --------------------------------------------------------------------------- scenario B: p95 frontier ≠ mean frontier
#
# A choose: 90% of runs call "quick" (800 tokens), 10% "deep" (3000 tokens); every variant sees the same draws
# (common random numbers), so with q the share of deep runs:
#   quick: standard 10 s / $0.012, fast 2 + 3.2 = 5.2 s / $0.072, promo (2× speed, same price) 6 s / $0.012
#   deep:  standard 32 s / $0.045, fast 2 + 12 = 14 s / $0.27
#   std         mean 10(1−q) + 32q,  cost 0.012(1−q) + 0.045q,  p95 32
#   promo-quick mean  6(1−q) + 32q,  cost = std's (bit for bit), p95 32
#   fast-quick  mean 5.2(1−q) + 32q, cost 0.072(1−q) + 0.045q, p95 32
#   fast-deep   mean 10(1−q) + 14q,  cost 0.012(1−q) + 0.27q,  p95 14
# With q ≈ 0.1 (p95 falls among the deep runs as long as q > 5%):
#   mean frontier: fast-quick (fastest), promo-quick (cheapest, faster than std); fast-deep is slower than
#     promo-quick (10 + 4q > 6 + 26q while q < 0.18) and dearer: dominated; std is dominated by promo-quick.
#   p95 frontier: fast-deep (14 s); std and promo-quick share the cheapest point (32 s, same cost): both on it;
#     fast-quick (32 s, dearer) is dominated.
# Break-even against std: promo-quick Δt = −4(1−q), Δc = 0 -> always (USD per hour saved 0);
#   fast-quick Δt = −4.8(1−q), Δc = 0.06(1−q) -> 45 exactly, whatever q; fast-deep Δt = −18q, Δc = 0.225q -> 45.
# Cheapest by value of time: promo-quick vs fast-quick: Δc = 0.06(1−q), Δt = 0.8(1−q) -> V = 270 $/h;
#   std ties promo-quick only at V = 0 (same cost), above 0 promo-quick is cheaper; fast-deep is above
#   promo-quick everywhere. Envelope: promo-quick [0, 270], fast-quick [270, ∞).
B_RUNS = 2000


def scenario_b() -> dict:
    big = copy.deepcopy(BIG)
    big["speeds"]["promo"] = {"output_tps_x": 2}
    return {
        "name": "audit-b",
        "seed": 11,
        "runs": B_RUNS,
        "models": {"big": big},
        "agent": {
            "steps": [
                {
                    "choose": {
                        "name": "path",
                        "options": [
                            {"p": 0.9, "steps": [{"call": {"name": "quick", "model": "big", "output": 800}}]},
                            {"p": 0.1, "steps": [{"call": {"name": "deep", "model": "big", "output": 3000}}]},
                        ],
                    }
                }
            ]
        },
        "variants": {
            "std": {},
            "promo-quick": {"speed": {"quick": "promo"}},
            "fast-quick": {"speed": {"quick": "fast"}},
            "fast-deep": {"speed": {"deep": "fast"}},
        },
        "value_of_time": {"usd_per_hour": 30},
    }


def test_p95_frontier_differs_from_the_mean_frontier(tmp_path):
    out = sweep_json(tmp_path, scenario_b(), "value_of_time.usd_per_hour=30")
    rows = {r["variant"]: r for r in out["rows"]}
    q = (rows["std"]["wall_mean_s"] - 10) / 22  # the share of deep runs, the same in every variant
    assert abs(q - 0.1) < 4 * math.sqrt(0.09 / B_RUNS)
    close(rows["promo-quick"]["wall_mean_s"], 6 * (1 - q) + 32 * q)
    close(rows["fast-quick"]["wall_mean_s"], 5.2 * (1 - q) + 32 * q)
    close(rows["fast-deep"]["wall_mean_s"], 10 * (1 - q) + 14 * q)
    close(rows["std"]["cost_mean_usd"], 0.012 * (1 - q) + 0.045 * q)
    assert rows["promo-quick"]["cost_mean_usd"] == rows["std"]["cost_mean_usd"]
    close(rows["fast-quick"]["cost_mean_usd"], 0.072 * (1 - q) + 0.045 * q)
    close(rows["fast-deep"]["cost_mean_usd"], 0.012 * (1 - q) + 0.27 * q)
    for name, p95 in (("std", 32.0), ("promo-quick", 32.0), ("fast-quick", 32.0), ("fast-deep", 14.0)):
        close(rows[name]["wall_p95_s"], p95)
    assert {v for v, r in rows.items() if r["pareto_mean"]} == {"fast-quick", "promo-quick"}
    assert {v for v, r in rows.items() if r["pareto_p95"]} == {"std", "promo-quick", "fast-deep"}
    # USD per hour saved (against std) and pays-off at V = 30 $/h
    close(rows["promo-quick"]["usd_per_hour_saved"], 0.0)
    close(rows["fast-quick"]["usd_per_hour_saved"], 45.0)
    close(rows["fast-deep"]["usd_per_hour_saved"], 45.0)
    assert (rows["promo-quick"]["pays_off"], rows["fast-quick"]["pays_off"], rows["fast-deep"]["pays_off"]) == (
        True,
        False,
        False,
    )


def test_break_even_and_cheapest_intervals_with_random_paths(tmp_path):
    out = cli(tmp_path, scenario_b(), "size", "--runs-per-month", "1000", "--json")
    v = out["variants"]
    assert (v["promo-quick"]["pays_off_when"], v["promo-quick"]["break_even_usd_per_hour"]) == ("always", None)
    for name in ("fast-quick", "fast-deep"):
        assert v[name]["pays_off_when"] == "above"
        close(v[name]["break_even_usd_per_hour"], 45.0)
        assert v[name]["pays_off"] is False  # 30 < 45
    env = out["cheapest_by_value_of_time"]
    assert [r["variant"] for r in env] == ["promo-quick", "fast-quick"]
    close(env[0]["from_usd_per_hour"], 0.0)
    close(env[0]["to_usd_per_hour"], 270.0)
    close(env[1]["from_usd_per_hour"], 270.0)
    assert env[1]["to_usd_per_hour"] is None
    # total cost at V = 30 $/h: monthly spend / N + 30 × mean wait / 3600
    for r in v.values():
        close(r["total_usd_per_run"], r["api_usd_per_month"] / 1000 + 30 * r["mean_wait_s"] / 3600)


def test_paired_deltas_have_the_closed_form_interval_of_a_two_point_difference():
    # Common random numbers: run r of every variant took the same path. Per run, fast-deep − std is −18 s
    # (+$0.225) on a deep run and 0 on a quick one; promo-quick − std is −4 s on a quick run and 0 on a deep one;
    # fast-quick − std is −4.8 s (+$0.06) on a quick run. A difference that is a on a share p of n runs and 0
    # otherwise has mean a·p and sample sd |a|·sqrt(p(1−p)·n/(n−1)), so the 95% half-width is
    # t(0.975, n−1)·|a|·sqrt(p(1−p)/(n−1)) (docs/tradeoffs.md: paired_deltas, Student-t from the paired runs).
    res = agentsim.simulate(parse(scenario_b()))
    d = paired_deltas(res.runs)
    q = (res.summary_dict()["variants"]["std"]["wall_time_s"]["mean"] - 10) / 22
    n = B_RUNS
    t = stats.t.ppf(0.975, n - 1)
    half = t * math.sqrt(q * (1 - q) / (n - 1))  # for |a| = 1
    for name, col, a, p in (
        ("fast-deep", "delta_time_s", -18.0, q),
        ("fast-deep", "delta_cost_usd", 0.225, q),
        ("promo-quick", "delta_time_s", -4.0, 1 - q),
        ("fast-quick", "delta_time_s", -4.8, 1 - q),
        ("fast-quick", "delta_cost_usd", 0.06, 1 - q),
    ):
        close(d.loc[name, col], a * p, rel=1e-9)
        close(d.loc[name, f"{col}_lo"], a * p - abs(a) * half, rel=1e-9)
        close(d.loc[name, f"{col}_hi"], a * p + abs(a) * half, rel=1e-9)
    # promo-quick costs the same on every run: a zero-width interval
    assert (d.loc["promo-quick", "delta_cost_usd_lo"], d.loc["promo-quick", "delta_cost_usd_hi"]) == (0.0, 0.0)


# --------------------------------------------------------------------------- scenario C: per successful task
#
# plan (500 tokens on big), then a loop of "act" calls (500 tokens) repeated 2 times on big, 5 times on small,
# then a fail step with p 0 when act runs on big, 0.75 on small. Model small: TTFT 1 s, 250 tokens/s, $2/Mtok
# output: an act call on small takes 1 + 2 = 3 s and costs $0.001. The fail step is last, so a failed run costs
# and lasts as much as a successful one.
#   std   (act on big):   7 + 2 × 7 = 21 s, 3 × 0.0075 = $0.0225, share 1
#   small (act on small): 7 + 5 × 3 = 22 s, 0.0075 + 5 × 0.001 = $0.0125, share s ≈ 0.25
#   fast  (big on fast):  3 × 4 = 12 s, 3 × 0.045 = $0.135, share 1
# Per run small is on the frontier (cheapest) and pays off below V* = 3600 × 0.01 / 1 = 36 $/h against std.
# Per success (cost / s, time / s): small costs 0.0125 / s ≈ $0.05 and takes 22 / s ≈ 88 s: slower and dearer
# than std -> dominated, and "never" pays off. std vs fast: Δt = −9, Δc = 0.1125 -> 45 $/h both ways.
C_RUNS = 2000


def scenario_c(p_small: float = 0.75, runs: int = C_RUNS) -> dict:
    return {
        "name": "audit-c",
        "seed": 5,
        "runs": runs,
        "models": {
            "big": copy.deepcopy(BIG),
            "small": {"price": {"input_mtok": 0, "output_mtok": 2}, "ttft": 1, "output_tps": 250},
        },
        "agent": {
            "steps": [
                {"call": {"name": "plan", "model": "big", "output": 500}},
                {
                    "repeat": {
                        "name": "loop",
                        "times": {"by": "act", "big": 2, "small": 5},
                        "steps": [{"call": {"name": "act", "model": "big", "output": 500}}],
                    }
                },
                {"fail": {"name": "check", "p": {"by": "act", "big": 0, "small": p_small}}},
            ]
        },
        "variants": {"std": {}, "small": {"model": {"act": "small"}}, "fast": {"speed": {"big": "fast"}}},
        "value_of_time": {"usd_per_hour": 40},
        "workload": {"volume": {"runs_per_month": 1000}},
    }


def test_per_success_size_break_even_and_cheapest_intervals(tmp_path):
    s = cli(tmp_path, scenario_c(), "run", "--json")["variants"]
    share = s["small"]["success"]["share"]
    assert abs(share - 0.25) < 4 * math.sqrt(0.25 * 0.75 / C_RUNS)
    assert s["std"]["success"]["share"] == s["fast"]["success"]["share"] == 1.0
    close(s["small"]["success"]["cost_per_success_usd"], 0.0125 / share)
    close(s["small"]["success"]["time_to_success_s"], 22 / share)
    # summary.json's vs_baseline stays per run: small is slower and cheaper, V* = 36 < 40 -> does not pay
    close(s["small"]["vs_baseline"]["delta_time_s"], 1.0)
    close(s["small"]["vs_baseline"]["delta_cost_usd"], -0.01)
    assert s["small"]["vs_baseline"]["pays_off"] is False

    # size: 1000 successful tasks a month (workload.volume); everything per success
    out = cli(tmp_path, scenario_c(), "size", "--json")
    v = out["variants"]
    close(v["std"]["api_usd_per_month"], 22.5)
    close(v["small"]["api_usd_per_month"], 1000 * 0.0125 / share)
    close(v["fast"]["api_usd_per_month"], 135.0)
    close(v["std"]["wait_hours_per_month"], 1000 * 21 / 3600)
    close(v["small"]["wait_hours_per_month"], 1000 * 22 / share / 3600)
    close(v["small"]["hours_saved_per_month"], 1000 * (21 - 22 / share) / 3600)
    assert v["small"]["pays_off_when"] == "never"  # per success: slower and dearer
    assert v["small"]["pays_off"] is False
    assert v["fast"]["pays_off_when"] == "above"
    close(v["fast"]["break_even_usd_per_hour"], 45.0)
    assert v["fast"]["pays_off"] is False  # 40 < 45
    close(v["fast"]["net_usd_per_month"], 1000 * 9 / 3600 * 40 - 112.5)  # 100 − 112.5 = −12.5
    close(v["small"]["total_usd_per_run"], 0.0125 / share + 40 * 22 / share / 3600)
    # per success the envelope is std [0, 45], fast [45, ∞) (per run it would start with small [0, 36])
    env = out["cheapest_by_value_of_time"]
    assert [r["variant"] for r in env] == ["std", "fast"]
    close(env[0]["to_usd_per_hour"], 45.0)
    close(env[1]["from_usd_per_hour"], 45.0)


def test_per_success_frontier_in_a_sweep_and_in_the_variant_table(tmp_path):
    # sweep rows stay per run with pareto_mean/pareto_p95 per run, plus pareto_per_success:
    #   per run (wall, cost): std (21, 0.0225), small (22, 0.0125), fast (12, 0.135): all on the frontier;
    #   per success: std (21, 0.0225), small (≈88, ≈0.05), fast (12, 0.135): small dominated by std.
    out = sweep_json(tmp_path, scenario_c(runs=1000), "value_of_time.usd_per_hour=40")
    rows = {r["variant"]: r for r in out["rows"]}
    assert all(r["pareto_mean"] and r["pareto_p95"] for r in rows.values())
    assert {v for v, r in rows.items() if r["pareto_per_success"]} == {"std", "fast"}
    close(rows["small"]["cost_per_success_usd"], 0.0125 / rows["small"]["success_share"])
    close(rows["small"]["time_to_success_s"], 22 / rows["small"]["success_share"])
    close(rows["small"]["delta_time_s"], 1.0)  # Δ stays per run (per success it would be ≈ 88 − 21)
    close(rows["small"]["delta_cost_usd"], -0.01)

    # Python (documented in docs/tradeoffs.md): variant_table(res) is per success; p95 stays the per-run p95 of
    # completed runs: small (p95 22 s, ≈ $0.05) is beaten by std (21 s, $0.0225) on both bases.
    vt = variant_table(agentsim.simulate(parse(scenario_c(runs=1000))))
    assert vt.attrs["basis"] == "per success"
    close(vt.loc["small", "cost_mean_usd"], 0.0125 / vt.loc["small", "success_share"])
    close(vt.loc["small", "cost_per_run_usd"], 0.0125)
    assert vt["pareto_mean"].to_dict() == {"std": True, "small": False, "fast": True}
    assert vt["pareto_p95"].to_dict() == {"std": True, "small": False, "fast": True}


# --------------------------------------------------------------------------- the optimiser's choice
#
# Scenario D: plan (500 tokens) then act (1000 tokens), both on big; units plan and act, five tiers each
# (standard, clone, fast, batch, priority): 25 assignments, all simulated (≤ 4096: exhaustive).
#   plan: standard = clone 7 s $0.0075, fast 4 s $0.045, batch 12 s $0.00375, priority 7 s $0.015
#   act:  standard = clone 12 s $0.015, fast 6 s $0.09,  batch 22 s $0.0075,  priority 12 s $0.03
# (plan, act) -> (wall s, cost $):  std/std 19 0.0225   std/fast 13 0.0975   fast/std 16 0.06   fast/fast 10 0.135
#   std/batch 29 0.015   batch/std 24 0.01875   batch/batch 34 0.01125   batch/fast 18 0.09375   fast/batch 26 0.0525
#   priority variants: same time as standard, dearer.
def scenario_d() -> dict:
    return {
        "name": "audit-d",
        "seed": 3,
        "runs": 3,
        "models": {"big": copy.deepcopy(BIG)},
        "agent": {
            "steps": [
                {"call": {"name": "plan", "model": "big", "output": 500}},
                {"call": {"name": "act", "model": "big", "output": 1000}},
            ]
        },
    }


def test_optimize_budget_picks_the_fastest_feasible_and_breaks_ties_by_fewer_changes(tmp_path):
    # Budget $0.10 per run, minimise mean: the fastest at most $0.10 is std/fast (13 s, $0.0975) — clone/fast
    # ties on time and cost and loses on changes (2 against 1); fast/fast (10 s) costs $0.135.
    out = cli(tmp_path, scenario_d(), "optimize", "--budget-usd-per-run", "0.1", "--metric", "mean", "--json")
    assert out["method"] == "exhaustive" and out["evaluated"] == 25 and out["feasible"] is True
    assert out["choices"] == {"plan": "standard", "act": "fast"}
    assert out["variant"] == {"speed": {"act": "fast"}}
    close(out["chosen"]["wall_mean_s"], 13.0)
    close(out["chosen"]["cost_mean_usd"], 0.0975)
    close(out["baseline"]["wall_mean_s"], 19.0)
    # The frontier of all 25 (mean, cost): batch/batch (34, 0.01125), {std,clone}/batch (29, 0.015),
    # batch/{std,clone} (24, 0.01875), the four standard/clone mixes (19, 0.0225), fast/{std,clone} (16, 0.06),
    # {std,clone}/fast (13, 0.0975), fast/fast (10, 0.135, over budget). Identical points are all on it;
    # fast/batch (26, 0.0525), batch/fast (18, 0.09375) and every priority one are dominated.
    points = sorted((round(r["time_s"], 9), round(r["cost_mean_usd"], 9)) for r in out["frontier"])
    want = [(10.0, 0.135), (13.0, 0.0975), (13.0, 0.0975), (16.0, 0.06), (16.0, 0.06)]
    want += [(19.0, 0.0225)] * 4 + [(24.0, 0.01875)] * 2 + [(29.0, 0.015)] * 2 + [(34.0, 0.01125)]
    assert points == want
    assert [r["feasible"] for r in out["frontier"] if r["time_s"] == 10.0] == [False]
    assert [r["assignment"] for r in out["frontier"] if r["chosen"]] == ["plan=standard, act=fast"]


def test_optimize_time_limits_are_inclusive_and_pick_the_cheapest(tmp_path):
    # --max-mean 19: minimise cost with mean ≤ 19 s: std/std (exactly 19 s, $0.0225) — the cheaper ones are all
    # slower (24, 29, 34 s); clone mixes tie and lose on changes.
    out = cli(tmp_path, scenario_d(), "optimize", "--max-mean", "19", "--json")
    assert out["choices"] == {"plan": "standard", "act": "standard"} and out["feasible"] is True
    # --max-p95 16: cheapest with p95 ≤ 16 s: fast/std (16 s, $0.06) beats std/fast (13 s, $0.0975).
    out = cli(tmp_path, scenario_d(), "optimize", "--max-p95", "16", "--json")
    assert out["choices"] == {"plan": "fast", "act": "standard"}
    close(out["chosen"]["cost_mean_usd"], 0.06)


def test_optimize_ranks_per_success(tmp_path):
    # Scenario C with --models small: units plan and loop, each on big (standard, clone, fast, batch, priority) or
    # small ("small" on the loop moves act: 5 iterations and fail p 0.75): 36 assignments. A plan call on small
    # takes 3 s and costs $0.001; the loop on big batch 2 × 12 = 24 s, $0.0075. Per success (share s ≈ 0.25 when
    # the loop is on small, else 1), --max-mean 25 bounds the time to success:
    #   small/standard  3 + 14 = 17 s, 0.001 + 0.015 = $0.016   <- cheapest within 25 s (small/clone ties: 2 changes)
    #   std/std 21 s $0.0225; fast/std 18 s $0.06; small/fast 11 s $0.091; small/batch 27 s $0.0085 (too slow)
    #   loop on small: 18/s ≈ 72 s (plan small), 22/s ≈ 88 s, 19/s ≈ 76 s: all over 25 s.
    # Without failures (p 0) the loop on small is cheapest per run: small/small 3 + 15 = 18 s, $0.006.
    out = cli(tmp_path, scenario_c(runs=500), "optimize", "--max-mean", "25", "--models", "small", "--json")
    assert out["choices"] == {"plan": "small", "loop": "standard"}
    assert out["chosen"]["basis"] == "per success"
    close(out["chosen"]["cost_mean_usd"], 0.016)
    close(out["chosen"]["cost_per_run_usd"], 0.016)
    close(out["chosen"]["wall_mean_s"], 17.0)
    assert out["chosen"]["success_share"] == 1.0
    # frontier per success: small/batch (27, 0.0085), small/standard = small/clone (17, 0.016), small/fast
    # (11, 0.091); every other assignment is beaten by one of them (the loop on small by small/standard).
    assert sorted(r["assignment"] for r in out["frontier"]) == [
        f"plan=small, loop={t}" for t in ("batch", "clone", "fast", "standard")
    ]

    out = cli(tmp_path, scenario_c(p_small=0, runs=50), "optimize", "--max-mean", "25", "--models", "small", "--json")
    assert out["choices"] == {"plan": "small", "loop": "small"}
    close(out["chosen"]["cost_mean_usd"], 0.006)
    close(out["chosen"]["wall_mean_s"], 18.0)


def test_optimize_p95_and_mean_objectives_choose_differently_on_random_paths(tmp_path):
    # Scenario B without its variants; units quick and deep (--steps), six tiers each (standard, clone, fast,
    # batch, priority, promo): 36 assignments. Per tier, quick: standard = clone 10 s $0.012, promo 6 s $0.012,
    # fast 5.2 s $0.072, batch 2 + 16 = 18 s $0.006, priority 10 s $0.024; deep: standard = clone 32 s $0.045,
    # promo 2 + 15 = 17 s $0.045, fast 14 s $0.27, batch 62 s $0.0225, priority 32 s $0.09. With q ≈ 0.1 deep runs,
    # mean = quick (1 − q) + deep q (cost alike) and p95 = the deep time unless quick is slower (batch: 18 s).
    # Budget $0.05 per run:
    #   p95: the least p95 is 14 s (deep fast, quick ≤ 14 s); among those std/clone/promo quick cost the same
    #     $0.012(1−q) + $0.27q ≈ $0.037 (quick fast: ≈ $0.091, over) -> ties: lower cost, then fewer changes:
    #     {quick: standard, deep: fast}.
    #   mean: promo/fast 6(1−q) + 14q ≈ 6.8 s at ≈ $0.037; the faster fast/promo (≈ 6.3 s) costs ≈ $0.069, over.
    doc = scenario_b()
    del doc["variants"]
    base = ("--budget-usd-per-run", "0.05", "--steps", "quick,deep", "--runs", "1000", "--json")
    out = cli(tmp_path, doc, "optimize", "--metric", "p95", *base)
    assert out["evaluated"] == 36 and out["metric"] == "p95"
    assert out["choices"] == {"quick": "standard", "deep": "fast"}
    close(out["chosen"]["wall_p95_s"], 14.0)
    q = (out["baseline"]["wall_mean_s"] - 10) / 22  # share of deep runs, the same in every candidate
    assert abs(q - 0.1) < 4 * math.sqrt(0.09 / 1000)
    close(out["chosen"]["cost_mean_usd"], 0.012 * (1 - q) + 0.27 * q)
    # p95 frontier: batch/batch (62 s, cheapest), batch/promo (18 s), {standard, clone, promo}/promo (17 s),
    # {standard, clone, promo}/fast (14 s); everything else is beaten by one of them.
    got = sorted(r["assignment"] for r in out["frontier"])
    want = ["quick=batch, deep=batch", "quick=batch, deep=promo"]
    want += [f"quick={t}, deep={d}" for t in ("standard", "clone", "promo") for d in ("promo", "fast")]
    assert got == sorted(want)

    out = cli(tmp_path, doc, "optimize", "--metric", "mean", *base)
    assert out["choices"] == {"quick": "promo", "deep": "fast"}
    close(out["chosen"]["wall_mean_s"], 6 * (1 - q) + 14 * q)
    # mean frontier: promo dominates standard/clone/priority on both calls; of the 9 promo/fast/batch pairs
    # fast/batch (≈ 10.7 s, $0.067) and batch/fast (≈ 17.6 s, $0.032) are beaten by promo/promo (≈ 7.1 s, $0.015).
    got = sorted(r["assignment"] for r in out["frontier"])
    pairs = [(a, b) for a in ("promo", "fast", "batch") for b in ("promo", "fast", "batch")]
    want = [f"quick={a}, deep={b}" for a, b in pairs if (a, b) not in {("fast", "batch"), ("batch", "fast")}]
    assert got == sorted(want)


def test_greedy_misses_the_optimum_the_documented_way(tmp_path):
    # docs/tradeoffs.md: greedy by ratio "can miss the optimum when one big upgrade beats two cheaper ones that
    # do not both fit". plan (500 tokens) and act (10,000 input tokens at $1/Mtok, 1000 output), tiers standard
    # and fast (input too at 6×, and no prefill term: the input buys no time).
    #   base 7 + 12 = 19 s, 0.0075 + 0.015 + 0.01 = $0.0325
    #   plan fast: saves 3 s for +$0.0375 (80 s/$)  -> 16 s, $0.07
    #   act fast:  saves 6 s for +$0.075 + $0.05 = $0.125 (48 s/$) -> 13 s, $0.1575
    #   both: 10 s, $0.195
    # Budget $0.16: greedy takes plan (best ratio), then act no longer fits: 16 s. Exhaustive: act alone, 13 s.
    doc = scenario_d()
    doc["models"]["big"] = {
        "price": {"input_mtok": 1, "output_mtok": 15},
        "ttft": 2,
        "output_tps": 100,
        "speeds": {"fast": {"output_tps_x": 2.5, "price_x": 6}},
    }
    doc["agent"]["steps"][1]["call"]["input"] = 10000
    args = ("--budget-usd-per-run", "0.16", "--metric", "mean", "--json")
    greedy = cli(tmp_path, doc, "optimize", *args, "--method", "greedy")
    assert greedy["choices"] == {"plan": "fast", "act": "standard"}
    assert [r["move"] for r in greedy["frontier"]] == ["start", "plan: standard → fast"]
    close(greedy["chosen"]["wall_mean_s"], 16.0)
    close(greedy["chosen"]["cost_mean_usd"], 0.07)
    exhaustive = cli(tmp_path, doc, "optimize", *args, "--method", "exhaustive")
    assert exhaustive["choices"] == {"plan": "standard", "act": "fast"}
    close(exhaustive["chosen"]["wall_mean_s"], 13.0)
    close(exhaustive["chosen"]["cost_mean_usd"], 0.1575)
    close(exhaustive["baseline"]["cost_mean_usd"], 0.0325)


def test_a_variant_that_never_succeeds_is_never_on_a_frontier_nor_cheapest(tmp_path):
    # Scenario C with fail p 1 on small: every small run fails at the end, so it completes none (k = 0): no
    # mean wall time or cost, no cost per success ("null when k = 0"). It is on no frontier ("points with a
    # missing value never are"), its break-even is "unknown", and the envelope is that of std and fast: std up to
    # 45 $/h, fast above.
    doc = scenario_c(p_small=1.0, runs=200)
    s = cli(tmp_path, doc, "run", "--json")["variants"]["small"]
    assert s["wall_time_s"]["mean"] is None and s["success"]["share"] == 0.0
    assert s["success"]["cost_per_success_usd"] is None and s["vs_baseline"]["pays_off"] is None
    rows = {r["variant"]: r for r in sweep_json(tmp_path, doc, "seed=5")["rows"]}
    assert [rows["small"][k] for k in ("pareto_mean", "pareto_p95", "pareto_per_success")] == [False] * 3
    assert all(rows[v][k] for v in ("std", "fast") for k in ("pareto_mean", "pareto_p95", "pareto_per_success"))
    out = cli(tmp_path, doc, "size", "--json")
    assert out["variants"]["small"]["pays_off_when"] == "unknown"
    assert out["variants"]["small"]["api_usd_per_month"] is None
    assert [r["variant"] for r in out["cheapest_by_value_of_time"]] == ["std", "fast"]
    close(out["cheapest_by_value_of_time"][0]["to_usd_per_hour"], 45.0)


def test_a_swept_value_of_time_decides_pays_off_at_each_grid_point(tmp_path):
    # Scenario A swept over V = 40, 45, 50 $/h: the fast-tier variants (V* = 45) pay off at 45 (a tie) and 50,
    # not at 40; batch (pays off at or below 2.7) and dear (never) at none; the baseline's is null.
    out = sweep_json(tmp_path, scenario_a(), "value_of_time.usd_per_hour=40:50:5")
    got = {(r["value_of_time.usd_per_hour"], r["variant"]): r["pays_off"] for r in out["rows"]}
    for v in (40, 45, 50):
        assert got[(v, "std")] is None
        for name in ("fast", "fast-act", "twin"):
            assert got[(v, name)] is (v >= 45), (v, name)
        assert got[(v, "batch")] is False and got[(v, "dear")] is False


def test_two_axis_grid_deltas_against_each_points_own_baseline(tmp_path):
    # Scenario A over output_tps 50, 100 (first axis, varies slowest) × V 20, 30 $/h. At 50 tokens/s a standard
    # call of 500 tokens takes 2 + 10 = 12 s, fast 2 + 500/125 = 6 s, batch 2 + 20 = 22 s, prices unchanged:
    #   tps 50:  std (24, 0.015), fast (12, 0.09): Δt −12, Δc 0.075 -> 22.5 $/h (pays at 30, not at 20);
    #            batch (44, 0.0075): below 3600 × 0.0075 / 20 = 1.35 $/h -> pays at neither.
    #   tps 100: std (14, 0.015), fast (8, 0.09): 45 $/h -> pays at neither.
    # Every tps-50 point costs the same as its tps-100 twin and is slower: none is on the frontier.
    out = cli(
        tmp_path,
        scenario_a(),
        "sweep", "--set", "models.big.output_tps=50,100", "--set", "value_of_time.usd_per_hour=20,30",
        "--json", "--workers", "1",
    )  # fmt: skip
    rows = {(r["models.big.output_tps"], r["value_of_time.usd_per_hour"], r["variant"]): r for r in out["rows"]}
    assert [(r["models.big.output_tps"], r["value_of_time.usd_per_hour"]) for r in out["rows"][::6]] == [
        (50, 20),
        (50, 30),
        (100, 20),
        (100, 30),
    ]
    for v in (20, 30):
        fast50, fast100 = rows[(50, v, "fast")], rows[(100, v, "fast")]
        close(fast50["delta_time_s"], -12.0)
        close(fast50["usd_per_hour_saved"], 22.5)
        assert fast50["pays_off"] is (v >= 22.5)
        close(fast100["usd_per_hour_saved"], 45.0)
        assert fast100["pays_off"] is False
        close(rows[(50, v, "batch")]["delta_time_s"], 20.0)
        assert rows[(50, v, "batch")]["pays_off"] is False
    assert not any(r["pareto_mean"] for k, r in rows.items() if k[0] == 50)
    want = {"std", "fast", "fast-act", "batch", "twin"}
    assert {k[2] for k, r in rows.items() if k[0] == 100 and r["pareto_mean"]} == want


def test_optimize_max_p95_bounds_completed_runs_and_ranks_cost_per_success(tmp_path):
    # docs/tradeoffs.md: per success, "--max-p95 still bounds the p95 wall time of completed runs" while the
    # cost minimised is the cost per success. Scenario C (runs are constant, so p95 = the run's wall time):
    #   p95 ≤ 21 s: std/std 21 s $0.0225; small/standard 17 s $0.016; small/small 3 + 15 = 18 s, $0.006 per run
    #   but ≈ $0.006 / 0.25 = $0.024 per success; std/small 22 s and anything with batch (≥ 24 s) are out.
    # Per success the cheapest is small/standard; without failures (p 0) it is small/small.
    out = cli(tmp_path, scenario_c(runs=500), "optimize", "--max-p95", "21", "--models", "small", "--json")
    assert out["metric"] == "p95" and out["choices"] == {"plan": "small", "loop": "standard"}
    close(out["chosen"]["wall_p95_s"], 17.0)
    close(out["chosen"]["cost_mean_usd"], 0.016)
    out = cli(tmp_path, scenario_c(p_small=0, runs=50), "optimize", "--max-p95", "21", "--models", "small", "--json")
    assert out["choices"] == {"plan": "small", "loop": "small"}
    close(out["chosen"]["cost_mean_usd"], 0.006)


def test_optimize_units_left_as_is_and_an_upgrade_off_the_critical_path(tmp_path):
    # plan (big, 500: 7 s $0.0075), an unnamed big call (500: 7 s $0.0075), tidy (small, 500: 3 s $0.001, one
    # tier only), then parallel long (big, 2000: 22 s $0.03) and short (big, 100: 3 s $0.0015).
    # Base 7 + 7 + 3 + 22 = 39 s, $0.0475. Units: plan, long, short (named, with two tiers); the unnamed call
    # and tidy (a single option) are left as is. Moves: plan fast −3 s +$0.0375; long fast (2 + 8 = 10 s)
    # −12 s +$0.15; short fast +$0.0075 and 0 s (short never decides the end).
    # Budget $0.20, minimise mean: long fast -> 27 s, $0.1975 (adding plan: $0.235, over).
    doc = {
        "name": "audit-h",
        "seed": 3,
        "runs": 3,
        "models": {
            "big": {**copy.deepcopy(BIG), "speeds": {"fast": {"output_tps_x": 2.5, "price_x": 6}}},
            "small": {"price": {"input_mtok": 0, "output_mtok": 2}, "ttft": 1, "output_tps": 250},
        },
        "agent": {
            "steps": [
                {"call": {"name": "plan", "model": "big", "output": 500}},
                {"call": {"model": "big", "output": 500}},
                {"call": {"name": "tidy", "model": "small", "output": 500}},
                {
                    "parallel": [
                        {"call": {"name": "long", "model": "big", "output": 2000}},
                        {"call": {"name": "short", "model": "big", "output": 100}},
                    ]
                },
            ]
        },
    }
    out = cli(tmp_path, doc, "optimize", "--budget-usd-per-run", "0.2", "--metric", "mean", "--json")
    assert out["choices"] == {"plan": "standard", "long": "fast", "short": "standard"}
    assert out["evaluated"] == 8 and len(out["left_as_is"]) == 2 and "tidy" in out["left_as_is"]
    close(out["baseline"]["wall_mean_s"], 39.0)
    close(out["baseline"]["cost_mean_usd"], 0.0475)
    close(out["chosen"]["wall_mean_s"], 27.0)
    close(out["chosen"]["cost_mean_usd"], 0.1975)

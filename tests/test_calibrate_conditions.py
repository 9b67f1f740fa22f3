"""calibrate estimates provider conditions (the shared, per-window part) from requests spread over time.

Synthetic measurements with a known between-window spread: window i has a log-TTFT effect a_i ~ N(0, sb_t²)
and a log-speed effect b_i ~ N(0, sb_s²), every request its own spread on top. Tolerances are four standard
errors of the ANOVA estimator of sigma_between² (chi-square spread of the mean squares, true values).
"""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.measure.calibrate import calibrate, profile_document, write_profile
from agentsim.measure.conditions_fit import anova, fit_conditions
from agentsim.model.profiles import load_profile
from agentsim.plan.validation import parse
from agentsim.traces.measurements import Rows, measurement_table

Z90 = 1.2815515655446004
T0 = 1_772_445_600.0  # 2026-03-02 10:00 UTC
T0_DATE = dt.date(2026, 3, 2)


def windowed_rows(k=60, n=10, sb_t=0.25, sw_t=0.3, sb_s=0.2, sw_s=0.15, window=600.0, seed=5):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(k):
        a, b = sb_t * rng.standard_normal(), sb_s * rng.standard_normal()
        for _ in range(n):
            start = T0 + i * window + rng.uniform(0, window)
            inp = float(rng.integers(500, 8000))
            ttft = 0.5 * math.exp(a + sw_t * rng.standard_normal()) + inp / 20000
            tps = 80 * math.exp(b + sw_s * rng.standard_normal())
            out = float(rng.integers(200, 400))
            rows.append(
                {
                    "start_s": start,
                    "ttft_s": ttft,
                    "latency_s": ttft + out / tps,
                    "input_tokens": inp,
                    "output_tokens": out,
                    "ok": True,
                }
            )
    return rows


def se_var_between(k, n, sb, sw):
    """Standard error of the method-of-moments sigma_between² for k windows of n requests (true values)."""
    ems = sw**2 + n * sb**2
    return math.sqrt((2 * ems**2 / (k - 1) + 2 * sw**4 / (k * n - k)) / n**2)


def test_anova_by_hand():
    # two windows: y = [0, 2] and [4, 6]; means 1 and 5, grand 3. MSB = (2*4 + 2*4) / 1 = 16,
    # MSW = (1 + 1 + 1 + 1) / 2 = 2, n0 = (4 - 8/4) / 1 = 2, so sigma_b² = (16 - 2) / 2 = 7, sigma_w² = 2.
    a = anova(np.array([0.0, 2.0, 4.0, 6.0]), np.array([1, 1, 2, 2]))
    assert (a.msb, a.msw, a.n0) == (16.0, 2.0, 2.0)
    assert a.sigma_between == pytest.approx(math.sqrt(7)) and a.sigma_within == pytest.approx(math.sqrt(2))
    # the BLUP shrinks each window's deviation by n sb² / (n sb² + sw²) = 14 / 16
    assert a.effects.tolist() == pytest.approx([-2 * 14 / 16] * 2 + [2 * 14 / 16] * 2)
    # more spread within than between: clamped at 0, nothing to take out
    b = anova(np.array([0.0, 4.0, 1.0, 3.0]), np.array([1, 1, 2, 2]))
    assert b.sigma_between == 0.0 and not b.effects.any()


def test_recovers_the_between_window_spread(tmp_path):
    k, n, sb_t, sw_t, sb_s, sw_s = 150, 10, 0.25, 0.3, 0.2, 0.15
    cal = calibrate(measurement_table(Rows(windowed_rows(k, n, sb_t, sw_t, sb_s, sw_s), "csv", "x.csv")))
    c = cal.conditions
    assert c is not None and c.block is not None
    assert c.ttft.windows == k and c.ttft.requests == k * n
    assert abs(c.ttft.sigma_between**2 - sb_t**2) <= 4 * se_var_between(k, n, sb_t, sw_t)
    assert abs(c.tps.sigma_between**2 - sb_s**2) <= 4 * se_var_between(k, n, sb_s, sw_s)
    # the per-request fits hold the spread within a window only (not counted twice): sd of a log-sd
    # estimate ~ sigma / sqrt(2 N); Huber's scale keeps ~72% efficiency
    assert abs(cal.ttft.sigma - sw_t) <= 4 * sw_t / math.sqrt(2 * k * n * 0.72)
    assert cal.tps.family == "lognormal"
    assert abs(cal.tps.params["sigma"] - sw_s) <= 4 * sw_s / math.sqrt(2 * k * n)
    # written to the profile: lognormal factors of median 1 and p90 exp(1.2816 sigma_between)
    doc = profile_document(cal, "p", ["x.csv"], ["csv"], T0_DATE, "given")
    ttft_x = doc["conditions"]["ttft_x"]["lognormal"]
    assert ttft_x["median"] == 1 and ttft_x["p90"] == pytest.approx(math.exp(Z90 * c.ttft.sigma_between), rel=1e-3)
    assert "150 10-minute windows (1500 requests)" in doc["notes"]
    assert doc["fit"]["conditions"]["window_s"] == 600
    # a scenario model that names the profile gets its conditions
    write_profile(tmp_path / "p.yaml", doc)
    m = {"price": {"input_mtok": 1, "output_mtok": 1}, "profile": "p.yaml"}
    sc = parse(
        {"name": "t", "models": {"m": m}, "agent": {"steps": [{"call": {"output": 10}}]}}, source=tmp_path / "s.yaml"
    )
    assert sc.models["m"].conditions.ttft_x.lognormal.p90 == ttft_x["p90"]


def test_no_shared_spread_gives_a_small_estimate():
    k, n = 40, 10
    cal = calibrate(measurement_table(Rows(windowed_rows(k, n, sb_t=0.0, sb_s=0.0, seed=8), "csv", "x.csv")))
    c = cal.conditions
    assert c.ttft.sigma_between**2 <= 4 * se_var_between(k, n, 0.0, 0.3)
    assert c.tps.sigma_between**2 <= 4 * se_var_between(k, n, 0.0, 0.15)


def test_too_few_windows_writes_no_block_and_says_why():
    rows = windowed_rows(k=3, n=40)
    cal = calibrate(measurement_table(Rows(rows, "csv", "x.csv")))
    assert cal.conditions.block is None and "3 10-minute windows" in cal.conditions.note
    doc = profile_document(cal, "p", ["x.csv"], ["csv"], T0_DATE, "given")
    assert "conditions" not in doc and "conditions" not in doc["fit"]
    # without send times there is nothing to window
    for r in rows:
        del r["start_s"]
    cal = calibrate(measurement_table(Rows(rows, "csv", "x.csv")))
    assert cal.conditions.block is None and "no send times" in cal.conditions.note


def test_cli_window_option(tmp_path):
    import csv

    rows = windowed_rows(k=12, n=8)
    data = tmp_path / "m.csv"
    with data.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    runner = CliRunner()
    out = tmp_path / "p.yaml"
    res = runner.invoke(app, ["calibrate", str(data), "-o", str(out), "--window", "5m"])
    assert res.exit_code == 0, res.output
    doc = yaml.safe_load(out.read_text())
    assert doc["fit"]["conditions"]["window_s"] == 300 and "conditions" in doc
    assert "5-minute windows" in res.output
    prof, _ = load_profile(str(out))
    assert prof.conditions is not None
    for bad in ("0", "-5m", "ten", "nanm", "inf"):
        res = runner.invoke(app, ["calibrate", str(data), "-o", str(out), "--window", bad])
        assert res.exit_code == 2 and "--window" in res.output, bad


def test_a_part_without_shared_spread_is_left_as_measured():
    # every window holds the same five speeds (window means equal: MSB = 0, sigma_between = 0), while the
    # base TTFT moves by window: only the TTFT is centred
    k = 8
    start = T0 + np.repeat(np.arange(k), 5) * 600.0 + 1.0
    tps = np.tile([60.0, 70.0, 80.0, 90.0, 100.0], k)
    base = np.repeat(np.exp(np.linspace(-0.5, 0.5, k)), 5) * np.tile([0.9, 0.95, 1.0, 1.05, 1.1], k)
    c = fit_conditions(start, base, tps)
    assert c.tps.sigma_between == 0.0 and c.block["output_tps_x"] == 1
    assert np.array_equal(c.centred_tps(tps), tps)
    assert c.ttft.sigma_between > 0 and isinstance(c.block["ttft_x"], dict)
    centred = c.centred_ttft(base + 0.2, np.full(base.size, 0.2))
    assert np.ptp(np.log(centred - 0.2).reshape(k, 5).mean(axis=1)) < np.ptp(np.log(base).reshape(k, 5).mean(axis=1))

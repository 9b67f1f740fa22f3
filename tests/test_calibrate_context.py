"""calibrate (and fit) find speed by context size when the measured requests span context sizes.

Synthetic requests with a known curve: output speed ``52 x f(n) x lognormal(0, 0.1)`` with
``f(n) = 1 - 0.18 n / 740,000`` (TraceLab's Claude: ~52 tok/s falling to ~43 at ~740k input tokens),
context sizes log-uniform over 2k-740k. A bin's median speed has a log standard error of about
``1.2533 x 0.1 / sqrt(m)`` (m requests); the tolerance on a factor (a ratio of two medians) is four
times ``sqrt(2)`` of that.
"""

from __future__ import annotations

import datetime as dt
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.measure.calibrate import calibrate, profile_document, write_profile
from agentsim.measure.context_fit import MIN_SPAN, fit_context_speed
from agentsim.model.profiles import load_profile
from agentsim.traces.measurements import Rows, measurement_table

T0 = 1_772_445_600.0


def f_true(n):
    return 1.0 - 0.18 * np.asarray(n, dtype=float) / 740000.0


def rows(n_req=600, lo=2000, hi=740000, effect=True, seed=3):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n_req):
        n = float(round(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
        tps = 52.0 * (float(f_true(n)) if effect else 1.0) * math.exp(0.1 * rng.standard_normal())
        ttft = 1.5 * math.exp(0.3 * rng.standard_normal())
        o = float(rng.integers(300, 600))
        out.append(
            {"start_s": T0 + 5 * i, "ttft_s": ttft, "latency_s": ttft + o / tps, "input_tokens": n, "output_tokens": o}
        )
    return out


def table(**kw):
    return measurement_table(Rows([{**r, "ok": True} for r in rows(**kw)], "csv", "x.csv"))


def test_calibrate_recovers_the_speed_curve_and_the_smallest_contexts_speed():
    cal = calibrate(table())
    block = cal.context.block
    assert block is not None and "ttft_x" not in block  # TTFT does not change with context here
    knots, factors = np.array(block["tokens"], dtype=float), np.array(block["output_tps_x"])
    assert factors[0] == 1.0 and np.all(np.diff(factors) <= 0) and np.all(np.diff(knots) > 0)
    for b, f, k in zip(cal.context.bins, factors, knots, strict=True):
        tol = 4 * math.sqrt(2) * 1.2533 * 0.1 / math.sqrt(min(b["requests"], cal.context.bins[0]["requests"]))
        assert abs(math.log(f / (f_true(k) / f_true(knots[0])))) <= tol + 5e-3  # + rounding to 3 digits
    assert factors[-1] < 0.9  # the last bin (~500k tokens) is clearly slower
    # the profile's speed is the smallest context's: 52 x f(first knot) (median of a lognormal of sd 0.1)
    assert abs(math.log(cal.tps.median / (52 * f_true(knots[0])))) <= 4 * 1.2533 * 0.1 / math.sqrt(600)


def test_the_written_profile_carries_the_curve_and_simulates_with_it(tmp_path):
    cal = calibrate(table())
    doc = profile_document(cal, "ctx", ["x.csv"], ["csv"], dt.date(2026, 3, 2), "given")
    assert doc["context_speed"] == cal.context.block
    assert doc["fit"]["context_speed"]["bins"][0]["requests"] >= 10 and "Speed by context size" in doc["notes"]
    p = write_profile(tmp_path / "ctx.yaml", doc)
    prof, _ = load_profile(str(p))
    assert prof.context_speed.tokens == cal.context.block["tokens"]


def test_requests_without_a_context_effect_or_span_leave_the_profile_alone():
    flat = calibrate(table(effect=False))
    assert flat.context.block is None and "no clear change" in flat.context.note
    doc = profile_document(flat, "flat", ["x.csv"], ["csv"], dt.date(2026, 3, 2), "given")
    assert "context_speed" not in doc and "context_speed" not in doc["fit"]
    narrow = calibrate(table(lo=10000, hi=30000))  # a span of 3x: not fitted at all
    assert (
        narrow.context.block is None and not narrow.context.bins and f"less than {MIN_SPAN:g}x" in narrow.context.note
    )


def test_the_ttft_residual_curve_is_fitted_when_it_changes():
    # TraceLab's Codex: residual TTFT 1.5 s at 12k tokens rising to 2.9 s at 185k (linear in between here)
    rng = np.random.default_rng(8)
    n = np.exp(rng.uniform(math.log(12000), math.log(185000), 800))
    g = 1.5 + (2.9 - 1.5) * (n - 12000) / (185000 - 12000)
    base = g * np.exp(0.2 * rng.standard_normal(n.size))
    tps = 60 * np.exp(0.1 * rng.standard_normal(n.size))  # no speed effect
    fit = fit_context_speed(n, tps, base)
    assert fit.block is not None and "output_tps_x" not in fit.block
    knots, factors = np.array(fit.block["tokens"], dtype=float), np.array(fit.block["ttft_x"])
    g_at = 1.5 + 1.4 * (knots - 12000) / 173000
    m = min(b["requests"] for b in fit.bins)
    tol = 4 * math.sqrt(2) * 1.2533 * 0.2 / math.sqrt(m) + 5e-3
    assert np.all(np.abs(np.log(factors / (g_at / g_at[0]))) <= tol)
    assert np.all(np.diff(factors) >= 0)
    # normalised to the smallest context: the base TTFTs no longer grow with context
    again = fit_context_speed(n, tps, fit.normalised_base(n, base))
    assert again.block is None


def test_pool_adjacent_violators_by_hand():
    from agentsim.measure.context_fit import _pav

    # 1, 3, 2 (weights 1, 1, 2) made non-decreasing: 3 and 2 pool to (3 + 2 x 2) / 3 = 7/3
    assert _pav(np.array([1.0, 3.0, 2.0]), np.array([1.0, 1.0, 2.0]), False).tolist() == pytest.approx(
        [1, 7 / 3, 7 / 3]
    )
    assert _pav(np.array([5.0, 6.0, 4.0]), np.array([1.0, 1.0, 1.0]), True).tolist() == pytest.approx([5.5, 5.5, 4])


def test_calibrate_says_what_it_found(tmp_path):
    import csv

    p = tmp_path / "m.csv"
    with p.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["ttft_s", "latency_s", "input_tokens", "output_tokens"])
        w.writeheader()
        for r in rows():
            w.writerow({k: r[k] for k in w.fieldnames})
    out = tmp_path / "p.yaml"
    res = CliRunner().invoke(app, ["calibrate", str(p), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "speed by context size: output_tps_x [1.0" in res.output.replace("\n", " ")
    assert "context_speed:" in out.read_text()


# --------------------------------------------------------------------------- agentsim fit: the same rule


def _calls(n_calls=6000, seed=4):
    rng = np.random.default_rng(seed)
    n = np.exp(rng.uniform(math.log(5000), math.log(600000), n_calls))
    out = np.maximum(1, np.round(300 * np.exp(0.8 * rng.standard_normal(n_calls))))
    ttft = 1.2 * np.exp(0.4 * rng.standard_normal(n_calls))
    tps = 52 * f_true(n) * np.exp(0.15 * rng.standard_normal(n_calls))
    return n, out, ttft, ttft + out / tps


def test_fit_speeds_with_recorded_ttft_finds_the_curve():
    from agentsim.fit.speeds import fit_speeds

    n, out, ttft, dur = _calls()
    f = fit_speeds(dur, out, ttft, n)
    block = f.context.block
    assert block is not None and "ttft_x" not in block and block["output_tps_x"][-1] < 0.9
    # the lognormal's median is the smallest context's speed, not the mixture's (4 standard errors of a median)
    assert abs(math.log(f.tps_median / (52 * f_true(block["tokens"][0])))) <= 4 * 1.2533 * 0.15 / math.sqrt(len(n))
    assert fit_speeds(dur, out, ttft).context is None  # without the inputs: as before


def test_fit_speeds_from_durations_only_finds_the_curve():
    from agentsim.fit.speeds import fit_speeds

    n, out, _, dur = _calls()
    f = fit_speeds(dur, out, [None] * len(n), n)
    block = f.context.block
    assert block is not None and block["output_tps_x"][-1] < 0.92
    assert "scaled to the smallest context" in f.method
    # speed median as at the smallest context: the bound of the durations-only test in test_fit.py (3%)
    assert f.tps_median == pytest.approx(52 * f_true(block["tokens"][0]), rel=0.03)


def test_agentsim_fit_writes_context_speed_into_the_profile(tmp_path):
    import yaml

    import session_synth as S

    agent = S.Agent(
        models=(S.Model("claude-opus-4-6", 1.0, S.LogN(1.5, 3.0), S.LogN(52, 62), context_x=(0.6, 300000)),),
        steps=(20, 40),
        output=S.LogN(600, 1500),
        growth=S.LogN(6000, 15000),
        system=10000,
        tools=((0,), (1.0,)),
        tool_latency=S.Mix(0.0, S.LogN(1, 2), S.LogN(1, 2)),
    )
    S.write_otel(S.population(agent, 40, seed=2), tmp_path / "sessions.jsonl")
    out = tmp_path / "fitted" / "a.yaml"
    r = CliRunner().invoke(app, ["fit", str(tmp_path / "sessions.jsonl"), "-o", str(out), "--sim-runs", "200"])
    assert r.exit_code == 0, r.output
    prof = yaml.safe_load((out.parent / "a.claude-opus-4-6.profile.yaml").read_text())
    block = prof["context_speed"]
    assert block["output_tps_x"][0] == 1.0 and block["output_tps_x"][-1] < 0.85
    assert prof["fit"]["context_speed"]["bins"] and "Speed by context size" in prof["notes"]
    assert CliRunner().invoke(app, ["validate", str(out)]).exit_code == 0

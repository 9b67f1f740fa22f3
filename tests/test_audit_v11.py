"""An independent audit of contract v1.1's non-streaming semantics (DESIGN.md §3.2), the way an outside
check sees them: small scenario files written in the contract's vocabulary, run through
``agentsim run FILE --json`` / ``--out DIR`` on both engines, and every expected number worked out by hand
(in the comment above it) from the contract and docs/concepts.md / docs/metrics.md -- never from
agentsim's own output.

Covered: provider ``conditions`` (one draw per run and model, shared by its calls, on every speed tier,
not on the prefill term), model-dependent probabilities (``{by: CALL, MODEL: p}``) in ``continue_p`` and
``fail.p`` with a ``fail`` inside the loop, the ``success`` block (share, cost per success, time to
success), ``pipeline`` timing, costs and context, a ``fail`` inside a pipeline, and the variant
comparison (Δtime, Δcost, USD per hour saved, pays off) on such scenarios.

Statistical checks use fixed seeds and tolerances of 4 Monte-Carlo standard errors.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from agentsim.cli.main import app

ENGINES = ["des", "fastpath"]


def run_cli(tmp_path: Path, text: str, engine: str, name: str = "s") -> tuple[dict, pd.DataFrame]:
    """``agentsim run FILE --engine E --out DIR``: the summary.json document and the runs table."""
    f = tmp_path / f"{name}.yaml"
    f.write_text(text)
    out = tmp_path / f"{name}-{engine}"
    r = CliRunner().invoke(app, ["run", str(f), "--engine", engine, "--out", str(out)])
    assert r.exit_code == 0, r.output
    return json.loads((out / "summary.json").read_text()), pd.read_parquet(out / "runs.parquet")


def run_json(tmp_path: Path, text: str, engine: str, name: str = "s") -> dict:
    """``agentsim run FILE --engine E --json``: the summary.json document printed on stdout."""
    f = tmp_path / f"{name}.yaml"
    f.write_text(text)
    r = CliRunner().invoke(app, ["run", str(f), "--engine", engine, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def same_but_engine(a: dict, b: dict) -> None:
    a, b = dict(a), dict(b)
    a.pop("engine"), b.pop("engine")
    assert a == b


def ratio_se(num: np.ndarray, den: np.ndarray) -> float:
    """Standard error of sum(num) / sum(den) (delta method)."""
    r = num.sum() / den.sum()
    return float(np.std(num - r * den, ddof=1) / (np.mean(den) * math.sqrt(len(num))))


# --------------------------------------------------------------------------- provider conditions

CONDITIONS = """
name: audit-conditions
seed: 21
runs: 4000
models:
  m:
    price: {input_mtok: 1, output_mtok: 10}
    ttft: 1
    output_tps: 100
    conditions:
      ttft_x: {choice: {values: [1, 3], p: [0.25, 0.75]}}
      output_tps_x: {choice: {values: [1, 0.5], p: [0.5, 0.5]}}
  n:
    price: {input_mtok: 1, output_mtok: 10}
    ttft: 1
    output_tps: 100
    conditions: {ttft_x: {choice: {values: [1, 1.5], p: [0.5, 0.5]}}}
workflows:
  helper:
    steps:
      - call: {name: b, model: m, output: 100}
agent:
  steps:
    - call: {name: a, model: m, output: 100}
    - subagent: {name: sub, workflow: helper}
    - call: {name: c, model: n, output: 100}
variants:
  baseline: {}
  all-m: {model: {c: m}}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_condition_factors_are_drawn_once_per_run_and_model(tmp_path, engine):
    # Calls a and b (b inside a subagent) on m share the run's A (ttft_x) and B (output_tps_x); c on n
    # has its own A'.
    # Each call: TTFT = 1 x factor, decode = 100 / (100 x B) = 1/B (n has no speed factor: 1 s).
    #   W = (A + 1/B) + (A + 1/B) + (A' + 1) = 2A + 2/B + A' + 1
    # 2A in {2, 6} (p 0.25, 0.75), 2/B in {2, 4} (1/2 each), A' + 1 in {2, 2.5} (1/2 each): eight sums,
    #   {6, 6.5, 8, 8.5} with p 0.25/4 = 0.0625 each and {10, 10.5, 12, 12.5} with p 0.75/4 = 0.1875 each.
    # Per-call draws would also give e.g. 8.0 from A1 = 1, A2 = 3 ... and 7, 9, 11 (1/B1 + 1/B2 = 3): the
    # support being exactly these eight values shows one draw per run and model (and A, B, A' independent).
    # E[W] = 2 x 2.5 + 2 x 1.5 + 1.25 + 1 = 10.25.
    summary, all_runs = run_cli(tmp_path, CONDITIONS, engine)
    runs = all_runs[all_runs["variant"] == "baseline"]
    n = len(runs)
    wall = runs["wall_time_s"].to_numpy()
    expected = {6.0: 0.0625, 6.5: 0.0625, 8.0: 0.0625, 8.5: 0.0625, 10.0: 0.1875, 10.5: 0.1875, 12.0: 0.1875}
    expected[12.5] = 0.1875
    values, counts = np.unique(wall, return_counts=True)
    assert set(values.tolist()) == set(expected)
    for v, k in zip(values.tolist(), counts.tolist(), strict=True):
        p = expected[v]
        assert abs(k / n - p) < 4 * math.sqrt(p * (1 - p) / n), (v, k / n, p)
    w = summary["variants"]["baseline"]["wall_time_s"]
    assert abs(w["mean"] - 10.25) < 4 * wall.std(ddof=1) / math.sqrt(n)
    # p99 is the top value; the cost does not depend on the factors: 3 x 100 x 10 / 1e6
    assert w["p99"] == 12.5
    assert summary["variants"]["baseline"]["cost_usd"]["mean"] == pytest.approx(0.003, rel=1e-12)
    # Variant all-m moves c onto m: all three calls share A and B, W = 3A + 3/B in {6, 9, 12, 15} with
    # p {1/8, 1/8, 3/8, 3/8}, mean 3 x 2.5 + 3 x 1.5 = 12. Common random numbers: it is the same run's A and
    # B, so W_all-m tells (A, 1/B) and W_baseline - 2A - 2/B - 1 = A' must be 1 or 1.5.
    other = all_runs[all_runs["variant"] == "all-m"].set_index("run")["wall_time_s"]
    w3 = other.to_numpy()
    assert set(np.unique(w3).tolist()) == {6.0, 9.0, 12.0, 15.0}
    assert abs(w3.mean() - 12) < 4 * w3.std(ddof=1) / math.sqrt(n)
    a = np.where(other >= 12, 3.0, 1.0)
    inv_b = (other.to_numpy() - 3 * a) / 3
    a_prime = runs.set_index("run").loc[other.index, "wall_time_s"].to_numpy() - 2 * a - 2 * inv_b - 1
    assert set(np.round(a_prime, 12).tolist()) == {1.0, 1.5}


TIERS = """
name: audit-conditions-tiers
seed: 5
runs: 4000
models:
  m:
    price: {input_mtok: 1, output_mtok: 10}
    ttft: 2
    prefill_tps: 1000
    output_tps: 50
    speeds:
      fast: {output_tps_x: 2, ttft_x: 0.5, price_x: 3}
    conditions:
      ttft_x: {choice: {values: [1, 2], p: [0.5, 0.5]}}
      output_tps_x: {choice: {values: [1, 0.5], p: [0.5, 0.5]}}
agent:
  steps:
    - call: {name: a, input: 1000, output: 100}
    - call: {name: b, input: 1000, output: 100}
variants:
  standard: {}
  fast: {speed: {m: fast}}
value_of_time: {usd_per_hour: 10}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_conditions_times_speed_tier_and_the_variant_comparison(tmp_path, engine):
    # Per call (no context: input = 1000 new tokens, all prefilled at 1000 tok/s = 1 s, never scaled):
    #   standard: TTFT = 2 x A + 1,        decode = 100 / (50 B)  = 2/B
    #   fast:     TTFT = 2 x 0.5 x A + 1,  decode = 100 / (100 B) = 1/B
    # so per run W_std = 4A + 2 + 4/B and W_fast = 2A + 2 + 2/B, A and 1/B each in {1, 2} with p 1/2.
    #   E[W_std] = 6 + 2 + 6 = 14, E[W_fast] = 3 + 2 + 3 = 8; W_std in {10 (1/4), 14 (1/2), 18 (1/4)}.
    # Exactly, run by run: W_std - 2 = 2 (W_fast - 2), so mean_std = 2 mean_fast - 2.
    # Cost per call: 1000 x 1 + 100 x 10 = 2000 / 1e6 = 0.002 USD; a run 0.004; fast x 3 = 0.012.
    # Δtime = -(2A + 2/B) per run (common random numbers): E = -6, sd = sqrt(4/4 + 4/4) = sqrt(2).
    # Δcost = 0.008; USD per hour saved = 0.008 / (6 / 3600) = 4.8 <= value of time 10: pays off.
    summary = run_json(tmp_path, TIERS, engine)
    n = 4000
    std, fast = summary["variants"]["standard"], summary["variants"]["fast"]
    ws, wf = std["wall_time_s"], fast["wall_time_s"]
    assert ws["mean"] == pytest.approx(2 * wf["mean"] - 2, rel=1e-12)
    sd_std = math.sqrt(16 * 0.25 + 16 * 0.25)  # Var(4A) + Var(4/B)
    assert abs(ws["mean"] - 14) < 4 * sd_std / math.sqrt(n)
    assert (ws["p50"], ws["p95"], ws["p99"]) == (14.0, 18.0, 18.0)
    assert (wf["p50"], wf["p95"]) == (8.0, 10.0)
    assert std["cost_usd"]["mean"] == pytest.approx(0.004, rel=1e-12)
    assert fast["cost_usd"]["mean"] == pytest.approx(0.012, rel=1e-12)
    # breakdown: the standard TTFT slot is 2 (2A + 1) = 4A + 2, mean 8; decode 4/B, mean 6
    assert std["breakdown_s"]["ttft"] == pytest.approx(ws["mean"] - std["breakdown_s"]["decode"], rel=1e-12)
    assert abs(std["breakdown_s"]["ttft"] - 8) < 4 * 2 * 0.5 * 2 / math.sqrt(n)
    # per call: mean TTFT 2 E[A] + 1 = 4 (fast: E[A] + 1 = 2.5), mean speed 50 E[B] = 37.5 (fast 75)
    se_a = 0.5 / math.sqrt(n)  # the two calls of a run share A and B: n independent values
    assert abs(std["per_call"]["ttft_s"]["mean"] - 4) < 4 * 2 * se_a
    assert abs(fast["per_call"]["ttft_s"]["mean"] - 2.5) < 4 * se_a
    assert abs(std["per_call"]["tps"]["mean"] - 37.5) < 4 * 50 * 0.25 / math.sqrt(n)
    assert fast["per_call"]["tps"]["mean"] == pytest.approx(2 * std["per_call"]["tps"]["mean"], rel=1e-12)
    # the comparison, exactly from the two means, and against the closed form
    vs = fast["vs_baseline"]
    assert vs["delta_time_s"] == pytest.approx(wf["mean"] - ws["mean"], rel=1e-12)
    assert vs["delta_time_s"] == pytest.approx(-(wf["mean"] - 2), rel=1e-12)
    assert abs(vs["delta_time_s"] + 6) < 4 * math.sqrt(2) / math.sqrt(n)
    assert vs["delta_cost_usd"] == pytest.approx(0.008, rel=1e-9)
    assert vs["usd_per_hour_saved"] == pytest.approx(vs["delta_cost_usd"] * 3600 / -vs["delta_time_s"], rel=1e-12)
    # delta method: d(28.8 / x) / dx = 28.8 / 36 at x = 6
    assert abs(vs["usd_per_hour_saved"] - 4.8) < 4 * (28.8 / 36) * math.sqrt(2) / math.sqrt(n)
    assert vs["pays_off"] is True
    assert fast["total_cost_usd"]["mean"] == pytest.approx(0.012 + 10 * wf["mean"] / 3600, rel=1e-12)
    assert std["vs_baseline"]["delta_time_s"] == 0 and std["vs_baseline"]["pays_off"] is None
    same_but_engine(summary, run_json(tmp_path, TIERS, "des" if engine == "fastpath" else "fastpath"))


# --------------------------------------------------------------------------- fail steps and success

CHAIN = """
name: audit-chain-fail
seed: 8
runs: 4000
models:
  opus: {price: {input_mtok: 5, output_mtok: 25}, ttft: 1, output_tps: 50}
  haiku: {price: {input_mtok: 1, output_mtok: 5}, ttft: 0.5, output_tps: 200}
agent:
  steps:
    - call: {name: a, model: opus, output: 100}
    - fail: {name: wrong, p: 0.25}
    - call: {name: b, model: haiku, output: 100}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_chain_call_fail_call_success_block(tmp_path, engine):
    # a: 1 + 100/50 = 3 s, 100 x 25 / 1e6 = 0.0025 USD; b: 0.5 + 100/200 = 1 s, 100 x 5 / 1e6 = 0.0005 USD.
    # A failed run stops at the fail step: 3 s, 0.0025. A successful one: 4 s, 0.003 (share 0.75).
    # docs/metrics.md: cost_per_success = Σ cost of all runs / k, time_to_success = Σ wall of all runs / k.
    # With share s: cps = (0.0025 + s x 0.0005) / s and tts = (3 + s x 1) / s = 3/s + 1, i.e. for s = 3/4
    #   cps = 0.002875 / 0.75 = 0.0038333 = E[cost] / share, tts = 4 + 1 = 5 s.
    # wall_time_s and cost_usd describe the completed runs only: 4 s and 0.003 USD exactly.
    summary, runs = run_cli(tmp_path, CHAIN, engine)
    n = len(runs)
    v = summary["variants"]["baseline"]
    s = v["success"]
    k = int((runs["status"] == 0).sum())
    assert s["share"] == pytest.approx(k / n, rel=1e-12)
    assert abs(s["share"] - 0.75) < 4 * math.sqrt(0.75 * 0.25 / n)
    assert s["cost_per_success_usd"] == pytest.approx((0.0025 + s["share"] * 0.0005) / s["share"], rel=1e-9)
    assert s["time_to_success_s"] == pytest.approx(3 / s["share"] + 1, rel=1e-12)
    se_share = math.sqrt(0.75 * 0.25 / n)
    assert abs(s["cost_per_success_usd"] - 0.0025 / 0.75 - 0.0005) < 4 * 0.0025 / 0.75**2 * se_share
    assert abs(s["time_to_success_s"] - 5.0) < 4 * 3 / 0.75**2 * se_share
    assert v["wall_time_s"]["mean"] == 4.0 and v["wall_time_s"]["p50"] == 4.0
    assert v["cost_usd"]["mean"] == pytest.approx(0.003, rel=1e-12)
    assert v["calls"]["mean"] == 2.0
    # the printed --json document is the file --out writes
    same_but_engine(summary, run_json(tmp_path, CHAIN, engine))


LOOP = """
name: audit-loop-fail
seed: 13
runs: 20000
models:
  opus: {price: {input_mtok: 5, output_mtok: 25}, ttft: 1, output_tps: 50}
  haiku: {price: {input_mtok: 1, output_mtok: 5}, ttft: 0.5, output_tps: 200}
agent:
  steps:
    - repeat:
        name: loop
        continue_p: {by: act, opus: 0.6, haiku: 0.8}
        max: 4
        steps:
          - call: {name: act, model: opus, output: 100}
          - fail: {name: broke, p: {by: act, opus: 0.1, haiku: 0.3}}
variants:
  opus: {}
  haiku: {model: {act: haiku}}
  haiku-loop: {model: {loop: haiku}}
  haiku-all: {model: {opus: haiku}}
value_of_time: {usd_per_hour: 50}
"""

# per variant: continue_p, fail p, seconds and USD of one act call (opus 3 s / 0.0025, haiku 1 s / 0.0005)
LOOP_PARAMS = {"opus": (0.6, 0.1, 3.0, 0.0025), "haiku": (0.8, 0.3, 1.0, 0.0005)}


def loop_closed_form(p: float, q: float, cap: int = 4) -> dict:
    """Iterations K: P(K = k) = p^(k-1) (1 - p) for k < cap, P(K = cap) = p^(cap-1); the fail step after
    each iteration draws independently, so iteration i runs iff K >= i and iterations 1..i-1 passed:
    P(calls >= i) = (p (1 - q))^(i-1). The run succeeds iff all K iterations pass: P = Σ P(K=k) (1-q)^k."""
    pk = [p ** (k - 1) * (1 - p) for k in range(1, cap)] + [p ** (cap - 1)]
    succ = sum(pk[k - 1] * (1 - q) ** k for k in range(1, cap + 1))
    k_ok = sum(k * pk[k - 1] * (1 - q) ** k for k in range(1, cap + 1)) / succ  # E[K | success]
    calls = sum((p * (1 - q)) ** (i - 1) for i in range(1, cap + 1))  # E[calls made], failed runs included
    return {"share": succ, "calls_ok": k_ok, "calls_all": calls}


@pytest.mark.parametrize("engine", ENGINES)
def test_fail_inside_a_model_dependent_loop_closed_form(tmp_path, engine):
    # opus: p = 0.6, q = 0.1 -> share = 0.4 x 0.9 + 0.24 x 0.81 + 0.144 x 0.729 + 0.216 x 0.6561 = 0.8011
    # haiku: p = 0.8, q = 0.3 -> share = 0.2 x 0.7 + 0.16 x 0.49 + 0.128 x 0.343 + 0.512 x 0.2401 = 0.3853
    # E[calls] = Σ_{i<4} (p (1-q))^i; every call of a variant costs c and lasts T, the fail step takes no time:
    #   cost_per_success = c E[calls] / share, time_to_success = T E[calls] / share (ratios of sums);
    #   wall_time_s.mean (completed runs) = T E[K | success], calls.mean = E[K | success].
    summary, runs = run_cli(tmp_path, LOOP, engine)
    variants = summary["variants"]
    for name, (p, q, T, c) in LOOP_PARAMS.items():
        cf = loop_closed_form(p, q)
        rv = runs[runs["variant"] == name]
        n = len(rv)
        ok = (rv["status"] == 0).to_numpy()
        calls = rv["calls"].to_numpy()
        assert calls.min() >= 1 and calls.max() <= 4
        # each run is its calls: wall = T x calls, cost = c x calls, failed runs included
        assert np.array_equal(rv["wall_time_s"].to_numpy(), T * calls)
        assert np.allclose(rv["cost_usd"].to_numpy(), c * calls, rtol=1e-12)
        v = variants[name]
        s = v["success"]
        assert abs(s["share"] - cf["share"]) < 4 * math.sqrt(cf["share"] * (1 - cf["share"]) / n), name
        assert abs(calls.mean() - cf["calls_all"]) < 4 * calls.std(ddof=1) / math.sqrt(n), name
        cps = c * cf["calls_all"] / cf["share"]
        assert abs(s["cost_per_success_usd"] - cps) < 4 * ratio_se(c * calls, ok.astype(float)), name
        tts = T * cf["calls_all"] / cf["share"]
        assert abs(s["time_to_success_s"] - tts) < 4 * ratio_se(T * calls, ok.astype(float)), name
        k_ok = calls[ok]
        assert abs(v["calls"]["mean"] - cf["calls_ok"]) < 4 * k_ok.std(ddof=1) / math.sqrt(len(k_ok)), name
        assert v["wall_time_s"]["mean"] == pytest.approx(T * v["calls"]["mean"], rel=1e-12)
        assert v["cost_usd"]["mean"] == pytest.approx(c * v["calls"]["mean"], rel=1e-12)
    # the comparison is over completed runs' means: haiku (1 s a call) is faster and cheaper: always pays off
    o, h = variants["opus"], variants["haiku"]
    vs = h["vs_baseline"]
    assert vs["delta_time_s"] == pytest.approx(h["wall_time_s"]["mean"] - o["wall_time_s"]["mean"], rel=1e-12)
    assert vs["delta_cost_usd"] == pytest.approx(h["cost_usd"]["mean"] - o["cost_usd"]["mean"], rel=1e-12)
    assert vs["delta_time_s"] < 0 and vs["delta_cost_usd"] < 0 and vs["pays_off"] is True
    assert vs["usd_per_hour_saved"] == pytest.approx(vs["delta_cost_usd"] * 3600 / -vs["delta_time_s"], rel=1e-12)
    # common random numbers: the same uniforms decide both variants; haiku's higher continue_p never runs
    # fewer iterations unless its higher fail p stopped it earlier -- so a haiku run that succeeded has
    # at least as many calls as the same opus run, whether that one succeeded or failed
    ro = runs[runs["variant"] == "opus"].set_index("run")
    rh = runs[runs["variant"] == "haiku"].set_index("run")
    both_ok = (ro["status"] == 0) & (rh["status"] == 0)
    assert np.all(rh.loc[both_ok, "calls"] >= ro.loc[both_ok, "calls"])
    hok = rh["status"] == 0
    assert np.all(rh.loc[hok, "calls"] >= ro.loc[hok, "calls"])
    # `by: act` looks at the model act runs on after the variant's overrides, however they name it: the
    # enclosing repeat's step name or the model's name give the very same variant as naming the call
    assert variants["haiku-loop"] == variants["haiku"] and variants["haiku-all"] == variants["haiku"]


CHOOSE = """
name: audit-choose-fail
seed: 29
runs: 8000
models:
  opus: {price: {input_mtok: 5, output_mtok: 25}, ttft: 1, output_tps: 50}
  haiku: {price: {input_mtok: 1, output_mtok: 5}, ttft: 0.5, output_tps: 200}
agent:
  steps:
    - call: {name: act, model: opus, output: 100}
    - choose:
        name: check
        options:
          - p: {by: act, opus: 0.2, haiku: 0.5}
            name: broken
            steps:
              - call: {name: fix, model: opus, output: 100}
              - fail: {name: still-broken, p: 0.5}
          - p: {by: act, opus: 0.8, haiku: 0.5}
            name: fine
variants:
  opus: {}
  haiku: {model: {act: haiku}}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_choose_option_by_model_leading_to_a_fail(tmp_path, engine):
    # act: opus 3 s / 0.0025 USD, haiku 1 s / 0.0005 (variant haiku moves only act); option "broken" with
    # probability r (opus 0.2, haiku 0.5) runs fix (opus: 3 s, 0.0025) then fails with p = 0.5.
    #   share = 1 - r/2: opus 0.9, haiku 0.75
    #   E[cost] = c_act + r x 0.0025, E[wall] = T_act + 3 r (the fail step takes no time)
    #   cost_per_success = E[cost] / share: opus 0.003 / 0.9 = 0.0033333, haiku 0.00175 / 0.75 = 0.0023333
    #   time_to_success = E[wall] / share: opus 3.6 / 0.9 = 4, haiku 2.5 / 0.75 = 3.3333
    #   completed runs: P(broken | success) = (r/2) / (1 - r/2): opus 1/9, haiku 1/3, so
    #   wall_time_s.mean = T_act + 3 x that: opus 3 + 1/3 = 3.3333, haiku 1 + 1 = 2.
    summary, runs = run_cli(tmp_path, CHOOSE, engine)
    for name, (r, t_act, c_act) in {"opus": (0.2, 3.0, 0.0025), "haiku": (0.5, 1.0, 0.0005)}.items():
        v = summary["variants"][name]
        rv = runs[runs["variant"] == name]
        n = len(rv)
        share = 1 - r / 2
        assert abs(v["success"]["share"] - share) < 4 * math.sqrt(share * (1 - share) / n), name
        ok = (rv["status"] == 0).to_numpy().astype(float)
        cost, wall = rv["cost_usd"].to_numpy(), rv["wall_time_s"].to_numpy()
        assert set(np.round(wall, 12).tolist()) == {t_act, t_act + 3}
        cps = (c_act + r * 0.0025) / share
        assert abs(v["success"]["cost_per_success_usd"] - cps) < 4 * ratio_se(cost, ok), name
        tts = (t_act + 3 * r) / share
        assert abs(v["success"]["time_to_success_s"] - tts) < 4 * ratio_se(wall, ok), name
        q = (r / 2) / (1 - r / 2)
        ok_wall = wall[ok == 1]
        assert abs(v["wall_time_s"]["mean"] - (t_act + 3 * q)) < 4 * ok_wall.std(ddof=1) / math.sqrt(len(ok_wall))


TIER_FAIL = """
name: audit-tier-fail
seed: 31
runs: 8000
models:
  opus:
    price: {input_mtok: 5, output_mtok: 25}
    ttft: 1
    output_tps: 50
    speeds:
      fast: {output_tps_x: 2, price_x: 2}
agent:
  steps:
    - call: {name: act, output: 100}
    - fail: {p: {by: act, opus: 0.1, opus@fast: 0.4}}
variants:
  standard: {}
  fast: {speed: {act: fast}}
value_of_time: {usd_per_hour: 9}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_fail_p_by_model_at_tier_and_the_comparison_of_completed_runs(tmp_path, engine):
    # standard: 1 + 100/50 = 3 s, 100 x 25 / 1e6 = 0.0025 USD, fails with p 0.1 (share 0.9);
    # fast: 1 + 100/100 = 2 s, 0.005 USD (price x 2), `opus@fast` before `opus`: p 0.4 (share 0.6).
    # Every run (failed or not) is one call: cost_per_success = c / share, time_to_success = T / share:
    #   standard 0.0025 / 0.9 = 0.0027778 and 3.3333 s; fast 0.005 / 0.6 = 0.0083333 and 3.3333 s.
    # The variant comparison is over completed runs' means, exactly: Δtime = 2 - 3 = -1 s,
    # Δcost = 0.0025, USD per hour saved = 0.0025 x 3600 = 9.0; value of time 9 >= 9: pays off (a tie).
    summary, runs = run_cli(tmp_path, TIER_FAIL, engine)
    n = 8000
    for name, (p, T, c) in {"standard": (0.1, 3.0, 0.0025), "fast": (0.4, 2.0, 0.005)}.items():
        v = summary["variants"][name]
        s = v["success"]
        assert abs(s["share"] - (1 - p)) < 4 * math.sqrt(p * (1 - p) / n), name
        assert s["cost_per_success_usd"] == pytest.approx(c / s["share"], rel=1e-9)
        assert s["time_to_success_s"] == pytest.approx(T / s["share"], rel=1e-12)
        se = math.sqrt(p * (1 - p) / n) / (1 - p) ** 2
        assert abs(s["time_to_success_s"] - T / (1 - p)) < 4 * T * se, name
        assert v["wall_time_s"]["mean"] == T and v["cost_usd"]["mean"] == pytest.approx(c, rel=1e-12)
    # common random numbers: the same uniform u fails a run when u < p, so the standard failures are a
    # subset of the fast ones
    fs = set(runs.loc[(runs["variant"] == "standard") & (runs["status"] == 1), "run"])
    ff = set(runs.loc[(runs["variant"] == "fast") & (runs["status"] == 1), "run"])
    assert fs < ff
    vs = summary["variants"]["fast"]["vs_baseline"]
    assert vs["delta_time_s"] == -1.0
    assert vs["delta_cost_usd"] == pytest.approx(0.0025, rel=1e-9)
    assert vs["usd_per_hour_saved"] == pytest.approx(9.0, rel=1e-9)
    assert vs["pays_off"] is True


# --------------------------------------------------------------------------- pipelines

PIPELINE = """
name: audit-pipeline
seed: 1
runs: 3
models:
  m:
    price: {input_mtok: 1, output_mtok: 10}
    ttft: 1
    output_tps: 10
  m-slow:
    price: {input_mtok: 1, output_mtok: 10}
    ttft: 1
    output_tps: 10
    conditions: {ttft_x: 2, output_tps_x: 0.5}
agent:
  context: {system: 100, grows: true}
  steps:
    - call: {name: a, model: m, output: 100, reasoning: 20}
    - pipeline:
        after: AFTER
        steps:
          - call: {name: p, model: m, output: 30}
          - tool: {name: t, latency: 5, output: 7}
    - call: {name: z, model: m, output: 10}
variants:
  normal: {}
  slow: {model: {m: m-slow}}
value_of_time: {usd_per_hour: 10}
"""

# Call a (normal): TTFT 1 s, then 20 reasoning tokens (2 s, invisible): a_1 = 3; end = 1 + 120/10 = 13;
#   a_i = 3 + (i - 1) x 10/99. Pipeline: call p (1 + 30/10 = 4 s), then a 5 s tool; then z (1 + 1 = 2 s).
# Slow (constant conditions: TTFT x 2, speed x 0.5): a_1 = 2 + 20/5 = 6, end = 2 + 120/5 = 26,
#   a_i = 6 + (i - 1) x 20/99; p lasts 2 + 30/5 = 8 s, z 2 + 10/5 = 4 s.
PIPELINE_CASES = {
    # a_34 = 3 + 33 x 10/99 = 19/3; pipeline ends 19/3 + 4 + 5 = 15.333 > 13; + z: 52/3 = 17.333.
    # slow: a_34 = 6 + 33 x 20/99 = 38/3; ends 38/3 + 8 + 5 = 25.667 < 26: the call decides; 26 + 4 = 30.
    "{tokens: 34}": (52 / 3, 30.0),
    # more tokens than the call has: starts at its end. 13 + 4 + 5 + 2 = 24; slow: 26 + 8 + 5 + 4 = 43.
    "{tokens: 150}": (24.0, 43.0),
    # default sentence of 20 tokens, no speech consumer: a_20 = 3 + 190/99 = 4.919; + 9 = 13.919 > 13;
    #   + 2 = 15.919. slow: a_20 = 6 + 380/99 = 9.838; + 13 = 22.838 < 26: 26 + 4 = 30.
    "first_sentence": (3 + 190 / 99 + 9 + 2, 30.0),
}


@pytest.mark.parametrize("after", list(PIPELINE_CASES))
@pytest.mark.parametrize("engine", ENGINES)
def test_pipeline_wall_time_cost_and_context_by_hand(tmp_path, engine, after):
    # Context: the pipeline's call p sees the context from before call a: 100 (system). At the join a's
    # output (100, not its reasoning) then p's (30) and the tool's (7): z sends 237.
    # Cost: a 100 x 1 + (100 + 20) x 10 = 1300; p 100 + 300 = 400; z 237 + 100 = 337 -> 0.002037 USD,
    # the same in both variants (same tokens, same prices); tokens.input = 437.
    normal, slow = PIPELINE_CASES[after]
    summary = run_json(tmp_path, PIPELINE.replace("AFTER", after), engine)
    v = summary["variants"]
    assert v["normal"]["wall_time_s"]["mean"] == pytest.approx(normal, rel=1e-12)
    assert v["slow"]["wall_time_s"]["mean"] == pytest.approx(slow, rel=1e-12)
    for name in v:
        assert v[name]["cost_usd"]["mean"] == pytest.approx(0.002037, rel=1e-12)
        t = v[name]["tokens"]
        assert (t["input"], t["output"], t["reasoning"]) == (437, 140, 20)
        b = v[name]["breakdown_s"]
        assert b["queue"] + b["ttft"] + b["decode"] + b["tool"] + b["wait"] == pytest.approx(
            v[name]["wall_time_s"]["mean"], rel=1e-12
        )
    # the slow variant is slower at the same cost: no USD per hour saved, never pays off
    vs = v["slow"]["vs_baseline"]
    assert vs["delta_time_s"] == pytest.approx(slow - normal, rel=1e-9)
    assert vs["delta_cost_usd"] == 0 and vs["usd_per_hour_saved"] is None and vs["pays_off"] is False


def test_pipeline_breakdown_follows_the_later_side(tmp_path):
    # after {tokens: 34}, normal: the pipeline side is critical: a's TTFT 1 and decode up to a_34 (19/3 - 1
    # = 16/3), p's TTFT 1 and decode 3, the tool 5, z's TTFT 1 and decode 1: ttft 3, decode 28/3, tool 5.
    # slow: the call side: a's TTFT 2 + decode 24, z's 2 + 2: ttft 4, decode 26, tool 0.
    summary = run_json(tmp_path, PIPELINE.replace("AFTER", "{tokens: 34}"), "fastpath")
    b = summary["variants"]["normal"]["breakdown_s"]
    assert (b["ttft"], b["decode"], b["tool"]) == pytest.approx((3.0, 28 / 3, 5.0), rel=1e-12)
    b = summary["variants"]["slow"]["breakdown_s"]
    assert (b["ttft"], b["decode"], b["tool"]) == pytest.approx((4.0, 26.0, 0.0), rel=1e-12)


PIPELINE_FAIL = """
name: audit-pipeline-fail
seed: 4
runs: RUNS
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10}
agent:
  steps:
    - call: {name: a, input: 1000, output: 100}
    - pipeline:
        after: {tokens: 10}
        steps:
          - tool: {name: t, latency: 1}
          - fail: {name: bad, p: PFAIL}
    - call: {name: z, output: 10}
"""


def test_fail_inside_a_pipeline_stops_the_call_it_runs_beside(tmp_path):
    # a: tokens from 1 s to 11 s, a_i = 1 + (i - 1) x 10/99. The pipeline starts at a_10 = 1 + 90/99 and its
    # 1 s tool ends at 2 + 90/99 = 2.909 s, where the fail step (p = 1) stops the run. "The run stops here":
    # like a failing parallel branch (docs/concepts.md#success), the running call a is cut there and billed
    # its input and the tokens generated by then, floor((2.909 - 1) x 10) = 19 (= #{i: a_i <= 2.909}):
    #   (1000 x 1 + 19 x 10) / 1e6 = 0.00119 USD, not the whole call's 0.002 (fixed: the DES let the
    #   call run on to 11 s, past the run's end, and billed all 100 tokens).
    text = PIPELINE_FAIL.replace("RUNS", "2").replace("PFAIL", "1")
    summary, runs = run_cli(tmp_path, text, "des")
    assert np.all(runs["status"] == 1)
    assert runs["wall_time_s"].to_numpy() == pytest.approx([2 + 90 / 99] * 2, rel=1e-12)
    assert runs["cost_usd"].to_numpy() == pytest.approx([0.00119] * 2, rel=1e-12)
    assert runs["output_tokens"].tolist() == [19, 19]
    assert summary["variants"]["baseline"]["success"] == {
        "share": 0.0,
        "cost_per_success_usd": None,
        "time_to_success_s": None,
    }
    calls = pd.read_parquet(tmp_path / "s-des" / "calls.parquet")
    assert calls["status"].tolist() == ["cancelled"] * 2
    assert calls["t_end"].to_numpy() == pytest.approx([2 + 90 / 99] * 2, rel=1e-12)
    # the fast path declines it and says why (exit 2)
    r = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml"), "--engine", "fastpath", "--json"])
    assert r.exit_code == 2 and "fail step" in r.stderr and "pipeline" in r.stderr


def test_fail_inside_a_pipeline_success_block(tmp_path):
    # p = 0.5: a failed run costs 0.00119 and lasts 2 + 90/99 s (above); a successful one runs a to 11 s
    # and z (no context: 0 input, 1 + 10/10 = 2 s, 100 x 10 / 1e6 = 0.0001): 13 s and 0.0021 USD.
    # With share s: cps = 0.0021 + (1 - s)/s x 0.00119; tts = 13 + (1 - s)/s x (2 + 90/99).
    n = 2000
    summary, runs = run_cli(tmp_path, PIPELINE_FAIL.replace("RUNS", str(n)).replace("PFAIL", "0.5"), "des")
    v = summary["variants"]["baseline"]
    s = v["success"]["share"]
    assert abs(s - 0.5) < 4 * math.sqrt(0.25 / n)
    assert v["success"]["cost_per_success_usd"] == pytest.approx(0.0021 + (1 - s) / s * 0.00119, rel=1e-9)
    assert v["success"]["time_to_success_s"] == pytest.approx(13 + (1 - s) / s * (2 + 90 / 99), rel=1e-12)
    assert v["wall_time_s"]["mean"] == pytest.approx(13.0, rel=1e-12)
    assert v["cost_usd"]["mean"] == pytest.approx(0.0021, rel=1e-12)
    assert set(runs.loc[runs["status"] == 1, "cost_usd"].round(12)) == {0.00119}


NESTED = """
name: audit-nested-pipelines
seed: 1
runs: 2
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10}
agent:
  steps:
    - repeat:
        times: 2
        steps:
          - call: {name: a, output: 100}
          - pipeline:
              after: {tokens: 34}
              steps:
                - call: {name: p, output: 50}
                - pipeline:
                    after: {tokens: 10}
                    steps:
                      - tool: {name: t, latency: 6}
    - parallel:
        - [{call: {name: q, output: 100}}, {pipeline: {after: {tokens: 1}, steps: [{wait: {name: w, latency: 12}}]}}]
        - {call: {name: r, output: 10}}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_nested_pipelines_in_a_repeat_and_a_parallel_branch(tmp_path, engine):
    # One iteration: a streams 100 tokens from 1 s to 11 s (a_34 = 1 + 330/99 = 13/3); p starts then: first
    # token 1 s later, 50 tokens over 5 s (p_10 = 13/3 + 1 + 9 x 5/49); the 6 s tool starts at p_10 and ends
    # at 13/3 + 1 + 45/49 + 6 = 12.252 > p's end (13/3 + 6 = 10.33) > a's end (11): iteration = 12.252 s.
    # parallel: q's first token at 1 s starts a 12 s wait (ends 13 > q's 11 > r's 2): 13 s.
    # wall = 2 x (13/3 + 7 + 45/49) + 13 = 37.503; breakdown: TTFT 2 x (1 + 1) + 1 = 5, decode
    # 2 x (10/3 + 45/49) = 8.503, tool 12, wait 12. Cost: output only, 2 x (100 + 50) + 100 + 10 = 410 tokens
    # x 10 / 1e6 = 0.0041 USD.
    v = run_json(tmp_path, NESTED, engine)["variants"]["baseline"]
    it = 13 / 3 + 7 + 45 / 49
    assert v["wall_time_s"]["mean"] == pytest.approx(2 * it + 13, rel=1e-12)
    b = v["breakdown_s"]
    assert (b["ttft"], b["decode"], b["tool"], b["wait"]) == pytest.approx(
        (5.0, 2 * (10 / 3 + 45 / 49), 12.0, 12.0), rel=1e-12
    )
    assert v["cost_usd"]["mean"] == pytest.approx(0.0041, rel=1e-12)


WORKLOAD = """
name: audit-conditions-workload
seed: 2
models:
  m:
    price: {input_mtok: 1, output_mtok: 10}
    ttft: 1
    output_tps: 100
    conditions: {ttft_x: {choice: {values: [1, 3], p: [0.25, 0.75]}}}
agent:
  steps:
    - call: {name: a, output: 100}
    - call: {name: b, output: 100}
workload:
  concurrent: 3
  duration: {hours: 2}
"""


def test_conditions_in_a_workload_one_draw_per_run(tmp_path):
    # Three agents back to back for 2 h (DES). Each run draws its own A: W = 2A + 2 in {4 (1/4), 8 (3/4)},
    # mean 2 + 2 x 2.5 = 7; never 6 (which calls of one run drawing A apart would give).
    summary, runs = run_cli(tmp_path, WORKLOAD, "des")
    wall = runs["wall_time_s"].to_numpy()
    n = len(wall)
    assert n > 3000
    assert set(np.round(wall, 9).tolist()) == {4.0, 8.0}
    share4 = float(np.mean(np.isclose(wall, 4.0)))
    assert abs(share4 - 0.25) < 4 * math.sqrt(0.25 * 0.75 / n)
    assert abs(summary["variants"]["baseline"]["wall_time_s"]["mean"] - 7) < 4 * wall.std(ddof=1) / math.sqrt(n)


EDGE = """
name: audit-edge-probabilities
seed: 2
runs: 200
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 100}
  n: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 100}
agent:
  steps:
    - repeat:
        continue_p: {by: a, m: CONT, n: 0.5}
        max: 5
        steps:
          - call: {name: a, model: m, output: 100}
    - fail: {p: {by: a, m: FAILP, n: 0.5}}
"""


@pytest.mark.parametrize(("p", "f", "calls", "share"), [(0, 0, 1, 1.0), (1, 0, 5, 1.0), (1, 1, 5, 0.0)])
@pytest.mark.parametrize("engine", ENGINES)
def test_certain_probabilities(tmp_path, engine, p, f, calls, share):
    # continue_p 0: one iteration; 1: always max = 5 (Σ_{k<5} 1^k = 5). fail p 0: every run succeeds; 1: none.
    # A call: 1 + 100/100 = 2 s, 100 x 10 / 1e6 = 0.001 USD.
    v = run_json(tmp_path, EDGE.replace("CONT", str(p)).replace("FAILP", str(f)), engine)["variants"]["baseline"]
    assert v["success"]["share"] == share
    if share:
        assert v["calls"]["mean"] == calls and v["wall_time_s"]["mean"] == 2.0 * calls
        assert v["success"]["time_to_success_s"] == 2.0 * calls
        assert v["success"]["cost_per_success_usd"] == pytest.approx(0.001 * calls, rel=1e-12)
    else:
        assert v["wall_time_s"]["mean"] is None and v["success"]["cost_per_success_usd"] is None


AFTER_PIPELINE = """
name: audit-fail-after-pipeline
seed: 6
runs: 4000
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10}
agent:
  steps:
    - call: {name: a, input: 1000, output: 100}
    - pipeline: {after: {tokens: 10}, steps: [{tool: {name: t, latency: 1}}]}
    - fail: {p: 0.5}
    - call: {name: z, output: 10}
"""


def test_fail_after_a_pipeline_on_both_engines(tmp_path):
    # a ends at 11 s (its tool, 1.909 -> 2.909 s, is long done): a run failing at the fail step lasts 11 s
    # and cost (1000 + 100 x 10) / 1e6 = 0.002; a successful one adds z (2 s, 0.0001): 13 s, 0.0021.
    # With share s: cps = 0.0021 + (1 - s)/s x 0.002, tts = 13 + (1 - s)/s x 11 (s ~ 1/2).
    des = run_json(tmp_path, AFTER_PIPELINE, "des")
    fast = run_json(tmp_path, AFTER_PIPELINE, "fastpath")
    same_but_engine(des, fast)
    v = des["variants"]["baseline"]
    s = v["success"]["share"]
    assert abs(s - 0.5) < 4 * math.sqrt(0.25 / 4000)
    assert v["success"]["cost_per_success_usd"] == pytest.approx(0.0021 + (1 - s) / s * 0.002, rel=1e-9)
    assert v["success"]["time_to_success_s"] == pytest.approx(13 + (1 - s) / s * 11, rel=1e-12)
    assert v["wall_time_s"]["mean"] == 13.0


REPEAT = """
name: audit-continue-p
seed: 19
runs: 10000
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 100}
  n: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 100}
agent:
  steps:
    - repeat:
        continue_p: {by: act, m: 0.5, n: 0.9}
        max: 6
        steps:
          - call: {name: act, model: m, output: 100}
variants:
  m: {}
  n: {model: {act: n}}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_continue_p_by_model_iterations_closed_form(tmp_path, engine):
    # K iterations: P(K >= k) = p^(k-1), capped at 6: E[K] = Σ_{k=0}^{5} p^k (1.96875 for 0.5, 4.68559 for
    # 0.9), E[K^2] = Σ_k k^2 P(K = k); a call is 2 s and 0.001 USD, so wall = 2K, cost = 0.001 K, and the
    # variant comparison is Δtime = 2 ΔE[K], Δcost = 0.001 ΔE[K] (slower: no USD per hour saved).
    v = run_json(tmp_path, REPEAT, engine)["variants"]
    n = 10000
    for name, p in (("m", 0.5), ("n", 0.9)):
        pk = [p ** (k - 1) * (1 - p) for k in range(1, 6)] + [p**5]
        ek = sum(p**k for k in range(6))
        assert ek == pytest.approx(sum(k * q for k, q in zip(range(1, 7), pk, strict=True)), rel=1e-12)
        sd = math.sqrt(sum(k * k * q for k, q in zip(range(1, 7), pk, strict=True)) - ek**2)
        assert abs(v[name]["calls"]["mean"] - ek) < 4 * sd / math.sqrt(n), name
        assert v[name]["wall_time_s"]["mean"] == pytest.approx(2 * v[name]["calls"]["mean"], rel=1e-12)
        assert v[name]["cost_usd"]["mean"] == pytest.approx(0.001 * v[name]["calls"]["mean"], rel=1e-9)
    vs = v["n"]["vs_baseline"]
    assert vs["delta_time_s"] == pytest.approx(2 * (v["n"]["calls"]["mean"] - v["m"]["calls"]["mean"]), rel=1e-9)
    assert vs["delta_time_s"] > 0 and vs["usd_per_hour_saved"] is None


ERRORS = """
name: audit-errors-and-fail
seed: 23
runs: 8000
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 100, error_rate: 0.5, retry: {max_attempts: 2}}
agent:
  steps:
    - call: {name: a, output: 100}
    - fail: {p: 0.2}
"""


def test_a_run_failed_by_error_rate_is_not_a_success(tmp_path):
    # The call fails both attempts with p 0.5^2 = 0.25 (an errored attempt is billed nothing); then the fail
    # step with p 0.2: share = 0.75 x 0.8 = 0.6. Cost: 0.001 for every run whose call went through (0.75):
    # cost_per_success = 0.75 x 0.001 / 0.6 = 0.00125. time_to_success = Σ wall of all runs / k (the
    # back-off is random, so checked against the runs table).
    summary, runs = run_cli(tmp_path, ERRORS, "des")
    n = len(runs)
    s = summary["variants"]["baseline"]["success"]
    assert abs(s["share"] - 0.6) < 4 * math.sqrt(0.24 / n)
    ok = (runs["status"] == 0).to_numpy().astype(float)
    cost, wall = runs["cost_usd"].to_numpy(), runs["wall_time_s"].to_numpy()
    assert set(np.round(cost, 12).tolist()) == {0.0, 0.001}
    assert abs(s["cost_per_success_usd"] - 0.00125) < 4 * ratio_se(cost, ok)
    assert s["time_to_success_s"] == pytest.approx(wall.sum() / ok.sum(), rel=1e-12)
    assert s["cost_per_success_usd"] == pytest.approx(cost.sum() / ok.sum(), rel=1e-12)


SUBAGENT = """
name: audit-fail-in-a-subagent
seed: 1
runs: 4000
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 100}
  n: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 50}
workflows:
  w:
    steps:
      - call: {name: inner, model: m, output: 100}
      - fail: {p: {by: inner, m: 0.5, n: 0.25}}
agent:
  steps:
    - call: {name: a, model: m, output: 100}
    - subagent: {workflow: w}
    - call: {name: z, model: m, output: 100}
variants:
  m: {}
  n: {model: {inner: n}}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_fail_inside_a_subagent_fails_the_run(tmp_path, engine):
    # Calls on m: 1 + 100/100 = 2 s, 0.001 USD; inner on n: 1 + 100/50 = 3 s, same price.
    # Variant m: a failed run stops after a and inner: 4 s, 0.002; a successful one adds z: 6 s, 0.003;
    #   share 0.5. Variant n (fail p looked up for the subagent's call on n: 0.25): 5 s / 0.002 failed,
    #   7 s / 0.003 successful, share 0.75. With share s: cps = 0.003 + (1 - s)/s x 0.002,
    #   tts = W_ok + (1 - s)/s x W_failed.
    v = run_json(tmp_path, SUBAGENT, engine)["variants"]
    n = 4000
    for name, (p, w_fail, w_ok) in {"m": (0.5, 4.0, 6.0), "n": (0.25, 5.0, 7.0)}.items():
        s = v[name]["success"]
        share = s["share"]
        assert abs(share - (1 - p)) < 4 * math.sqrt(p * (1 - p) / n), name
        assert s["cost_per_success_usd"] == pytest.approx(0.003 + (1 - share) / share * 0.002, rel=1e-9)
        assert s["time_to_success_s"] == pytest.approx(w_ok + (1 - share) / share * w_fail, rel=1e-12)
        assert v[name]["wall_time_s"]["mean"] == w_ok and v[name]["calls"]["mean"] == 3.0


TINY = """
name: audit-pipeline-tiny-answers
seed: 1
runs: 1
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 10}
agent:
  steps:
    - call: {name: a, output: 0, reasoning: 10}
    - pipeline: {after: {tokens: 5}, steps: [{tool: {name: t, latency: 3}}]}
    - call: {name: b, output: 1}
    - pipeline: {after: first_sentence, steps: [{tool: {name: u, latency: 3}}]}
"""


@pytest.mark.parametrize("engine", ENGINES)
def test_pipelines_after_answers_shorter_than_their_trigger(tmp_path, engine):
    # a: no visible token, TTFT 1 + 10 reasoning tokens at 10/s: ends at 2 s; with fewer tokens than asked
    # the pipeline starts at the call's end: t runs 2 -> 5 s. b (sent at 5 s): its one token arrives at
    # a_1 = 5 + 1 = 6 s, its end 6.1 s; its first sentence (20 tokens by default) is that token: u runs
    # 6 -> 9 s > 6.1 s. Wall 9 s; cost (10 + 1) x 10 / 1e6 = 0.00011 USD.
    v = run_json(tmp_path, TINY, engine)["variants"]["baseline"]
    assert v["wall_time_s"]["mean"] == pytest.approx(9.0, rel=1e-12)
    assert v["cost_usd"]["mean"] == pytest.approx(0.00011, rel=1e-12)
    assert v["breakdown_s"]["tool"] == pytest.approx(6.0, rel=1e-12)

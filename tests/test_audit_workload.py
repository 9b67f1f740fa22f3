"""An independent audit of the workload semantics (DESIGN.md §3 "shared limits and many agents", docs/limits.md,
docs/metrics.md, docs/tradeoffs.md), the way an outside check sees them: small scenario files in the contract's
vocabulary (`workload: {arrivals | concurrent, think_time, duration, warmup, volume, start}`, `limits:`), run
through ``agentsim run FILE --json`` / ``--out DIR`` and ``agentsim size FILE --json``, every expected number
worked out by hand (in the comment above it) from the docs -- never from agentsim's own output.

The rules used (docs/limits.md "Workloads", docs/metrics.md "summary.json"):

* counted runs start inside the closed window ``[warmup, duration]``; the simulation stops when the last counted
  run ends, or at ``2 x duration`` (counted runs still going then are *unfinished*, status 2);
* ``throughput_runs_per_hour`` = runs that completed and *ended* inside the window / window hours (a departure
  count: a warm-up run that ends inside the window is one of them);
* ``input/output_tokens_per_min`` = tokens of calls that *started* in the window / window minutes;
* a closed loop's agents all start at 0 and pause ``think_time`` after each run, before the next;
* an account's ``mean_in_flight`` is the time-weighted mean of requests in flight (admitted, not yet done).

Constant-time scenarios give exact timelines; the statistical ones (Poisson arrivals) use fixed seeds and
tolerances of 4 Monte-Carlo standard errors.
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


def _write(tmp_path: Path, text: str, name: str) -> Path:
    f = tmp_path / f"{name}.yaml"
    f.write_text(text, encoding="utf-8")
    return f


def run_json(tmp_path: Path, text: str, name: str = "s") -> dict:
    """``agentsim run FILE --json``: the summary.json document printed on stdout."""
    r = CliRunner().invoke(app, ["run", str(_write(tmp_path, text, name)), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def run_out(tmp_path: Path, text: str, name: str = "s") -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """``agentsim run FILE --out DIR``: summary.json, the runs table and the calls table."""
    out = tmp_path / f"{name}-out"
    r = CliRunner().invoke(app, ["run", str(_write(tmp_path, text, name)), "--out", str(out)])
    assert r.exit_code == 0, r.output
    summary = json.loads((out / "summary.json").read_text())
    return summary, pd.read_parquet(out / "runs.parquet"), pd.read_parquet(out / "calls.parquet")


def size_json(tmp_path: Path, text: str, *args: str, name: str = "s") -> dict:
    r = CliRunner().invoke(app, ["size", str(_write(tmp_path, text, name)), "--json", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


# --------------------------------------------------------------------------- closed loop, constant runs

CLOSED = """
name: audit-closed
seed: 1
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 2, output_tps: 100}
agent:
  steps:
    - call: {name: a, output: 500}
workload:
  concurrent: 3
  think_time: 1
  duration: {seconds: 100}
  warmup: {seconds: 20}
"""


def test_closed_loop_with_constant_runs_counts_exactly(tmp_path):
    # A run is one call: 2 + 500/100 = 7 s; then 1 s of thinking, so each of the 3 agents starts runs at 8k s.
    # Counted (start in [20, 100]): 24, 32, ..., 96 -> 10 per agent = 30 (warm-up runs at 0, 8, 16 left out).
    # The last counted runs end at 96 + 7 = 103: the simulation stops there. Started by then: 8k <= 103,
    # k = 0..12 -> 13 per agent = 39; nothing in flight (the next starts would be at 104).
    # Throughput: runs ending (8k + 7) in [20, 100]: 23..95 -> 10 per agent = 30, over 80 s = 30 x 45 = 1350/h.
    # Output tokens: calls started in the window, 30 x 500, over 80/60 min = 11250/min.
    # Every counted run: 7 s (TTFT 2, decode 5), 500 x 10 / 1e6 = 0.005 USD.
    s = run_json(tmp_path, CLOSED)
    assert s["engine"] == "des" and s["runs"] == 30
    v = s["variants"]["baseline"]
    w = v["workload"]
    assert w["window_s"] == [20.0, 100.0]
    assert w["simulated_until_s"] == 103.0
    assert (w["runs_started"], w["runs_counted"], w["runs_completed"]) == (39, 30, 30)
    assert (w["runs_failed"], w["runs_unfinished"], w["runs_in_flight_at_end"]) == (0, 0, 0)
    assert w["failed_share"] == 0.0
    assert w["throughput_runs_per_hour"] == pytest.approx(1350.0, rel=1e-12)
    assert w["output_tokens_per_min"] == pytest.approx(11250.0, rel=1e-12)
    assert w["input_tokens_per_min"] == 0.0
    assert v["wall_time_s"]["mean"] == 7.0 and v["wall_time_s"]["p99"] == 7.0
    assert (v["breakdown_s"]["ttft"], v["breakdown_s"]["decode"], v["breakdown_s"]["queue"]) == (2.0, 5.0, 0.0)
    assert v["cost_usd"]["mean"] == pytest.approx(0.005, rel=1e-12)


BOUNDARY = """
name: audit-window-edges
seed: 1
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: TTFT, output_tps: 100}
agent:
  steps:
    - call: {name: a, output: 0}
workload:
  concurrent: 3
  think_time: THINK
  duration: {seconds: 100}
  warmup: {seconds: 20}
"""


@pytest.mark.parametrize(("ttft", "think", "until", "ends_in_window"), [(5, 5, 105.0, 8), (10, 0, 110.0, 9)])
def test_runs_starting_exactly_at_warmup_and_at_duration_are_counted(tmp_path, ttft, think, until, ends_in_window):
    # Runs start every 10 s per agent (a 5 s call + 5 s thinking, or a 10 s call back to back): 0, 10, ..., 100.
    # The window [20, 100] is closed: 20, 30, ..., 100 -> 9 per agent = 27 counted, all of which complete (no
    # limits); the three started at exactly 100 end at 100 + ttft, where the simulation stops. Started: 0..100
    # -> 33. Throughput: runs ending (10k + ttft) in [20, 100]: 25..95 (8 per agent) or 20..100 (9 per agent).
    # (agentsim stopped at 100 here, before those three runs started or ran: reported as 3 unfinished runs of a
    # scenario without any limit, or, with no think time, not counted at all: 24.)
    text = BOUNDARY.replace("TTFT", str(ttft)).replace("THINK", str(think))
    s = run_json(tmp_path, text)
    assert s["runs"] == 27
    w = s["variants"]["baseline"]["workload"]
    assert (w["runs_started"], w["runs_counted"], w["runs_completed"], w["runs_unfinished"]) == (33, 27, 27, 0)
    assert w["simulated_until_s"] == until and w["failed_share"] == 0.0
    assert w["throughput_runs_per_hour"] == pytest.approx(3 * ends_in_window * 3600 / 80, rel=1e-12)
    assert s["variants"]["baseline"]["wall_time_s"]["mean"] == float(ttft)


UNFINISHED = """
name: audit-unfinished
seed: 1
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 50, output_tps: 1}
agent:
  steps:
    - call: {name: a, output: 200}
workload:
  concurrent: 2
  duration: {seconds: 100}
"""


def test_runs_still_going_at_twice_the_duration_are_unfinished_even_without_limits(tmp_path):
    # Each run takes 50 + 200/1 = 250 s: both agents' first runs (counted, started at 0) are still going when
    # the simulation stops at 2 x 100 = 200 s. So 2 counted, 0 completed, 2 unfinished, failed_share 1, no
    # completed run to average (null figures), and `run` warns. (agentsim reported them as completed runs of
    # 200 s costing nothing when the scenario had no `limits:`.)
    s, runs, _ = run_out(tmp_path, UNFINISHED)
    v = s["variants"]["baseline"]
    w = v["workload"]
    assert w["simulated_until_s"] == 200.0
    assert (w["runs_started"], w["runs_counted"], w["runs_completed"], w["runs_unfinished"]) == (2, 2, 0, 2)
    assert w["runs_in_flight_at_end"] == 2 and w["failed_share"] == 1.0
    assert v["wall_time_s"]["mean"] is None and v["cost_usd"]["mean"] is None
    assert runs["status"].tolist() == [2, 2]
    r = CliRunner().invoke(app, ["run", str(tmp_path / "s.yaml")])
    assert r.exit_code == 0 and "2 unfinished" in r.stderr


MIXED = """
name: audit-slot-unfinished
seed: 1
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 40, output_tps: 100}
agent:
  steps:
    - call: {name: a, input: 1000, output: 4000}
limits:
  acct: {models: [m], concurrency: 1}
workload:
  concurrent: 3
  duration: {seconds: 100}
"""


def test_a_slot_that_cannot_keep_up_leaves_counted_runs_unfinished(tmp_path):
    # Calls of 40 + 4000/100 = 80 s through one slot, three agents submitting at 0. The slot serves run 0 in
    # [0, 80], run 1 in [80, 160], run 2 in [160, 240]. Agent 0 submits run 3 at 80 (counted: 80 <= 100), which
    # waits behind run 2; agent 1 submits run 4 at 160 (not counted). The simulation stops at 2 x 100 = 200:
    # run 2 (in service) and run 3 (waiting) are unfinished, runs 2, 3, 4 in flight. Counted 4, completed 2
    # (walls 80 and 160: mean 120; queue waits 0 and 80: mean 40, p95 0 + 0.95 x 80 = 76, half waiting),
    # failed_share 2/4. Throughput: one run (run 0, at 80) ended in [0, 100]: 36/h. Input: the calls started
    # in [0, 100) are runs 0 and 1: 2000 tokens in 100/60 min = 1200/min. The slot is busy all window.
    s = run_json(tmp_path, MIXED)
    v = s["variants"]["baseline"]
    w = v["workload"]
    assert (w["runs_started"], w["runs_counted"], w["runs_completed"], w["runs_unfinished"]) == (5, 4, 2, 2)
    assert w["runs_in_flight_at_end"] == 3 and w["failed_share"] == 0.5 and w["simulated_until_s"] == 200.0
    assert w["throughput_runs_per_hour"] == pytest.approx(36.0, rel=1e-12)
    assert w["input_tokens_per_min"] == pytest.approx(1200.0, rel=1e-12)
    assert v["wall_time_s"]["mean"] == 120.0
    q = v["limits"]["queue_wait_s"]
    assert (q["mean"], q["p50"], q["p95"], q["share_waiting"]) == pytest.approx((40.0, 40.0, 76.0, 0.5))
    c = v["limits"]["accounts"]["acct"]["concurrency"]
    assert (c["limit"], c["mean_in_flight"], c["max_in_flight"], c["utilisation"]) == (1, 1.0, 1, 1.0)


# --------------------------------------------------------------------------- a concurrency limit, closed loop

ONE_SLOT = """
name: audit-one-slot
seed: 1
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 2, output_tps: 100}
agent:
  steps:
    - call: {name: a, input: 1000, output: 0}
limits:
  acct: {models: [m], concurrency: 1}
workload:
  concurrent: 3
  think_time: 1
  duration: {seconds: 100}
  warmup: {seconds: 10}
"""


def test_three_agents_behind_one_slot_queue_exactly(tmp_path):
    # One 2 s call per run, one slot, three agents thinking 1 s between runs. t=0: A, B, C submit; the slot
    # serves A [0,2], B [2,4], C [4,6]; A is back at 3 and served [6,8], B back at 5 -> [8,10], C at 7 ->
    # [10,12], ...: the slot never idles, every run after the first three waits 3 s, runs 5 s, and the runs
    # are submitted at 3, 5, 7, ... (one every 2 s). Counted (submitted in [10, 100]): 11, 13, ..., 99 = 45 runs,
    # each 5 s (queue 3 + TTFT 2). Stop at 99 + 5 = 104; started: 3 + (3, 5, ..., 103) = 54; in flight at the
    # stop: runs submitted at 101 and 103. Throughput: ends at 2, 4, 6, ... -> in [10, 100]: 46 of them in 90 s =
    # 1840/h (the long-run rate is 1 per 2 s = 1800/h). Input tokens: calls started in [10, 100): 10, 12, ..., 98
    # = 45 x 1000 in 1.5 min = 30000/min. The slot is in use all window: mean in flight 1.
    s = run_json(tmp_path, ONE_SLOT)
    v = s["variants"]["baseline"]
    w = v["workload"]
    assert s["runs"] == 45
    assert (w["runs_started"], w["runs_counted"], w["runs_completed"], w["runs_in_flight_at_end"]) == (54, 45, 45, 2)
    assert w["simulated_until_s"] == 104.0
    assert w["throughput_runs_per_hour"] == pytest.approx(1840.0, rel=1e-12)
    assert w["input_tokens_per_min"] == pytest.approx(30000.0, rel=1e-12)
    assert v["wall_time_s"]["mean"] == 5.0 and v["wall_time_s"]["p99"] == 5.0
    assert (v["breakdown_s"]["queue"], v["breakdown_s"]["ttft"]) == (3.0, 2.0)
    q = v["limits"]["queue_wait_s"]
    assert (q["mean"], q["p50"], q["p95"], q["share_waiting"]) == (3.0, 3.0, 3.0, 1.0)
    c = v["limits"]["accounts"]["acct"]["concurrency"]
    assert (c["mean_in_flight"], c["max_in_flight"], c["utilisation"]) == (1.0, 1, 1.0)
    assert v["cost_usd"]["mean"] == pytest.approx(0.001, rel=1e-12)


# --------------------------------------------------------------------------- a token bucket under overload

BUCKET = """
name: audit-bucket
seed: 1
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: 1, output_tps: 1000}
agent:
  steps:
    - call: {name: a, output: 1000}
limits:
  acct: {models: [m], output_tpm: 6000}
workload:
  concurrent: 10
  duration: {seconds: 665}
  warmup: {seconds: 65}
"""


def test_an_output_token_bucket_admits_exactly_its_refill_rate(tmp_path):
    # Each call takes 1000 output tokens at admission and runs 1 + 1000/1000 = 2 s. The bucket holds 6000 and
    # refills 100 tokens/s: the 10 agents' first calls take it empty at t=0 (6 admitted), then one call is
    # admitted every 1000/100 = 10 s (t = 10, 20, ...), far below what 10 agents offer. Steady state: each run
    # waits for the 9 others ahead of it, 98 s, and takes 100 s; an agent resubmits 2 s after its admission, so
    # runs are submitted at 10k + 2: counted ([65, 665]) 72, 82, ..., 662 = 60 runs, all 100 s (queue 98).
    # Throughput = refill rate: runs end at 10k + 2, in the window 72..662 = 60 in 10 min = 360/h, i.e. 6000
    # tokens/min / 1000 tokens per run. Admitted: 70, 80, ..., 660 -> 60 x 1000 in 10 min = 6000/min,
    # utilisation 1. In flight (admitted, not done): 2 s of every 10 -> mean 0.2 (Little: 0.1/s x 2 s), at most 1.
    s = run_json(tmp_path, BUCKET)
    v = s["variants"]["baseline"]
    w = v["workload"]
    assert (w["runs_counted"], w["runs_completed"], w["simulated_until_s"]) == (60, 60, 762.0)
    assert w["throughput_runs_per_hour"] == pytest.approx(360.0, rel=1e-9)
    assert w["output_tokens_per_min"] == pytest.approx(6000.0, rel=1e-9)
    assert v["wall_time_s"]["mean"] == pytest.approx(100.0, rel=1e-9)
    assert v["limits"]["queue_wait_s"]["mean"] == pytest.approx(98.0, rel=1e-9)
    acct = v["limits"]["accounts"]["acct"]
    assert acct["output_tpm"]["limit_per_min"] == 6000.0
    assert acct["output_tpm"]["admitted_per_min"] == pytest.approx(6000.0, rel=1e-9)
    assert acct["output_tpm"]["utilisation"] == pytest.approx(1.0, rel=1e-9)


def test_requests_waiting_for_a_bucket_are_not_in_flight(tmp_path):
    # Same scenario: a call queued for rate budget has not been sent; `mean_in_flight` is the time-weighted
    # mean of requests in flight, 2 s out of every 10 s -> 0.2, at most 1 (agentsim counted the ten queued
    # agents as in flight in an account without a concurrency cap: 10.0).
    acct = run_json(tmp_path, BUCKET)["variants"]["baseline"]["limits"]["accounts"]["acct"]["concurrency"]
    assert acct["limit"] is None and acct["utilisation"] is None
    assert acct["mean_in_flight"] == pytest.approx(0.2, rel=1e-9) and acct["max_in_flight"] == 1


# --------------------------------------------------------------------------- Poisson arrivals

POISSON = """
name: audit-poisson
seed: SEED
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: {exponential: {mean: 20}}, output_tps: 100}
agent:
  steps:
    - call: {name: a, output: 100}
workload:
  arrivals: {per_hour: RATE}
  duration: {hours: HOURS}
  warmup: {minutes: 10}
"""


def poisson(seed: int, rate: float = 360, hours: float = 1) -> str:
    return POISSON.replace("SEED", str(seed)).replace("RATE", str(rate)).replace("HOURS", str(hours))


def test_counted_runs_are_poisson_with_mean_rate_times_window(tmp_path):
    # 360 runs/h over the 50-minute window: counted ~ Poisson(300), mean = variance = 300. Over 12 seeds the mean
    # count is within 4 x sqrt(300/12) = 20 of 300, and sum((n - 300)^2) / 300 ~ chi2(12): between its 0.01%
    # and 99.99% points, about 1.9 and 38.5.
    counts = []
    for seed in range(12):
        w = run_json(tmp_path, poisson(seed), name=f"p{seed}")["variants"]["baseline"]["workload"]
        assert w["runs_completed"] == w["runs_counted"]  # no limits: every counted run finishes
        counts.append(w["runs_counted"])
    n = np.array(counts, float)
    assert abs(n.mean() - 300) <= 4 * math.sqrt(300 / 12), counts
    chi2 = float(((n - 300) ** 2).sum() / 300)
    assert 1.9 <= chi2 <= 38.5, (counts, chi2)


def test_arrival_gaps_are_exponential_and_runs_are_replications(tmp_path):
    # One 10-hour replication at 360/h: run start times are a Poisson process, so the gaps between them are
    # exponential with mean 10 s (sd 10 s, P(gap > 10 s) = e^-1). With no limits, every run is the run alone:
    # mean wall time = E[TTFT] + 100/100 = 21 s, and run i reads the draws replication i would (docs/limits.md),
    # so the completed runs have the wall time and cost of `runs: N` replications of the same file, run by run.
    s, runs, _ = run_out(tmp_path, poisson(7, hours=10), name="long")
    starts = np.sort(runs["start_s"].to_numpy())
    gaps = np.diff(np.concatenate([[0.0], starts]))
    k = len(gaps)
    assert k > 3000
    assert abs(gaps.mean() - 10.0) <= 4 * 10.0 / math.sqrt(k)
    above = float(np.mean(gaps > 10.0))
    assert abs(above - math.exp(-1)) <= 4 * math.sqrt(math.exp(-1) * (1 - math.exp(-1)) / k)
    # the variance of the gap: sd of the sample sd of exponential(10) is about 10 x sqrt(2/k) (kurtosis 9)
    assert abs(gaps.std(ddof=1) - 10.0) <= 4 * 10.0 * math.sqrt(2 / k)

    # counted = started inside [600, 36000]; the simulation stops when the last of them ends
    in_window = (runs["start_s"] >= 600) & (runs["start_s"] <= 36000)
    assert (runs["counted"] == in_window).all()
    counted = runs[runs["counted"]]
    v = s["variants"]["baseline"]
    last_end = (counted["start_s"] + counted["wall_time_s"]).max()
    assert v["workload"]["simulated_until_s"] == pytest.approx(last_end, rel=1e-12)
    wall = counted["wall_time_s"].to_numpy()
    assert abs(v["wall_time_s"]["mean"] - 21.0) <= 4 * wall.std(ddof=1) / math.sqrt(len(wall))

    n = int(runs["run"].max()) + 1
    reps = POISSON.replace("SEED", "7").split("workload:")[0] + f"runs: {n}\n"
    _, alone, _ = run_out(tmp_path, reps, name="alone")
    alone = alone.set_index("run")
    done = runs[runs["status"] == 0]
    assert len(done) >= n - 5
    np.testing.assert_allclose(done["wall_time_s"], alone.loc[done["run"], "wall_time_s"], rtol=1e-9, atol=0)
    assert (done["cost_usd"].to_numpy() == alone.loc[done["run"], "cost_usd"].to_numpy()).all()


# --------------------------------------------------------------------------- slow hours over midnight

MIDNIGHT = """
name: audit-midnight
seed: 1
models:
  m:
    price: {input_mtok: 1, output_mtok: 10}
    ttft: 0
    output_tps: 10
    conditions:
      time_of_day:
        output_tps_x: {hourly: [0.5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]}
agent:
  steps:
    - call: {name: a, output: 600}
workload:
  concurrent: 1
  duration: {seconds: 1200}
  start: "23:50"
"""


def test_slow_hour_after_midnight_in_a_closed_workload(tmp_path):
    # One agent from 23:50, runs of one 600-token call: 60 s at 10 tok/s in hour 23, 120 s at 5 tok/s once the
    # clock reads hour 0, i.e. for calls sent at t >= 600 s ((85800 + 600) mod 86400 = 0). Runs start at 0, 60,
    # ..., 540 (ten fast ones), then 600, 720, ..., 1200 (six slow ones, the last exactly at `duration`):
    # 16 counted, mean wall (10 x 60 + 6 x 120) / 16 = 82.5 s; the simulation stops at 1200 + 120 = 1320.
    # Throughput: ends 60..600 (10) and 720..1200 (5) inside [0, 1200]: 15 in 1/3 h = 45/h.
    s, _, calls = run_out(tmp_path, MIDNIGHT)
    v = s["variants"]["baseline"]
    w = v["workload"]
    assert (w["runs_counted"], w["runs_completed"], w["simulated_until_s"]) == (16, 16, 1320.0)
    assert v["wall_time_s"]["mean"] == pytest.approx(82.5, rel=1e-12)
    assert w["throughput_runs_per_hour"] == pytest.approx(45.0, rel=1e-12)
    calls = calls.sort_values("t_start")
    assert calls["tps"].tolist()[:16] == [10.0] * 10 + [5.0] * 6
    assert calls["t_start"].tolist()[:16] == [60.0 * k for k in range(10)] + [600.0 + 120 * k for k in range(6)]


# --------------------------------------------------------------------------- volume and value of time

SIZING = """
name: audit-sizing
seed: 1
runs: 10
models:
  m:
    price: {input_mtok: 2, output_mtok: 10}
    ttft: 1
    output_tps: 50
    speeds:
      fast: {output_tps_x: 2.5, price: {input_mtok: 12, output_mtok: 60}}
agent:
  steps:
    - call: {name: a, input: 1000, output: 500}
variants:
  standard: {}
  fast: {speed: {m: fast}}
value_of_time: {usd_per_hour: 100}
workload:
  VOLUME
"""

# standard: 1 + 500/50 = 11 s, 1000 x 2/1e6 + 500 x 10/1e6 = 0.007 USD; fast: 1 + 500/125 = 5 s,
# 1000 x 12/1e6 + 500 x 60/1e6 = 0.042 USD. Δt = -6 s, Δc = 0.035 USD: USD per hour saved 0.035 / (6/3600) = 21.
STD, FAST = (11.0, 0.007), (5.0, 0.042)


def test_run_reports_break_even_and_total_cost_at_the_value_of_time(tmp_path):
    # total cost per run = API cost + 100 x wall / 3600: 0.007 + 0.30556 = 0.31256 and 0.042 + 0.13889 = 0.18089;
    # fast pays off at V = 100 >= 21 (Δc + V Δt / 3600 = 0.035 - 0.1667 < 0).
    s = run_json(tmp_path, SIZING.replace("VOLUME", "volume: {runs_per_month: 20000}"))
    assert s["value_of_time_usd_per_hour"] == 100.0
    for name, (t, c) in (("standard", STD), ("fast", FAST)):
        v = s["variants"][name]
        assert v["wall_time_s"]["mean"] == pytest.approx(t, rel=1e-12)
        assert v["cost_usd"]["mean"] == pytest.approx(c, rel=1e-12)
        assert v["total_cost_usd"]["mean"] == pytest.approx(c + 100 * t / 3600, rel=1e-12)
    vs = s["variants"]["fast"]["vs_baseline"]
    assert vs["delta_time_s"] == pytest.approx(-6.0) and vs["delta_cost_usd"] == pytest.approx(0.035, rel=1e-12)
    assert vs["usd_per_hour_saved"] == pytest.approx(21.0, rel=1e-12) and vs["pays_off"] is True


def test_size_turns_runs_per_month_into_monthly_figures(tmp_path):
    # N = 20000 runs a month. standard: spend 20000 x 0.007 = 140 USD, waiting 20000 x 11 / 3600 = 61.11 h;
    # fast: 840 USD, 27.78 h. Saved 33.33 h for 700 USD more: 21 USD per saved hour (= USD per hour saved);
    # net at V = 100: 33.33 x 100 - 700 = 2633.33 USD a month.
    d = size_json(tmp_path, SIZING.replace("VOLUME", "volume: {runs_per_month: 20000}"))
    assert d["runs_per_month"] == 20000
    std, fast = d["variants"]["standard"], d["variants"]["fast"]
    assert std["api_usd_per_month"] == pytest.approx(140.0, rel=1e-12)
    assert std["wait_hours_per_month"] == pytest.approx(20000 * 11 / 3600, rel=1e-12)
    assert fast["api_usd_per_month"] == pytest.approx(840.0, rel=1e-12)
    assert fast["wait_hours_per_month"] == pytest.approx(20000 * 5 / 3600, rel=1e-12)
    saved = 20000 * 6 / 3600
    assert fast["hours_saved_per_month"] == pytest.approx(saved, rel=1e-12)
    assert fast["extra_usd_per_month"] == pytest.approx(700.0, rel=1e-12)
    assert fast["premium_usd_per_saved_hour"] == pytest.approx(21.0, rel=1e-12)
    assert fast["net_usd_per_month"] == pytest.approx(saved * 100 - 700, rel=1e-12)
    assert fast["pays_off"] is True
    # constant runs: the CI of the mean has no width, so neither has the monthly spend's
    assert fast["api_usd_per_month_lo"] == pytest.approx(840.0, rel=1e-12)
    assert fast["api_usd_per_month_hi"] == pytest.approx(840.0, rel=1e-12)


@pytest.mark.parametrize(
    ("volume", "args", "per_month"),
    [
        ("volume: {runs_per_day: 300}", (), 300 * 30),  # a month is 30 calendar days by default
        ("volume: {runs_per_day: 300, working_days: 21}", (), 300 * 21),
        ("volume: {seats: 40, runs_per_seat_per_day: 12, working_days: 21}", (), 40 * 12 * 21),
        ("volume: {runs_per_month: 20000}", ("--runs-per-month", "5000"), 5000),  # the flag wins
        # no volume: the open workload's arrivals x duration (the daily window) x 30 days; 20/h x 2 h x 30
        ("arrivals: {per_hour: 20}\n  duration: {hours: 2}", (), 20 * 2 * 30),
        ("arrivals: {per_hour: 20}\n  duration: {hours: 2}", ("--working-days", "21"), 20 * 2 * 21),
    ],
)
def test_where_the_runs_per_month_come_from(tmp_path, volume, args, per_month):
    d = size_json(tmp_path, SIZING.replace("VOLUME", volume), *args)
    assert d["runs_per_month"] == per_month
    fast = d["variants"]["fast"]
    assert fast["api_usd_per_month"] == pytest.approx(per_month * 0.042, rel=1e-12)
    assert fast["hours_saved_per_month"] == pytest.approx(per_month * 6 / 3600, rel=1e-12)
    assert fast["net_usd_per_month"] == pytest.approx(per_month * (6 / 3600 * 100 - 0.035), rel=1e-9)


# --------------------------------------------------------------------------- keys that would be ignored


@pytest.mark.parametrize(
    ("workload", "words"),
    [
        # think_time is a closed loop's pause: with open arrivals it would be silently ignored
        ("{arrivals: {per_hour: 100}, think_time: 3, duration: {seconds: 1000}}", "needs concurrent"),
        # a window without arrivals or agents: nothing is simulated over time, duration/warmup would be ignored
        ("{duration: {seconds: 100}}", "add arrivals or concurrent"),
        ("{warmup: {seconds: 10}, volume: {runs_per_month: 10}}", "add arrivals or concurrent"),
    ],
)
def test_workload_keys_that_would_do_nothing_are_refused(tmp_path, workload, words):
    f = _write(tmp_path, CLOSED.split("workload:")[0] + f"workload: {workload}\n", "bad")
    r = CliRunner().invoke(app, ["run", str(f), "--json"])
    assert r.exit_code == 2 and r.stdout == ""
    assert f"{f.name}:9: workload:" in r.stderr and words in r.stderr and "Traceback" not in r.output


# --------------------------------------------------------------------------- a closed loop with random times

REPAIRMAN = """
name: audit-finite-source
seed: SEED
models:
  m: {price: {input_mtok: 1, output_mtok: 10}, ttft: {exponential: {mean: 10}}, output_tps: 100}
agent:
  steps:
    - call: {name: a, output: 0}
limits:
  acct: {models: [m], concurrency: 1}
workload:
  concurrent: 3
  think_time: {exponential: {mean: 20}}
  duration: {hours: 5}
  warmup: {minutes: 30}
"""


def test_closed_loop_behind_one_slot_matches_the_finite_source_queue(tmp_path):
    # N = 3 agents thinking Exp(Z = 20 s) between runs of one Exp(S = 10 s) call behind one slot: the
    # M/M/1//N ("machine repairman") queue. With r = S/Z = 0.5, P(idle) = 1 / sum_{n=0..N} N!/(N-n)! r^n
    # = 1 / (1 + 1.5 + 1.5 + 0.75) = 1/4.75; throughput X = (1 - P(idle)) / S = 0.0789/s = 284.2 runs/h;
    # mean wall (queue + service) R = N/X - Z = 38 - 20 = 18 s, of which 8 s queueing; the slot is busy
    # 1 - 1/4.75 = 0.789 of the time. Each seed is an independent 5-hour replication (waits within one are
    # autocorrelated, seeds are not): 4 standard errors of the mean over 8 seeds.
    p_idle = 1 / sum(math.factorial(3) / math.factorial(3 - n) * 0.5**n for n in range(4))
    x = (1 - p_idle) / 10
    expect = {"wall": 3 / x - 20, "queue": 3 / x - 30, "per_hour": 3600 * x, "busy": 1 - p_idle}
    got: dict[str, list[float]] = {k: [] for k in expect}
    for seed in range(8):
        v = run_json(tmp_path, REPAIRMAN.replace("SEED", str(seed)), name=f"mr{seed}")["variants"]["baseline"]
        got["wall"].append(v["wall_time_s"]["mean"])
        got["queue"].append(v["limits"]["queue_wait_s"]["mean"])
        got["per_hour"].append(v["workload"]["throughput_runs_per_hour"])
        got["busy"].append(v["limits"]["accounts"]["acct"]["concurrency"]["mean_in_flight"])
    for k, exact in expect.items():
        sample = np.array(got[k])
        se = sample.std(ddof=1) / math.sqrt(len(sample))
        assert abs(sample.mean() - exact) <= 4 * se, (k, sample.mean(), exact, se)


# --------------------------------------------------------------------------- a rejecting bucket, retry-after

REJECT = """
name: audit-reject
seed: 1
models:
  m:
    price: {input_mtok: 1, output_mtok: 10}
    ttft: 1
    output_tps: 100
    retry: {max_attempts: 50, honour_retry_after: true}
agent:
  steps:
    - call: {name: a, output: 0}
limits:
  acct: {models: [m], rpm: 6, policy: reject}
workload:
  concurrent: 2
  duration: {seconds: 3605}
  warmup: {seconds: 5}
"""


def test_a_rejecting_bucket_with_retry_after_serves_its_refill_rate(tmp_path):
    # rpm 6: a bucket of 6 refilled at 0.1/s; 1 s calls; a 429 carries retry-after = (1 - level) / 0.1.
    # t=0: both agents admitted (6 -> 4); t=1: 4.1 -> 2.1; t=2: 2.2 -> 0.2; t=3: 0.3, both refused, retry at 10.
    # From then on one request is admitted every 10 s, at level 1 exactly: at t = 10k the agent whose retry
    # timer was set first (at 10(k-1)) is admitted, the other (refused at 10(k-1) + 1 with level 0.1, retry
    # after 9 s) is refused again with retry-after 10. So every run from the one submitted at 11 on is
    # submitted at 10k + 1, refused twice, admitted at 10k + 20 and done at 10k + 21: wall 20 s, queue 19 s.
    # Counted ([5, 3605]): submitted 11, 21, ..., 3601 = 360 runs, 720 refusals, each followed by a retry.
    # Throughput = refill rate: ends 11..3601 in the window = 360 in one hour; 360 admissions (10..3600) in
    # 60 min = 6/min, utilisation 1; a request is in flight 1 s out of every 10 s: 0.1.
    s = run_json(tmp_path, REJECT)
    v = s["variants"]["baseline"]
    w = v["workload"]
    assert (w["runs_counted"], w["runs_completed"], w["runs_failed"]) == (360, 360, 0)
    assert w["throughput_runs_per_hour"] == pytest.approx(360.0, rel=1e-12)
    assert v["wall_time_s"]["mean"] == pytest.approx(20.0, rel=1e-9)
    assert v["wall_time_s"]["p99"] == pytest.approx(20.0, rel=1e-9)
    assert v["breakdown_s"]["queue"] == pytest.approx(19.0, rel=1e-9)
    a = v["limits"]["attempts"]
    assert (a["rejected_429"], a["retries"], a["failed_calls"], a["errors"]) == (720, 720, 0, 0)
    acct = v["limits"]["accounts"]["acct"]
    assert acct["policy"] == "reject"
    assert acct["rpm"]["admitted_per_min"] == pytest.approx(6.0, rel=1e-12)
    assert acct["rpm"]["utilisation"] == pytest.approx(1.0, rel=1e-12)
    assert acct["concurrency"]["mean_in_flight"] == pytest.approx(0.1, rel=1e-9)


def test_summary_runs_is_the_first_variants_counted_runs(tmp_path):
    # The CLOSED loop with a second variant at 2.5x the output speed: 2 + 500/250 = 4 s runs, cycle 5 s, starts
    # 0, 5, ..., counted 20..100 (both ends included) = 17 per agent = 51, stop at 100 + 4 = 104, started
    # 0..100 = 63. summary.json's `runs` is the first variant's count (30, as above).
    text = CLOSED.replace("output_tps: 100}", "output_tps: 100, speeds: {fast: {output_tps_x: 2.5}}}")
    text += "variants:\n  standard: {}\n  fast: {speed: {m: fast}}\n"
    s = run_json(tmp_path, text)
    assert s["runs"] == 30
    std, fast = s["variants"]["standard"]["workload"], s["variants"]["fast"]["workload"]
    assert (std["runs_counted"], std["runs_started"]) == (30, 39)
    assert (fast["runs_counted"], fast["runs_started"], fast["simulated_until_s"]) == (51, 63, 104.0)
    assert s["variants"]["fast"]["wall_time_s"]["mean"] == 4.0
    assert s["variants"]["fast"]["vs_baseline"]["delta_time_s"] == -3.0


# --------------------------------------------------------------------------- failed runs in a workload


def test_failed_runs_of_a_workload_are_counted_and_their_cost_reported(tmp_path):
    # The CLOSED loop with `fail: {p: P}` after the 7 s call and a second call behind it. p = 1: every run
    # stops at the fail step at 7 s having spent 0.005 USD, so the timeline is the one above: 30 counted,
    # all failed (failed_share 1), 30 x 0.005 = 0.15 USD spent on failed runs, no completed run to average,
    # success share 0 and no cost per success; throughput (completed runs) 0.
    calls = "    - call: {name: a, output: 500}\n    - fail: {p: P}\n    - call: {name: b, output: 500}\n"
    text = CLOSED.replace("    - call: {name: a, output: 500}\n", calls)
    v = run_json(tmp_path, text.replace("P}", "1}"))["variants"]["baseline"]
    w = v["workload"]
    assert (w["runs_counted"], w["runs_completed"], w["runs_failed"], w["runs_unfinished"]) == (30, 0, 30, 0)
    assert w["failed_share"] == 1.0 and w["throughput_runs_per_hour"] == 0.0
    assert w["cost_of_failed_runs_usd"] == pytest.approx(30 * 0.005, rel=1e-12)
    assert v["wall_time_s"]["mean"] is None
    assert v["success"] == {"share": 0.0, "cost_per_success_usd": None, "time_to_success_s": None}
    # p = 0.5 over 2 hours: a run's outcome is its own draw, whatever the agents did before, so the success
    # share of the n counted runs is within 4 sqrt(0.25 / n) of 1/2; successful runs take 14 s and cost 0.01.
    text = text.replace("seconds: 100", "hours: 2").replace("P}", "0.5}")
    v = run_json(tmp_path, text, name="half")["variants"]["baseline"]
    w = v["workload"]
    n = w["runs_completed"] + w["runs_failed"]
    assert n > 1000 and w["runs_unfinished"] == 0
    assert abs(v["success"]["share"] - 0.5) <= 4 * math.sqrt(0.25 / n)
    assert v["success"]["share"] == pytest.approx(w["runs_completed"] / n, rel=1e-12)
    assert v["wall_time_s"]["mean"] == 14.0 and v["cost_usd"]["mean"] == pytest.approx(0.01, rel=1e-12)
    assert w["cost_of_failed_runs_usd"] == pytest.approx(w["runs_failed"] * 0.005, rel=1e-9)
    # per success: (k x 14 + f x 7) / k seconds and (k x 0.01 + f x 0.005) / k USD for k successes, f failures
    k, f = w["runs_completed"], w["runs_failed"]
    assert v["success"]["time_to_success_s"] == pytest.approx((14 * k + 7 * f) / k, rel=1e-12)
    assert v["success"]["cost_per_success_usd"] == pytest.approx((0.01 * k + 0.005 * f) / k, rel=1e-9)


LINEAR = """
name: audit-linear-clock
seed: 1
runs: 3
models:
  m:
    price: {input_mtok: 1, output_mtok: 10}
    ttft: 2
    output_tps: 100
    conditions:
      time_of_day:
        ttft_x: {hourly: [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3], curve: linear}
agent:
  steps:
    - call: {name: a, output: 100}
    - call: {name: b, output: 100}
workload:
  start: "23:45"
"""


def test_linear_slow_hour_read_at_each_calls_clock_time(tmp_path):
    # Replications all start at 23:45 (no arrivals). linear: F(c) = F[i] + (F[i+1] - F[i]) (p - i) with
    # p = c/3600 - 1/2, wrapping 23 -> 0. Call a at c = 85500 s: p = 23.25, F = 3 + (1 - 3) x 0.25 = 2.5, so
    # TTFT 2 x 2.5 = 5 s, decode 100/100 = 1 s. Call b at 23:45:06: p = 23.25 + 6/3600, F = 3 - 2 (0.25 + 1/600),
    # TTFT 2F = 4.99333 s; wall 6 + 2F + 1.
    f_b = 3 - 2 * (0.25 + 6 / 3600)
    s, runs, calls = run_out(tmp_path, LINEAR)
    assert s["engine"] == "des"
    c = calls[calls["run"] == 0].set_index("step")
    assert c.loc["a", "ttft_s"] == pytest.approx(5.0, rel=1e-12)
    assert c.loc["b", "t_start"] == pytest.approx(6.0, rel=1e-12)
    assert c.loc["b", "ttft_s"] == pytest.approx(2 * f_b, rel=1e-12)
    assert runs["wall_time_s"].to_numpy() == pytest.approx([7 + 2 * f_b] * 3, rel=1e-12)

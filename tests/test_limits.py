"""Shared limits and workloads: queueing theory, token buckets, retries, fallbacks, properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentsim.plan.compiler import compile_plan
from agentsim.sim.simulation import simulate_plan
from conftest import make


def mmc_doc(rate_per_hour, c, mean_service, hours=10, warmup=1):
    return {
        "name": "mmc",
        "models": {
            "m": {
                "price": {"input_mtok": 1, "output_mtok": 1},
                "ttft": {"exponential": {"mean": mean_service}},
                "output_tps": 100,
            }
        },
        "limits": {"acct": {"models": ["m"], "concurrency": c, "policy": "queue"}},
        "workload": {
            "arrivals": {"per_hour": rate_per_hour},
            "duration": {"hours": hours},
            "warmup": {"hours": warmup},
        },
        "agent": {"steps": [{"call": {"output": 0}}]},
    }


def erlang_c(lam, mu, c):
    """P(wait) and mean wait of an M/M/c queue."""
    a = lam / mu
    top = a**c / math.factorial(c) * c / (c - a)
    p_wait = top / (sum(a**k / math.factorial(k) for k in range(c)) + top)
    return p_wait, p_wait / (c * mu - lam)


@pytest.mark.parametrize(("rate_per_hour", "c", "mean_service"), [(1080, 4, 10.0), (360, 2, 12.0)])
def test_concurrency_limit_matches_erlang_c(rate_per_hour, c, mean_service):
    # rho = 0.75 and 0.6. Each seed is an independent 10-hour replication; the tolerance is 4 standard
    # errors of the mean over seeds (queue waits within one run are autocorrelated, seeds are not).
    plan = compile_plan(make(mmc_doc(rate_per_hour, c, mean_service)))
    lam, mu = rate_per_hour / 3600, 1 / mean_service
    p_exact, w_exact = erlang_c(lam, mu, c)
    waits, shares, little = [], [], []
    for seed in range(6):
        res = simulate_plan(plan, 1, seed)
        v = res.summary_dict()["variants"]["baseline"]
        waits.append(v["limits"]["queue_wait_s"]["mean"])
        shares.append(v["limits"]["queue_wait_s"]["share_waiting"])
        # Little's law on the provider: mean in flight = arrival rate x mean service time (both measured)
        acct = v["limits"]["accounts"]["acct"]["concurrency"]
        started = v["workload"]["runs_counted"] / (9 * 3600)
        little.append(acct["mean_in_flight"] / (started * v["per_call"]["ttft_s"]["mean"]))
    for sample, exact in ((np.array(waits), w_exact), (np.array(shares), p_exact)):
        se = sample.std(ddof=1) / math.sqrt(len(sample))
        assert abs(sample.mean() - exact) <= 4 * se, (sample.mean(), exact, se)
    assert np.allclose(little, 1.0, atol=0.03)


def test_token_bucket_under_overload_delivers_its_refill_rate():
    # 60 requests per minute allowed, 180 offered: over 2 hours the bucket admits 60/min (+ its initial fill).
    doc = {
        "name": "bucket",
        "models": {"m": {"price": {"input_mtok": 1, "output_mtok": 1}, "ttft": 0.5, "output_tps": 100}},
        "limits": {"acct": {"models": ["m"], "rpm": 60, "policy": "queue"}},
        "workload": {"arrivals": {"per_hour": 180 * 60}, "duration": {"hours": 2}, "warmup": {"minutes": 10}},
        "agent": {"steps": [{"call": {"output": 0}}]},
    }
    res = simulate_plan(compile_plan(make(doc)), 1, 3)
    out = res.outcomes[0]
    bucket = out.accounts[0].rpm
    times = np.array([t for t, _ in bucket.admitted])
    window = (times >= 600) & (times < 7200)
    per_min = window.sum() / ((7200 - 600) / 60)
    assert per_min == pytest.approx(60.0, abs=60 / 110)  # at most one request off over 110 minutes
    acct = res.summary_dict()["variants"]["baseline"]["limits"]["accounts"]["acct"]["rpm"]
    assert acct["utilisation"] == pytest.approx(1.0, abs=0.01)


def _one_call(models, limits=None, steps=None):
    doc = {
        "name": "t",
        "runs": 1,
        "models": models,
        "agent": {"steps": steps or [{"call": {"model": next(iter(models)), "output": 100}}]},
    }
    if limits:
        doc["limits"] = limits
    return simulate_plan(compile_plan(make(doc)), 1, 1)


def test_retry_back_off_and_fallback_timeline():
    # flaky errors at its first token (1 s): attempt 1 at 0-1 s, back-off 0.5 s, attempt 2 at 1.5-2.5 s,
    # back-off 1.0 s; after 2 failures the call falls back to solid at 3.5 s: TTFT 0.5 + 100 tokens at
    # 100 tok/s -> ends at 5.0 s. Queue time on the critical path: 3.5 s.
    res = _one_call(
        {
            "flaky": {
                "price": {"input_mtok": 1, "output_mtok": 1},
                "ttft": 1,
                "output_tps": 100,
                "error_rate": 1.0,
                "retry": {"max_attempts": 4, "backoff_base": 0.5, "backoff_cap": 8, "jitter": "none"},
                "fallback": {"model": "solid", "after": 2},
            },
            "solid": {"price": {"input_mtok": 1, "output_mtok": 2}, "ttft": 0.5, "output_tps": 100},
        }
    )
    c = res.calls.iloc[0]
    assert (c.model, c.status, c.t_start, c.t_end) == ("solid", "ok", 3.5, 5.0)
    r = res.runs.iloc[0]
    assert (r.wall_time_s, r.queue_s, r.ttft_s, r.decode_s) == (5.0, 3.5, 0.5, 1.0)
    assert c.cost_usd == pytest.approx(100 * 2e-6)  # priced as the fallback model; errors are not billed
    att = res.summary_dict()["variants"]["baseline"]["limits"]["attempts"]
    assert (att["errors"], att["retries"], att["fallbacks"], att["failed_runs"]) == (2, 2, 1, 0)


def test_call_that_uses_up_its_attempts_fails_the_run():
    res = _one_call(
        {
            "flaky": {
                "price": {"input_mtok": 1, "output_mtok": 1},
                "ttft": 1,
                "output_tps": 100,
                "error_rate": 1.0,
                "retry": {"max_attempts": 3, "jitter": "none"},
            }
        },
        steps=[{"call": {"output": 100}}, {"wait": {"latency": 100}}],
    )
    r = res.runs.iloc[0]
    # attempts end at 1, 2.5 (+0.5), 4.5 (+1.0): the run fails there and the wait never happens
    assert r.status == 1 and r.wall_time_s == 4.5
    assert res.calls.iloc[0].status == "failed"
    assert len(res.spans) == 0


def test_timeout_bills_what_was_generated_and_retries():
    # 2 s TTFT + 1000 tokens at 100 tok/s = 12 s, but the client gives up after 5 s: 300 tokens generated.
    res = _one_call(
        {
            "slow": {
                "price": {"input_mtok": 0, "output_mtok": 10},
                "ttft": 2,
                "output_tps": 100,
                "timeout": 5,
                "retry": {"max_attempts": 2, "jitter": "none", "backoff_base": 1},
                "fallback": {"model": "quick", "after": 1},
            },
            "quick": {"price": {"input_mtok": 0, "output_mtok": 1}, "ttft": 1, "output_tps": 1000},
        },
        steps=[{"call": {"model": "slow", "output": 1000}}],
    )
    r = res.runs.iloc[0]
    # attempt 1: 0-5 s (timeout), back-off 1 s, attempt 2 on quick: 6 + 1 + 1 = 8 s
    assert r.wall_time_s == 8.0
    assert r.cost_usd == pytest.approx(300 * 10e-6 + 1000 * 1e-6)


def test_429_waits_for_the_retry_after_time():
    # rpm 1: the bucket holds one request and refills one per minute; the second parallel call is refused
    # at t=0 with retry-after 60 s and starts at t=60.
    res = _one_call(
        {"m": {"price": {"input_mtok": 1, "output_mtok": 1}, "ttft": 1, "output_tps": 100}},
        limits={"acct": {"models": ["m"], "rpm": 1, "policy": "reject"}},
        steps=[{"parallel": [{"call": {"name": "a", "output": 100}}, {"call": {"name": "b", "output": 100}}]}],
    )
    calls = res.calls.set_index("step")
    assert calls.loc["a", "t_start"] == 0.0 and calls.loc["b", "t_start"] == 60.0
    assert res.runs.iloc[0].wall_time_s == 62.0
    att = res.summary_dict()["variants"]["baseline"]["limits"]["attempts"]
    assert att["rejected_429"] == 1


def test_fast_tier_with_its_own_account():
    # opus@fast is limited to 1 request in flight, opus (standard) is not: a fan-out of 3 fast calls
    # runs one at a time (3 x 1.4 s), the standard ones all at once (2 s).
    doc = {
        "name": "tiers",
        "runs": 1,
        "models": {
            "opus": {
                "price": {"input_mtok": 1, "output_mtok": 1},
                "ttft": 1,
                "output_tps": 100,
                "speeds": {"fast": {"output_tps_x": 2.5, "price_x": 6}},
            }
        },
        "limits": {"fast-acct": {"models": ["opus@fast"], "concurrency": 1, "policy": "queue"}},
        "agent": {"steps": [{"fanout": {"n": 3, "steps": [{"call": {"output": 100}}]}}]},
        "variants": {"standard": {}, "fast": {"speed": {"opus": "fast"}}},
    }
    res = simulate_plan(compile_plan(make(doc)), 1, 1)
    walls = res.runs.set_index("variant")["wall_time_s"]
    assert walls["standard"] == pytest.approx(2.0)
    assert walls["fast"] == pytest.approx(3 * 1.4)


# --------------------------------------------------------------------------- properties


@st.composite
def limited_workloads(draw):
    conc = draw(st.integers(1, 4))
    rpm = draw(st.sampled_from([None, 30, 120]))
    itpm = draw(st.sampled_from([None, 20000, 100000]))
    policy = draw(st.sampled_from(["queue", "reject"]))
    limit = {"models": ["m"], "concurrency": conc, "policy": policy}
    if rpm:
        limit["rpm"] = rpm
    if itpm:
        limit["input_tpm"] = itpm
    closed = draw(st.booleans())
    workload = {"duration": {"minutes": 30}, "warmup": {"minutes": 2}}
    if closed:
        workload["concurrent"] = draw(st.integers(1, 6))
        workload["think_time"] = {"exponential": {"mean": 20}}
    else:
        workload["arrivals"] = {"per_hour": draw(st.sampled_from([30, 120, 400]))}
    return {
        "name": "prop",
        "seed": draw(st.integers(0, 1000)),
        "models": {
            "m": {
                "price": {"input_mtok": 1, "output_mtok": 1},
                "ttft": {"exponential": {"mean": 2}},
                "output_tps": 80,
                "error_rate": draw(st.sampled_from([0.0, 0.1])),
                "retry": {"max_attempts": draw(st.integers(1, 4))},
            }
        },
        "limits": {"acct": limit},
        "workload": workload,
        "agent": {
            "steps": [
                {"call": {"input": {"uniform": {"low": 100, "high": 3000}}, "output": 100}},
                {"fanout": {"n": draw(st.integers(1, 3)), "steps": [{"call": {"input": 500, "output": 50}}]}},
            ]
        },
    }


def _limited(limit: dict, workload: dict, error_rate: float = 0.0) -> dict:
    return {
        "name": "prop",
        "seed": 5,
        "models": {
            "m": {
                "price": {"input_mtok": 1, "output_mtok": 1},
                "ttft": {"exponential": {"mean": 2}},
                "output_tps": 80,
                "error_rate": error_rate,
                "retry": {"max_attempts": 3},
            }
        },
        "limits": {"acct": {"models": ["m"], **limit}},
        "workload": {"duration": {"minutes": 30}, "warmup": {"minutes": 2}, **workload},
        "agent": {
            "steps": [
                {"call": {"input": 3000, "output": 100}},
                {"fanout": {"n": 3, "steps": [{"call": {"input": 500, "output": 50}}]}},
            ]
        },
    }


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(limited_workloads())
# boundaries pinned: one slot and a bucket that binds (queue and reject), a bucket of exactly one call's tokens
@example(_limited({"concurrency": 1, "rpm": 30, "policy": "queue"}, {"arrivals": {"per_hour": 400}}))
@example(_limited({"concurrency": 1, "rpm": 30, "policy": "reject"}, {"concurrent": 6, "think_time": 1}, 0.1))
@example(_limited({"concurrency": 4, "input_tpm": 3000, "policy": "queue"}, {"arrivals": {"per_hour": 120}}))
def test_workload_properties(doc):
    sc = make(doc)
    res = simulate_plan(compile_plan(sc), 1, sc.seed)
    out = res.outcomes[0]
    acct = out.accounts[0]
    conc = doc["limits"]["acct"]["concurrency"]
    assert max((v for _, v in acct.inflight_log), default=0) <= conc
    for bucket, cap in (
        (acct.rpm, doc["limits"]["acct"].get("rpm")),
        (acct.itpm, doc["limits"]["acct"].get("input_tpm")),
    ):
        if bucket is None:
            continue
        t = np.array([x for x, _ in bucket.admitted])
        n = np.array([y for _, y in bucket.admitted])
        cum = np.concatenate([[0], np.cumsum(n)])
        for i, t0 in enumerate(t):  # tokens admitted in any 60 s window <= capacity + one minute of refill
            j = np.searchsorted(t, t0 + 60, side="left")
            assert cum[j] - cum[i] <= 2 * cap + 1e-6
    calls = res.calls
    done = calls[calls.status == "ok"]
    assert (done.t_submit <= done.t_start).all() and (done.t_start <= done.t_first_token).all()
    assert (done.t_first_token <= done.t_end).all()
    w = res.summary_dict()["variants"]["baseline"]["workload"]
    assert w["runs_counted"] == w["runs_completed"] + w["runs_failed"] + w["runs_unfinished"]
    runs = res.runs
    assert len(runs) == w["runs_started"]
    assert (runs.status == 0).sum() + (runs.status == 1).sum() + (runs.status == 2).sum() == len(runs)


def test_team_of_agents_is_reproducible_and_fast_limits_bite(tmp_path):
    import yaml

    from conftest import SCENARIOS

    doc = yaml.safe_load((SCENARIOS / "team-of-agents.yaml").read_text())
    doc["workload"]["duration"] = {"hours": 1.5}
    doc["workload"]["warmup"] = {"minutes": 15}
    path = tmp_path / "team.yaml"
    path.write_text(yaml.safe_dump(doc))
    from agentsim import simulate

    a, b = simulate(path).to_json(), simulate(path).to_json()
    assert a == b
    import json

    v = json.loads(a)["variants"]
    # the fast tier's own, smaller output-token bucket is the one that saturates
    assert v["fast"]["limits"]["accounts"]["opus-fast"]["output_tpm"]["utilisation"] > 0.9
    assert v["fast"]["limits"]["attempts"]["rejected_429"] > v["standard"]["limits"]["attempts"]["rejected_429"]


def test_default_policy_queues_for_a_slot():
    # DESIGN.md §4: a call first queues for a slot. Concurrency 1, two parallel 2 s calls: 0-2 s and 2-4 s.
    res = _one_call(
        {"m": {"price": {"input_mtok": 1, "output_mtok": 1}, "ttft": 1, "output_tps": 100}},
        limits={"acct": {"models": ["m"], "concurrency": 1}},
        steps=[{"parallel": [{"call": {"name": "a", "output": 100}}, {"call": {"name": "b", "output": 100}}]}],
    )
    calls = res.calls.set_index("step")
    assert (calls.loc["a", "t_start"], calls.loc["b", "t_start"]) == (0.0, 2.0)
    r = res.runs.iloc[0]
    assert (r.wall_time_s, r.queue_s) == (4.0, 2.0)
    assert res.summary_dict()["variants"]["baseline"]["limits"]["attempts"]["rejected_429"] == 0


def _step_mean_loop(log, t0, t1, initial=0.0):
    """step_mean's rule as a loop over the changes (how it was written before it read arrays)."""
    area, level, t_prev, peak = 0.0, initial, t0, initial
    for t, v in log:
        if t <= t0:
            level = peak = v
            continue
        if t >= t1:
            break
        area += level * (t - t_prev)
        t_prev, level = t, v
        peak = max(peak, v)
    area += level * (t1 - t_prev)
    return area / (t1 - t0), peak


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.floats(0, 50), st.integers(0, 40), st.floats(0, 1e5)), max_size=300),
    st.floats(0, 60),
    st.floats(0, 60),
    st.sampled_from([0.0, 0, 3]),
)
def test_account_figures_read_from_arrays_equal_a_loop_over_the_log(changes, t0, span, initial):
    # in-flight counts (integers), bucket levels and admitted tokens (floats), in time order as accounts log them
    from agentsim.plan.limits import PairLog
    from agentsim.sim.loadstats import step_mean, window_admitted

    t1 = t0 + span
    counts, levels = PairLog("q"), PairLog()
    for t, n, x in sorted(changes, key=lambda c: c[0]):
        counts.append((t, n))
        levels.append((t, x))
    for log in (counts, levels):
        if t1 > t0:
            got, want = step_mean(log, t0, t1, initial), _step_mean_loop(log, t0, t1, initial)
            assert repr(got) == repr(want) and type(got[1]) is type(want[1])  # the same bits; an int stays one
        admitted = window_admitted(log, t0, t1)
        assert repr(admitted) == repr(float(sum(n for t, n in log if t0 <= t < t1)))

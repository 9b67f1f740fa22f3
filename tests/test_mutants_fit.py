"""Survivors of mutation testing of the measuring and fitting code (``make mutate ONLY='$(MUTATE_FIT)'``,
docs/validation.md §7), each killed by a hand-computed or closed-form case.

The stall lengths (``measure/stall_fit.py``): the constant-or-family rule, the uniform's unbiased ends, the
pause time a limit hides (``E[X; X < c]``, against numerical integration), the report's quantiles above the
median limit. Sessions as steps (``fit/population.py``): a node that starts at the same instant as the next
call belongs to that call's step; a session with no model call is an empty thread. Context-dependent speed
(``plan/context_speed.py``): the highest and lowest factors, and the size guard's bound of a closed
workload's run time that reads them.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats

from agentsim.fit.population import session_shape
from agentsim.measure import stall_fit
from agentsim.measure.measured_range import in_flight, measured_range
from agentsim.measure.queueing import find_queueing
from agentsim.measure.stall_fit import CONSTANT_CV, LengthFit, fit_lengths
from agentsim.plan.compiler import compile_plan
from agentsim.plan.context_speed import Piecewise, compile_context_speed
from agentsim.plan.sizeguard import BLOCK, estimate
from agentsim.traces.sessions import Call, Node, Session, link_nodes
from conftest import make, model, scenario

# --------------------------------------------------------------------------- stall lengths


def test_the_constant_rule_reads_sd_over_mean():
    # 12 pauses of 10 +- 0.1 s: sd (ddof 1) = 0.1 * sqrt(12/11) = 0.1044, sd / mean = 0.0104 < 0.05 -> a constant
    # of their mean, 10 s (sd x mean = 1.04 would say "a family")
    x = 10.0 + 0.1 * np.array([-1.0, 1.0] * 6)
    fit = fit_lengths(x, np.full(12, 0.5))
    assert fit.family == "constant" and fit.value == pytest.approx(10.0, abs=1e-12)
    assert "0.010 (sd / mean)" in fit.report["why"]
    # 12 pauses of 0.1 s +- 40%: sd / mean = 0.04 * sqrt(12/11) / 0.1 = 0.418 > 0.05 -> a family is fitted
    # (sd x mean = 0.0042 would say "a constant")
    y = 0.1 * (1.0 + 0.4 * np.array([-1.0, 1.0] * 6))
    assert fit_lengths(y, np.full(12, 0.01)).family != "constant"
    assert CONSTANT_CV == 0.05


def test_too_few_pauses_are_their_mean():
    # 9 pauses (< MIN_FOR_FAMILY = 10) that vary a lot: no family, their mean 5 s
    x = np.arange(1.0, 10.0)
    fit = fit_lengths(x, np.full(9, 0.5))
    assert (fit.family, fit.value, fit.report["pauses"]) == ("constant", 5.0, 9)


def test_the_uniform_ends_are_unbiased():
    # 11 pauses evenly from 1 to 6 s: range R = 5, pad R / (n - 1) = 0.5 -> uniform on [0.5, 6.5]
    x = np.linspace(1.0, 6.0, 11)
    d, k = stall_fit.CANDIDATES["uniform"](x, np.full(11, 0.2))
    assert k == 2 and d.support() == pytest.approx((0.5, 6.5), abs=1e-12)
    # 11 pauses from 0.05 to 1.05 s: pad 0.1 would put the low end at -0.05; a length is never negative: 0
    x = np.linspace(0.05, 1.05, 11)
    d, _ = stall_fit.CANDIDATES["uniform"](x, np.full(11, 0.01))
    assert d.support() == pytest.approx((0.0, 1.15), abs=1e-12)


def _below(dist, c: float) -> float:
    """E[X; X < c] by numerical integration of x f(x) (independent of the closed forms in stall_fit)."""
    lo = dist.support()[0]
    if c <= lo:
        return 0.0
    value, _ = integrate.quad(lambda t: t * dist.pdf(t), lo, c, limit=200)
    return value


@pytest.mark.parametrize(
    "family,dist",
    [
        ("lognormal", stats.lognorm(s=0.8, scale=1.2)),
        ("gamma", stats.gamma(a=2.5, scale=0.4)),
        ("exponential", stats.expon(scale=0.7)),
        ("uniform", stats.uniform(loc=0.5, scale=2.0)),
    ],
)
def test_the_pause_time_a_limit_hides_is_the_partial_mean(family, dist):
    # E[X; X < c] = integral of x f(x) from 0 to c: for the lognormal (median 1.2, sigma 0.8) the closed form is
    # mean * Phi((ln c - mu - sigma^2) / sigma); at c = 1: mu = ln 1.2 = 0.1823, mean = exp(mu + 0.32) = 1.6526,
    # Phi((0 - 0.1823 - 0.64) / 0.8) = Phi(-1.0279) = 0.1520, so 0.2512 s of the mean is hidden, not ~0
    fit = LengthFit(family, dist, float(dist.mean()), {})
    c = np.array([0.3, 1.0, 2.0, 5.0, 1e6])
    expected = [_below(dist, float(v)) for v in c[:-1]] + [float(dist.mean())]
    assert fit.partial_mean(c) == pytest.approx(expected, rel=1e-6, abs=1e-12)
    if family == "lognormal":
        assert fit.partial_mean(np.array([1.0]))[0] == pytest.approx(0.2512, abs=1e-4)
    assert fit.partial_mean(np.array([0.0]))[0] == pytest.approx(0.0, abs=1e-12)


def test_a_constant_length_hides_itself_below_its_limit():
    fit = LengthFit("constant", None, 2.0, {})
    assert list(fit.partial_mean(np.array([1.0, 2.0, 3.0]))) == [0.0, 0.0, 2.0]
    assert list(fit.sf(np.array([1.0, 2.0, 3.0]))) == [1.0, 0.0, 0.0]
    assert fit.mean == 2.0


def test_the_report_reads_quantiles_above_the_median_limit():
    # limits 0.05 (x 7), 0.10 (x 6), 0.40 (x 7): their median is 0.10 (not the largest, 0.40). The share below
    # the limit is F(0.10), and each fitted quantile q is that of the pauses above 0.10: S(p_q) / S(0.10) = 1 - q.
    rng = np.random.default_rng(7)
    x = np.exp(rng.normal(0.0, 0.5, 20)) + 0.5
    c = np.array([0.05] * 7 + [0.10] * 6 + [0.40] * 7)
    fit = fit_lengths(x, c)
    assert fit.family != "constant"
    d, rep = fit.dist, fit.report
    assert rep["share_below_limit"] == pytest.approx(float(d.cdf(0.10)), rel=1e-12)
    for q in (50, 90, 99):
        assert float(d.sf(rep["fitted_above_limit"][f"p{q}"]) / d.sf(0.10)) == pytest.approx(1 - q / 100, rel=1e-6)
    assert rep["measured"]["p50"] == pytest.approx(float(np.median(x)), rel=1e-12)


def test_a_gamma_length_is_written_as_its_mean_and_sd():
    # gamma(shape 2, scale 1.5): mean 3, sd sqrt(2) x 1.5 (closed form); the spec names the family and both
    d = stats.gamma(a=2.0, scale=1.5)
    spec = LengthFit("gamma", d, 3.0, {}).spec(lambda v: round(float(v), 9))
    assert spec == {"gamma": {"mean": 3.0, "sd": round(math.sqrt(2.0) * 1.5, 9)}}


def _independent_truncated_mle(family: str, x: np.ndarray, c: np.ndarray) -> tuple[float, float]:
    """The maximum of sum(log f(x) - log S(c)) written with scipy.stats' own densities (not stall_fit's), from
    several starts: the parameters a second implementation finds."""
    from scipy import optimize

    def nll(t):
        if family == "gamma":
            d = stats.gamma(a=math.exp(t[0]), scale=math.exp(t[1]))
        else:
            d = stats.lognorm(s=math.exp(t[1]), scale=math.exp(t[0]))
        v = -float(np.sum(d.logpdf(x) - d.logsf(c)))
        return v if math.isfinite(v) else 1e300

    best = min(
        (optimize.minimize(nll, s0, method="Nelder-Mead", options={"xatol": 1e-9, "fatol": 1e-12, "maxiter": 5000})
         for s0 in ([0.0, 0.0], [1.0, -1.0], [-1.0, 1.0])),
        key=lambda r: r.fun,
    )  # fmt: skip
    return float(best.x[0]), float(best.x[1])


@pytest.mark.parametrize("family", ["gamma", "lognormal"])
def test_the_truncated_fit_is_the_maximum_of_the_truncated_likelihood(family):
    # pauses seen only above a detection limit c (different per pause, and cutting deep into the distribution):
    # the fitted parameters are those that maximise sum(log f(x) - log S(c)), found again independently
    rng = np.random.default_rng(11)
    truth = stats.gamma(a=1.7, scale=0.8) if family == "gamma" else stats.lognorm(s=0.6, scale=1.2)
    c = rng.choice([0.4, 0.9, 1.5], 4000)
    x = truth.ppf(truth.cdf(c) + rng.uniform(size=c.size) * truth.sf(c))  # draws of X | X > c
    d, k = stall_fit.CANDIDATES[family](x, c)
    assert k == 2
    t0, t1 = _independent_truncated_mle(family, x, c)
    if family == "gamma":
        assert d.kwds["a"] == pytest.approx(math.exp(t0), rel=1e-4)
        assert d.kwds["scale"] == pytest.approx(math.exp(t1), rel=1e-4)
    else:
        assert d.kwds["scale"] == pytest.approx(math.exp(t0), rel=1e-4)
        assert d.kwds["s"] == pytest.approx(math.exp(t1), rel=1e-4)
    # and it recovers the truth within its sampling error (4,000 pauses: a few percent)
    assert float(d.mean()) == pytest.approx(float(truth.mean()), rel=0.08)


# --------------------------------------------------------------------------- sessions as steps


def _call(nid, a, b, m="A", inp=1000, out=100):
    return Node(nid, "call", a, b, call=Call(nid, m, "anthropic", input_tokens=inp, output_tokens=out))


def test_a_tool_starting_with_the_next_call_is_in_the_next_step():
    # c1 [0, 2], a tool [2, 3], c2 [5, 6], a tool [5, 8] that starts at the same instant as c2: it is c2's tool
    # (the latest call that started at or before it), so step 1 has one tool of 1 s and a tool phase of 1 s,
    # step 2 a tool of 3 s and a tool phase of 8 - 6 = 2 s; step 1's lag is 5 - 2 - 1 = 2 s
    nodes = [_call("c1", 0, 2), Node("t1", "tool", 2, 3), _call("c2", 5, 6), Node("t2", "tool", 5, 8)]
    link_nodes(nodes)
    s1, s2 = session_shape(Session("s", "otel", "f", nodes=nodes)).main.steps
    assert (s1.tools, s1.tool_phase, s1.lag) == ([1], 1, 2)
    assert (s2.tools, s2.tool_phase, s2.lag) == ([3], 2, 0)


def test_a_session_without_a_model_call_is_an_empty_thread():
    # only tools and a person's pause: no step to fit, no error
    nodes = [Node("t1", "tool", 0, 2), Node("h1", "human", 2, 5), Node("t2", "tool", 5, 6)]
    link_nodes(nodes)
    shape = session_shape(Session("s", "otel", "f", nodes=nodes))
    assert shape.main.steps == [] and shape.main.model is None and shape.main.length == 0.0
    assert (shape.wall_time_s, shape.human_s) == (6, 3)


# --------------------------------------------------------------------------- context-dependent speed


def test_highest_and_lowest_factors():
    p = Piecewise((0.0, 1000.0, 5000.0), (1.0, 2.0, 0.5))
    assert (p.highest, p.lowest) == (2.0, 0.5)
    assert p.rises == (1.0, -1.5) and p.runs == (1000.0, 4000.0)


def test_a_flat_curve_compiles_to_nothing():
    spec = make(
        scenario(
            [{"call": {"output": 1}}], models={"m": model(context_speed={"tokens": [0, 10], "output_tps_x": [1, 1]})}
        )
    )
    assert compile_context_speed(spec.models["m"].context_speed) is None
    assert compile_context_speed(None) is None


def test_a_closed_workload_is_sized_at_the_fastest_context_speed():
    # one call of 100 tokens at 10 tokens/s, TTFT 0, output speed x2 at large contexts: the fastest a run can be
    # is 100 / (10 x 2) = 5 s. One agent for 1,000 s: over twice the duration it starts at most
    # 1 x (1 + 2000 / 5) = 401 runs, plus a block of 4,096 (at x1, the slowest, it would be 201 + 4,096)
    m = model(ttft=0.0, tps=10.0, context_speed={"tokens": [0, 1000], "output_tps_x": [1, 2], "ttft_x": [3, 1]})
    doc = scenario([{"call": {"output": 100}}], models={"m": m})
    doc["workload"] = {"concurrent": 1, "duration": {"seconds": 1000}}
    est = estimate(compile_plan(make(doc)), 1)
    assert est.runs == 401 + BLOCK
    # with a TTFT of 2 s, its smallest factor (x1, not x3) counts: 2 + 5 = 7 s, 1 + 2000 / 7 runs
    m["ttft"] = 2.0
    est = estimate(compile_plan(make(doc)), 1)
    assert est.runs == pytest.approx(1 + 2000 / 7 + BLOCK, rel=1e-12)
    assert math.isfinite(est.bytes)


# --------------------------------------------------------------------------- queueing in a measurement


def _table(start, latency, ttft, headers=None) -> pd.DataFrame:
    cols = {"start_s": start, "latency_s": latency, "ttft_s": ttft}
    if headers is not None:
        cols["headers_s"] = headers
    return pd.DataFrame(cols)


def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    # requests sent two at a time, each pair ending before the next starts: two in flight for every request
    return np.repeat(np.arange(n // 2) * 10.0, 2), np.full(n, 5.0)


def test_a_wait_for_headers_is_taken_out_of_the_ttft():
    # 22 requests, 2 of them without headers: 20 known (MIN_ROWS, enough), two in flight (overlapped; the rank
    # test cannot run on a constant count). Headers at 0.5 + 0.125 x (i mod 5): h0 = 0.5, median wait 0.25 > 0.1
    # (queued); the first token 0.25 s after the headers (apart). Each known request loses headers - h0.
    start, lat = _pairs(22)
    wait = 0.125 * (np.arange(22) % 5)
    headers = 0.5 + wait
    headers[[3, 7]] = np.nan
    q = find_queueing(_table(start, lat, headers + 0.25, headers))
    expected = np.where(np.isfinite(headers), wait, 0.0)
    assert np.array_equal(q.removed_s, expected)
    assert q.headers_rho is None and q.headers_p is None and q.peak == 2
    assert q.block()["valid_at_concurrency"] is None  # the TTFT left does not grow: valid at any concurrency
    assert "was taken out of the TTFT before the fit" in q.warnings()[0]
    # 19 known rows are too few to tell
    headers[5] = np.nan
    assert not find_queueing(_table(start, lat, headers + 0.25, headers)).removed_s.any()


@pytest.mark.parametrize(
    "case",
    [
        "short wait",  # median headers - h0 = 0.0625 <= 0.1 (headers + h0 would be 1.06)
        "headers with the first token",  # ttft - headers = 0 < 0.02 (ttft + headers would be large)
        "one at a time",  # at most one request in flight: no queue to see
    ],
)
def test_no_wait_is_taken_out_when_the_headers_say_nothing(case):
    start, lat = _pairs(24)
    wait = 0.125 * (np.arange(24) % 5)
    if case == "short wait":
        wait = 0.0625 * (np.arange(24) % 3)
    headers = 0.5 + wait
    ttft = headers if case == "headers with the first token" else headers + 0.25
    if case == "one at a time":
        start = np.arange(24) * 10.0
    q = find_queueing(_table(start, lat, ttft, headers))
    assert not q.removed_s.any() and not q.headers_queued and q.warnings() == []


def test_the_rank_tests_are_spearman_over_the_known_rows():
    # requests in flight 1, 2 or 3 (their count rises with the time since a burst started); headers and TTFT
    # grow with it; one row has no headers. The figures are scipy's spearmanr over the rows known on both sides.
    start = np.concatenate([b * 100.0 + np.array([0.0, 1.0, 2.0]) for b in range(10)])
    lat = np.full(30, 50.0)
    flight = np.tile([1.0, 2.0, 3.0], 10)
    headers = 0.2 + 0.3 * flight + 0.01 * np.arange(30)
    headers[4] = np.nan
    ttft = 1.0 + 2.0 * flight + 0.001 * np.arange(30)
    q = find_queueing(_table(start, lat, ttft, headers))
    known = np.isfinite(headers)
    rho, p = stats.spearmanr(flight[known], headers[known])
    assert (q.headers_rho, q.headers_p) == (pytest.approx(rho, rel=1e-12), pytest.approx(p, rel=1e-9))
    assert q.peak == 3
    # the TTFT still grows after the header wait is taken out: a profile valid at this concurrency only
    assert q.ttft_grows and q.block()["valid_at_concurrency"] == 3
    assert q.warnings()[-1].endswith("Measure below the cap (e.g. --concurrency 1)")


def test_in_flight_counts_the_requests_known_on_both_ends():
    # request 2's latency is unknown: it is counted nowhere and has no count of its own
    out = in_flight([0.0, 1.0, 2.0, 3.0], [10.0, 10.0, np.nan, 10.0])
    assert np.isnan(out[2]) and list(out[[0, 1, 3]]) == [1.0, 2.0, 3.0]


def test_the_measured_range_names_the_terms_left_out():
    use = pd.DataFrame({"input_tokens": [100, 2500.4], "output_tokens": [10, 99.5],
                        "start_s": [0.0, 1.0], "latency_s": [5.0, 5.0]})  # fmt: skip
    assert measured_range(use, ["prefill_tps"]) == {
        "input_tokens": [100, 2501],
        "output_tokens": [10, 100],
        "concurrency": 2,
        "dropped": ["prefill_tps"],
    }
    assert "dropped" not in measured_range(use)

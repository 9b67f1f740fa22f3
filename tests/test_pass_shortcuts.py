"""The fast path's shortcuts give the same bits as the formulas they skip (a second, direct computation).

* ``call_cost(..., uncached=0)`` where ``write = input - read`` (a prompt cache) against computing the
  uncached count; plain zeros left out against subtracting them; a tiered rate included.
* ``first_token`` with a plain-zero cache read against ``input - read`` over arrays.
"""

from __future__ import annotations

import numpy as np

from agentsim.pricing.rates import Rate, Rates, call_cost, rates_from_fields
from agentsim.sim import rules

RATES = rates_from_fields(
    {"input_mtok": 3.0, "output_mtok": 15.0, "cache_read_mtok": 0.3, "cache_write_mtok": 3.75}, "explicit"
)
TIERED = Rates(  # prices that step up past 200k input tokens (rate.at(total_input) is an array)
    Rate(3.0, (200_000,), (6.0,)),
    Rate(0.3, (200_000,), (0.6,)),
    Rate(3.75, (200_000,), (7.5,)),
    Rate(6.0, (200_000,), (12.0,)),
    Rate(15.0, (200_000,), (22.5,)),
    Rate(15.0, (200_000,), (22.5,)),
    requests=Rate(0.5),
)


def _bits(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float64).view(np.int64)


def test_known_uncached_count_gives_the_same_cost():
    rng = np.random.default_rng(7)
    inp = rng.integers(0, 400_000, 10_000)
    read = np.minimum(rng.integers(0, 400_000, 10_000), inp)
    write = inp - read  # a prompt cache: every input token not read is written
    w1h = np.minimum(rng.integers(0, 5_000, 10_000), write)
    out, reas = rng.integers(0, 4_000, 10_000), rng.integers(0, 4_000, 10_000)
    for rates in (RATES, TIERED):
        full = call_cost(rates, inp, read, write, w1h, out, reas)
        short = call_cost(rates, inp, read, write, w1h, out, reas, uncached=0)
        assert np.array_equal(_bits(full), _bits(short))
        # plain zeros (what the fast path passes for constants) against zero arrays
        zeros = np.zeros_like(inp)
        assert np.array_equal(
            _bits(call_cost(rates, inp, 0, 0, 0, out, np.int64(0))),
            _bits(call_cost(rates, inp, zeros, zeros, zeros, out, zeros)),
        )
        # one call with Python numbers, as the DES prices it: the same bits as the array element
        i = 123
        assert _bits(call_cost(rates, *(int(a[i]) for a in (inp, read, write, w1h, out, reas)))) == _bits(full[i])


def test_first_token_plain_zero_read():
    rng = np.random.default_rng(3)
    ttft0 = rng.lognormal(0.0, 0.5, 5_000)
    inp = rng.integers(0, 200_000, 5_000)
    for prefill in (15_000.0, np.inf):
        direct = ttft0 + (inp - np.zeros_like(inp)) / prefill
        for zero in (0, np.int64(0), np.array(0)):
            assert np.array_equal(_bits(rules.first_token(ttft0, inp, zero, prefill)), _bits(direct))
    read = rng.integers(0, 1_000, 5_000)
    assert np.array_equal(_bits(rules.first_token(ttft0, inp, read, 15_000.0)), _bits(ttft0 + (inp - read) / 15_000.0))


def test_summary_percentiles_are_the_bits_of_np_percentile():
    """describe() selects percentiles from a sorted copy, CallStats by partitioning its own copy (means
    taken first, in the order the calls came): the same bits as np.percentile and np.mean of the values as
    they come, ties and repeated values included."""
    from agentsim.sim.results import CallStats, describe

    rng = np.random.default_rng(11)
    ttft = rng.lognormal(0.0, 0.6, 100_001)
    tps = np.round(rng.gamma(16.0, 60.0 / 16.0, 100_001), 1)  # many ties
    stats = CallStats()
    stats.add(ttft, tps)
    got = stats.summary()
    for key, x in (("ttft_s", ttft), ("tps", tps), ("itl_s", 1.0 / tps)):
        p50, p95 = np.percentile(x, (50, 95))
        assert _bits(got[key]["p50"]) == _bits(p50) and _bits(got[key]["p95"]) == _bits(p95), key
        assert _bits(got[key]["mean"]) == _bits(np.mean(x)), key
    d = describe(ttft)
    for p, v in zip((50, 90, 95, 99), np.percentile(ttft, (50, 90, 95, 99)), strict=True):
        assert _bits(d[f"p{p}"]) == _bits(v)


def test_constant_views_are_cached_by_dtype_and_bits():
    """One cached view per value: -0.0 and 0.0, 1 and 1.0 are different values and get their own views."""
    from agentsim.plan.sampling import constant_view
    from agentsim.sim.totals import add_ints

    neg, pos = constant_view(np.float64(-0.0), (3,)), constant_view(np.float64(0.0), (3,))
    assert np.signbit(neg).all() and not np.signbit(pos).any()
    assert constant_view(np.int64(1), (2,)).dtype == np.int64
    assert constant_view(np.float64(1), (2,)).dtype == np.float64
    view = constant_view(np.int64(7), (4, 2))
    assert view is constant_view(np.int64(7), (4, 2)) and not view.flags.writeable and not any(view.strides)
    # sums of constant counts stay views of one value: 3 + 4 in every run
    s = add_ints(constant_view(np.int64(3), (5,)), constant_view(np.int64(4), (5,)))
    assert s.tolist() == [7] * 5 and not any(s.strides)
    assert add_ints(np.arange(3), constant_view(np.int64(1), (3,))).tolist() == [1, 2, 3]

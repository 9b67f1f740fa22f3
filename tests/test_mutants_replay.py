"""The re-timing and re-pricing core of :mod:`agentsim.replay.retime`, on hand-made sessions whose replayed
timelines are worked out in the comments (docs/validation.md §7)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from agentsim.pricing.rates import Rate, Rates
from agentsim.replay import retime
from agentsim.replay.retime import split_call, timeline
from agentsim.traces.sessions import Call, Node, Session, link_nodes

# --------------------------------------------------------------------------- the split


@pytest.mark.parametrize(
    ("args", "kw", "expected"),
    [
        ((10.0, 2.0, 5.0), {}, (2.0, 8.0)),  # slower than expected: the expected TTFT, the rest decode
        ((7.0, 2.0, 5.0), {}, (2.0, 5.0)),  # exactly as expected
        ((3.5, 2.0, 5.0), {}, (1.0, 2.5)),  # faster: in proportion 2 : 5
        ((14.0, 2.0, 5.0), {"method": "proportional"}, (4.0, 10.0)),
        ((10.0, 2.0, 5.0), {"recorded_ttft": 3.0}, (3.0, 7.0)),  # a recorded TTFT is used as is
        ((10.0, 2.0, 5.0), {"recorded_ttft": -1.0}, (0.0, 10.0)),  # ... clipped at 0
        ((10.0, 2.0, 5.0), {"recorded_ttft": 12.0}, (10.0, 0.0)),  # ... and at the duration
        ((10.0, 2.0, 5.0), {"recorded_ttft": 0.0}, (0.0, 10.0)),
        ((0.0, 2.0, 5.0), {"recorded_ttft": 1.0}, (0.0, 0.0)),  # nothing to split
        ((-1.0, 2.0, 5.0), {}, (-1.0, 0.0)),
        ((5.0, 0.0, 0.0), {}, (0.0, 5.0)),  # no expectation, ttft-first: all decode
        ((5.0, 0.0, 0.0), {"method": "proportional"}, (5.0, 0.0)),  # no expectation to split by
        ((4.0, 0.0, 2.0), {"method": "proportional"}, (0.0, 4.0)),
    ],
)
def test_split_call_by_hand(args, kw, expected):
    got = split_call(*args, **kw)
    assert got == pytest.approx(expected, rel=1e-12, abs=1e-15)
    assert got[0] + got[1] == pytest.approx(args[0], rel=1e-15)


# --------------------------------------------------------------------------- timelines


def call(id_, start, end, **kw) -> Node:
    return Node(id_, "call", start, end, call=Call(id_, "m", None), **kw)


def session(nodes) -> Session:
    link_nodes(nodes)
    return Session("s", "test", "-", nodes=nodes)


def test_sequential_session_with_lags_a_human_and_a_tool():
    # recorded: call c1 100-102, (lag 0.5) human 102.5-110, tool 110-113, (lag 0.2) call c2 113.2-114
    s = session(
        [call("c1", 100, 102), Node("h", "human", 102.5, 110), Node("t", "tool", 110, 113), call("c2", 113.2, 114)]
    )
    # replayed: c1 takes 0.5 + 1.0 = 1.5 s -> 100-101.5; h 102-109.5; t 109.5-112.5; c2 (0.3 + 0.2) 112.7-113.2
    tl = timeline(s, {"c1": (0.5, 1.0), "c2": (0.3, 0.2)})
    assert tl.origin == 100
    assert tl.start == pytest.approx({"c1": 100.0, "h": 102.0, "t": 109.5, "c2": 112.7})
    assert tl.end == pytest.approx({"c1": 101.5, "h": 109.5, "t": 112.5, "c2": 113.2})
    assert tl.wall_time_s == pytest.approx(13.2, rel=1e-12)
    assert tl.time_s == pytest.approx(
        {"model": 2.0, "ttft": 0.8, "decode": 1.2, "tool": 3.0, "human": 7.5, "other": 0.7}, rel=1e-12
    )
    assert list(tl.time_s) == list(retime.TIME_KINDS)


def test_ties_follow_the_earliest_node_on_the_critical_path():
    # c1 0-1, then a tool and a human wait side by side 1-4 (the tool recorded first), then c2 4-5
    s = session([call("c1", 0, 1), Node("t", "tool", 1, 4), Node("h", "human", 1, 4), call("c2", 4, 5)])
    tl = timeline(s, {"c1": (0.5, 0.5), "c2": (0.5, 0.5)})
    assert tl.wall_time_s == 5.0
    # c2's start is set by the tied predecessors' first one, the tool: 3 s of tool, none of human
    assert (tl.time_s["tool"], tl.time_s["human"], tl.time_s["other"]) == (3.0, 0.0, 0.0)
    # the same with the human recorded first
    s = session([call("c1", 0, 1), Node("h", "human", 1, 4), Node("t", "tool", 1, 4), call("c2", 4, 5)])
    tl = timeline(s, {"c1": (0.5, 0.5), "c2": (0.5, 0.5)})
    assert (tl.time_s["tool"], tl.time_s["human"]) == (0.0, 3.0)


def test_tied_roots_end_the_session_at_the_first_of_them():
    # two top-level tools ending together: the wall time is theirs, the critical path the first's
    s = session([Node("t", "tool", 0, 3), Node("h", "human", 0, 3)])
    tl = timeline(s, {})
    assert tl.wall_time_s == 3.0
    assert (tl.time_s["tool"], tl.time_s["human"]) == (3.0, 0.0)


def test_a_container_lasts_its_replayed_contents_plus_lead_and_tail():
    # agent container a 10-20 holds call x 12-17 and tool y 12-15 (1 s... lead 2 s, tail 3 s after x)
    s = session(
        [
            Node("a", "agent", 10, 20),
            call("x", 12, 17, parent="a"),
            Node("y", "tool", 12, 15, parent="a"),
        ]
    )
    # x replayed in 1 + 1 = 2 s: 12-14; y 12-15 is now the last child; a ends 15 + (20 - 17) = 18
    tl = timeline(s, {"x": (1.0, 1.0)})
    assert (tl.start["x"], tl.end["x"], tl.end["y"], tl.end["a"]) == (12.0, 14.0, 15.0, 18.0)
    assert tl.wall_time_s == 8.0
    # critical path: a's tail (18 - 15 = 3 s, other), the tool y (3 s), the lead 12 - 10 = 2 s (other)
    assert tl.time_s == pytest.approx(
        {"model": 0.0, "ttft": 0.0, "decode": 0.0, "tool": 3.0, "human": 0.0, "other": 5.0}
    )
    # x slower than y: x is the last child
    tl = timeline(s, {"x": (1.0, 5.0)})
    assert (tl.end["x"], tl.end["a"], tl.wall_time_s) == (18.0, 21.0, 11.0)
    assert tl.time_s == pytest.approx(
        {"model": 6.0, "ttft": 1.0, "decode": 5.0, "tool": 0.0, "human": 0.0, "other": 5.0}
    )


def test_an_empty_container_of_unknown_kind_counts_as_other():
    s = session([call("c", 0, 2), Node("g", "agent", 2, 6)])
    tl = timeline(s, {"c": (1.0, 1.0)})
    assert tl.time_s == pytest.approx(
        {"model": 2.0, "ttft": 1.0, "decode": 1.0, "tool": 0.0, "human": 0.0, "other": 4.0}
    )


# --------------------------------------------------------------------------- costs


def test_costs_per_call_with_each_calls_own_table_and_nan_where_unpriced():
    # call 0: 1,000 input (200 read, 300 written, 100 of them 1-hour), 500 output of which 100 reasoning
    cols = {"input": [1000, 1000, 2000], "cache_read": [200, 200, 0], "cache_write": [300, 300, 0]}
    cols |= {"cache_write_1h": [100, 100, 0], "output": [500, 500, 10], "reasoning": [100, 100, 0]}
    base = pd.DataFrame({f"{k}_tokens": v for k, v in cols.items()})
    a = Rates(Rate(1.0), Rate(0.1), Rate(1.25), Rate(2.0), Rate(5.0), Rate(8.0))
    b = Rates(Rate(10.0), Rate(10.0), Rate(10.0), Rate(10.0), Rate(10.0), Rate(10.0))
    out = retime._costs(base, [a, None, b])
    # a: uncached 500 x 1 + 200 x 0.1 + 200 x 1.25 + 100 x 2 + 400 x 5 + 100 x 8 = 3,770 per million
    assert out[0] == pytest.approx(3770e-6, rel=1e-12)
    assert math.isnan(out[1])
    # b: 2,010 tokens at $10 per million
    assert out[2] == pytest.approx(2010 * 10e-6, rel=1e-12)
    assert retime._costs(base, [None, None, None]).tolist() == pytest.approx([np.nan] * 3, nan_ok=True)


def test_fsum_adds_exactly():
    assert retime._fsum(pd.Series([0.1] * 10)) == 1.0
    assert retime._fsum([1e16, 1.0, -1e16]) == 1.0


def test_split_call_of_short_calls_and_a_call_exactly_as_expected():
    # half a second, expected 0.1 + 0.2: slower than expected, so 0.1 TTFT and the rest decode
    assert split_call(0.5, 0.1, 0.2) == pytest.approx((0.1, 0.4), rel=1e-12)
    # expectations adding up to under a second still split in proportion: 1.0 x 0.2 / 0.5 = 0.4
    assert split_call(1.0, 0.2, 0.3, method="proportional") == pytest.approx((0.4, 0.6), rel=1e-12)
    # a call lasting exactly the expected time keeps the expected TTFT to the last bit (the proportional
    # split, d x (t / d), rounds this one to 3.8655710476146994)
    t, e = 3.865571047614699, 2.584208332654959
    d = t + e
    assert split_call(d, t, e) == (t, d - t)


def test_tied_children_end_a_container_at_the_first_of_them():
    # agent a 0-10 holds a tool and a human wait, both 1-5: the tool (recorded first) is the last child
    s = session([Node("a", "agent", 0, 10), Node("t", "tool", 1, 5, parent="a"), Node("h", "human", 1, 5, parent="a")])
    tl = timeline(s, {})
    assert tl.wall_time_s == 10.0
    assert (tl.time_s["tool"], tl.time_s["human"], tl.time_s["other"]) == (4.0, 0.0, 6.0)

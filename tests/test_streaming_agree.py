"""Differential test: the DES and the fast path agree to the last bit on random streaming scenarios.

The random scenarios of tests/test_engines_agree.py (parallel joins and races, fan-outs, repeats, choices,
subagents, caches, speed tiers, model swaps) are decorated at random with contract v1.1: stream
descriptions (chunks, jitter, stalls) per model and tier, consumers, interruptions and pipelines.
"""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import test_engines_agree as base
from agentsim.plan.compiler import compile_plan
from conftest import make

stream = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {
            "chunk_tokens": st.sampled_from([1, 4, {"choice": {"values": [1, 3, 9]}}]),
            "jitter_cv": st.sampled_from([0, 0.5, 1.5]),
            "stall": st.sampled_from([{"p": 0, "seconds": 0}, {"p": 0.5, "seconds": {"exponential": {"mean": 2}}}]),
        }
    ),
)
consumer = st.sampled_from(
    [
        None,
        {"reader": {"words_per_min": 250}},
        {"reader": {"tokens_per_s": 40}},
        {"speech": {"first_audio": {"uniform": {"low": 0.1, "high": 0.5}}, "tokens_per_s": 3, "sentence_tokens": 12}},
        {"speech": {"tokens_per_s": 8, "sentence_tokens": {"uniform": {"low": 3, "high": 30}}}},
        {"render": {"tokens": 30}},
        {"render": {"tokens": "all"}, "qoe": {"expected_ttft": 0.5, "tokens_per_s": 20}},
    ]
)
interrupt = st.sampled_from([None, {"p": 0.5, "after_first_token": {"exponential": {"mean": 2}}}])
pipeline_body = st.sampled_from(
    [
        [{"tool": {"latency": {"exponential": {"mean": 1}}, "output": 30}}],
        [{"call": {"model": "b", "output": 20}}, {"wait": {"latency": 0.5}}],
    ]
)
after = st.sampled_from([{"tokens": 1}, {"tokens": 25}, "first_sentence"])


@st.composite
def streaming_scenarios(draw):
    doc = copy.deepcopy(draw(base.scenarios()))
    for m in doc["models"].values():
        s = draw(stream)
        if s is not None:
            m["stream"] = s
        for tier in m.get("speeds", {}).values():
            if draw(st.booleans()):
                tier["stream"] = {"chunk_tokens": 2, "jitter_cv": 0.3}

    def decorate(steps: list) -> list:
        out = []
        for step in steps:
            (kind,) = step
            spec = step[kind]
            if kind == "call":
                c = draw(consumer)
                if c is not None:
                    spec["consumer"] = c
                i = draw(interrupt)
                if i is not None:
                    if c is not None and "speech" in c and draw(st.booleans()):
                        i = {"p": 0.5, "after_first_audio": {"uniform": {"low": 0, "high": 3}}}
                    spec["interrupt"] = i
                out.append(step)
                if draw(st.integers(0, 3)) == 0:
                    out.append({"pipeline": {"after": draw(after), "steps": draw(pipeline_body)}})
                continue
            if kind == "parallel":
                spec["branches"] = [decorate(b) if isinstance(b, list) else decorate([b]) for b in spec["branches"]]
            elif kind in ("fanout", "repeat"):
                spec["steps"] = decorate(spec["steps"])
            elif kind == "choose":
                for o in spec["options"]:
                    o["steps"] = decorate(o["steps"])
            out.append(step)
        return out

    doc["agent"]["steps"] = decorate(doc["agent"]["steps"])
    if draw(st.booleans()):
        doc["consumer"] = {"reader": {"tokens_per_s": 6}}
    return doc


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(streaming_scenarios())
def test_random_streaming_scenarios_agree(doc):
    sc = make(doc)
    plan = compile_plan(sc)
    a, b = base.both(plan, 24, sc.seed)
    base.assert_same(a, b)
    c = a.calls
    if len(c):
        assert (c["t_start"] <= c["t_end"]).all()
        assert (c["cost_usd"] >= 0).all()

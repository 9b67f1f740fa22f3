"""The summary-only path: per-call samples stop at the cap, and summary.json does not depend on it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agentsim.plan.compiler import compile_plan
from agentsim.sim import results as results_mod
from agentsim.sim import simulation
from conftest import make, model, scenario

# Calls that are not always made (a repeat of 2 to 6 iterations), on two models, over three blocks.
DOC = scenario(
    [
        {"call": {"output": 50, "model": "m"}},
        {
            "repeat": {
                "times": {"uniform": {"low": 2, "high": 6}},
                "steps": [{"call": {"output": {"lognormal": {"median": 80, "p90": 200}}, "model": "g"}}],
            }
        },
    ],
    models={
        "m": model(ttft={"lognormal": {"median": 1, "p90": 3}}),
        "g": model(tps={"gamma": {"mean": 60, "sd": 20}}),
    },
    variants={"base": {}, "all-m": {"model": {"g": "m"}}},
    runs=9000,
)


@pytest.mark.parametrize("cap", [1000, 5000, 30000, 10**9])
def test_capped_samples_give_the_same_summary_as_collecting_all(monkeypatch, cap):
    monkeypatch.setattr(results_mod, "PER_CALL_CAP", cap)
    monkeypatch.setattr(simulation, "PER_CALL_CAP", cap)
    plan = compile_plan(make(DOC))
    capped = simulation.simulate_plan(plan, 9000, 3, engine="fastpath")  # one process: stops at the cap
    # Independently: collect every completed call from the calls table, block by block in node order.
    calls = capped.calls
    for name in plan.variants:
        c = calls[(calls["variant"] == name) & (calls["status"] == "ok")]
        block = c["run"].to_numpy() // 4096
        order = np.lexsort((c["instance"].to_numpy(), c["run"].to_numpy(), c["node"].to_numpy(), block))
        ttft = c["ttft_s"].to_numpy()[order][:cap]
        got = capped.summary_dict()["variants"][name]["per_call"]["ttft_s"]
        assert got["mean"] == pytest.approx(float(np.mean(ttft)), rel=1e-12)
        assert got["p95"] == pytest.approx(float(np.percentile(ttft, 95)), rel=1e-12)


def test_summary_bytes_do_not_depend_on_workers_cap_or_reading_calls(monkeypatch):
    monkeypatch.setattr(results_mod, "PER_CALL_CAP", 7000)
    monkeypatch.setattr(simulation, "PER_CALL_CAP", 7000)
    plan = compile_plan(make(DOC))
    one = simulation.simulate_plan(plan, 9000, 5, engine="fastpath")
    text = one.to_json()
    two = simulation.simulate_plan(plan, 9000, 5, engine="fastpath", workers=2)  # collects all, trims after
    assert two.to_json() == text
    assert len(one.calls) > 0 and one.to_json() == text  # building the calls table changes nothing
    des = simulation.simulate_plan(plan, 9000, 5, engine="des")
    assert json.loads(des.to_json())["variants"] == json.loads(text)["variants"]

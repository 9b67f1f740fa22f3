from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

import agentsim
from agentsim.plan.compiler import compile_plan
from agentsim.plan.validation import parse
from agentsim.sim.simulation import simulate_plan

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ROOT / "scenarios"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def make(doc: dict):
    """A scenario from a dict (deep-copied, so tests can reuse templates)."""
    return parse(copy.deepcopy(doc))


def run(doc: dict, runs: int | None = None, seed: int | None = None, engine: str = "des"):
    sc = make(doc)
    plan = compile_plan(sc)
    return simulate_plan(plan, runs or sc.runs, sc.seed if seed is None else seed, engine=engine)


def model(price=None, ttft=1.0, tps=100.0, **kw) -> dict:
    m = {"price": price or {"input_mtok": 3, "output_mtok": 15}, "ttft": ttft, "output_tps": tps}
    m.update(kw)
    return m


def scenario(steps, models=None, context=None, variants=None, runs=1, **kw) -> dict:
    doc = {
        "name": "t",
        "seed": 1,
        "runs": runs,
        "models": models or {"m": model()},
        "agent": {"steps": steps},
    }
    if context is not None:
        doc["agent"]["context"] = context
    if variants is not None:
        doc["variants"] = variants
    doc.update(kw)
    return doc


@pytest.fixture
def bundled():
    return sorted(SCENARIOS.glob("*.yaml"))


def assert_frames_identical(a, b):
    assert list(a.columns) == list(b.columns)
    assert len(a) == len(b)
    for c in a.columns:
        x, y = a[c].to_numpy(), b[c].to_numpy()
        if x.dtype == object or y.dtype == object:
            assert list(x) == list(y), c
        else:
            assert np.array_equal(x, y, equal_nan=True), c


__all__ = ["agentsim", "assert_frames_identical", "make", "model", "run", "scenario"]


def barge_in_turn(runs: int = 1) -> dict:
    """A voice-style turn with every phase before the answer and a barge-in, timed by hand (seconds from the ask).

    The person stops speaking at 0 (the ask); end-pointing 0.2 s + STT 0.3 s: listen 0 -> 0.5. Retrieval 0.6 s:
    0.5 -> 1.1. A routing call (TTFT 2 s, 100 tokens at 50 tok/s = 2 s): 1.1 -> 5.1. The answer is sent at 5.1 s,
    its first token comes 1 s later (6.1 s from the ask), then its 100 tokens evenly to 5.1 + 1 + 100/50 = 8.1 s
    (gap 2/99) in variant ``fast``, to 16.1 s (gap 10/99) in variant ``slow`` (10 tok/s). A reader at 5 tok/s reads
    token i at 6.1 + 0.2 i. The person barges in 3.1 s after the first word, at 9.2 s: fast has finished (all 100
    tokens); slow is cut with (i - 1) 10/99 <= 3.1: 31 tokens; the reader stops with 15 tokens read (9.1 <= 9.2).
    """
    price = {"input_mtok": 1, "output_mtok": 10}
    answer = {"name": "answer", "model": "fast", "output": 100, "consumer": {"reader": {"tokens_per_s": 5}},
              "interrupt": {"p": 1, "after_first_word": 3.1}}  # fmt: skip
    steps = [
        {"listen": {"name": "caller", "end_of_speech": 0.2, "stt": 0.3}},
        {"tool": {"name": "retrieve", "latency": 0.6}},
        {"call": {"name": "route", "model": "router", "output": 100}},
        {"call": answer},
    ]
    models = {"router": model(ttft=2.0, tps=50.0, price=price), "fast": model(ttft=1.0, tps=50.0, price=price),
              "slow": model(ttft=1.0, tps=10.0, price=price)}  # fmt: skip
    return scenario(steps, models=models, variants={"fast": {}, "slow": {"model": {"answer": "slow"}}}, runs=runs)

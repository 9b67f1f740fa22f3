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

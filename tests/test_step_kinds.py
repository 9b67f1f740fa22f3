"""Step kinds come from one registry: a kind written outside the package, by the recipe, runs like the others.

``tests/toy_kinds.py`` defines two kinds in one module each and touches nothing in ``src/``: ``pause``
(both engines) and ``nap`` (DES-only). A fresh interpreter imports it, then reads scenarios that use
them through ``agentsim.simulate``; the numbers are checked by hand. Every kind of the registry also
has a module of its own, with both engine forms or a stated reason to leave the kind to the DES.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentsim.model.registry import step_kinds

TESTS = Path(__file__).resolve().parent

_SCRIPT = """
import json, sys
sys.path.insert(0, TESTS)
import toy_kinds  # registers pause and nap
import agentsim
from agentsim.sim.simulation import EngineError

model = {"price": {"input_mtok": 1, "output_mtok": 2}, "ttft": 0.5, "output_tps": 50}
doc = {
    "name": "toy", "runs": 20, "seed": 3, "models": {"m": model},
    "agent": {"context": {"grows": True}, "steps": [
        {"pause": {"name": "think", "seconds": 2, "tokens": 100}},
        {"call": {"input": 10, "output": 50}},
    ]},
}
out = {}
for engine in ("des", "fastpath"):
    res = agentsim.simulate(doc, engine=engine)
    out[engine] = res.summary_dict()["variants"]["baseline"]
    out[engine + "_spans"] = sorted(set(res.spans["kind"]))
nap = {**doc, "agent": {"steps": [{"nap": {"seconds": 1.5}}, {"call": {"output": 50}}]}}
out["nap_engine"] = agentsim.simulate(nap).engine
out["nap_wall"] = agentsim.simulate(nap).summary_dict()["variants"]["baseline"]["wall_time_s"]["mean"]
try:
    agentsim.simulate(nap, engine="fastpath")
except EngineError as exc:
    out["nap_refused"] = str(exc)
print(json.dumps(out))
"""


def test_a_toy_kind_from_its_own_module_runs_on_both_engines():
    code = _SCRIPT.replace("TESTS", repr(str(TESTS)))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    des, fast = out["des"], out["fastpath"]
    assert des == fast  # the same numbers from both engines
    # by hand: 2 s pause, then TTFT 0.5 s + 50 tokens / 50 tok/s; the call sends 100 + 10 tokens
    assert des["wall_time_s"]["mean"] == pytest.approx(3.5)
    assert des["breakdown_s"]["wait"] == pytest.approx(2.0)
    assert des["tokens"]["input"] == 110
    assert des["cost_usd"]["mean"] == pytest.approx(110e-6 * 1 + 50e-6 * 2)
    assert out["des_spans"] == out["fastpath_spans"] == ["pause"]
    # the DES-only kind: chosen for the DES, refused by the fast path with the kind's own reason
    assert out["nap_engine"] == "des"
    assert out["nap_wall"] == pytest.approx(1.5 + 0.5 + 1.0)
    assert "a nap has no fast-path form" in out["nap_refused"]


@pytest.mark.parametrize("name", list(step_kinds()))
def test_every_registered_kind_has_one_module_with_its_forms(name):
    kind = step_kinds()[name]
    module = sys.modules[kind.step.__module__]
    assert kind.compile.__module__ == kind.des.__module__ == module.__name__
    assert module.__name__ == f"agentsim.steps.{name}"
    assert (kind.fast is not None and kind.fast.__module__ == module.__name__) or kind.des_only
    assert module.__doc__ and f"``{name}:" in module.__doc__  # the module teaches its kind


_CONSUMER_SCRIPT = """
import json, sys
sys.path.insert(0, TESTS)
import toy_kinds  # registers the glance consumer
import agentsim
from agentsim.analysis.stream_timeline import token_timelines
from agentsim.plan.validation import parse
from agentsim.sim.stream_metrics import table_rows

doc = {
    "name": "toy-consumer", "runs": 5, "seed": 3,
    "models": {"m": {"price": {"input_mtok": 1, "output_mtok": 2}, "ttft": 1.0, "output_tps": 20}},
    "agent": {"steps": [
        {"call": {"name": "answer", "output": 40, "consumer": {"glance": {"tokens": 21}}}},
    ]},
}
out = {}
for e in ("des", "fastpath"):
    out[e] = agentsim.simulate(doc, engine=e).summary_dict()["variants"]["baseline"]["streaming"]
frame = token_timelines(parse(doc), "answer")
out["glanced"] = frame["glanced_s"].dropna().tolist()
out["rows"] = [label for _, label in table_rows()]
print(json.dumps(out))
"""


def test_a_toy_consumer_from_its_own_module_reaches_the_summary_the_page_and_the_table():
    code = _CONSUMER_SCRIPT.replace("TESTS", repr(str(TESTS)))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["des"] == out["fastpath"]
    # 40 tokens evenly from t = 1 s (TTFT) to 3 s (40 / 20 tok/s): token 21 at 1 + 20 x 2/39 s
    glance = out["des"]["calls"]["answer"]["glance_s"]
    assert glance["mean"] == pytest.approx(1 + 20 * 2 / 39)
    assert out["des"]["calls"]["answer"]["ttft_s"]["mean"] == pytest.approx(1.0)
    assert len(out["glanced"]) == 21 and out["glanced"][-1] == pytest.approx(1 + 20 * 2 / 39)
    assert "glanced" in out["rows"]

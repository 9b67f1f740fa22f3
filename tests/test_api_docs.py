"""Every ```python block of docs/api.md runs as it stands (from the repository root), and
``agentsim.simulate`` accepts plain data with errors that name ``<dict>`` and the dotted path."""

from __future__ import annotations

import os
import re

import pytest

import agentsim
from conftest import ROOT

BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text(encoding="utf-8"), re.S)


def test_api_page_has_examples():
    assert len(BLOCKS) >= 6


PAGE = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
NAMES = sorted(set(re.findall(r"`(agentsim(?:\.[A-Za-z_][A-Za-z0-9_]*)+)", PAGE)))


def _resolve(dotted: str):
    """A dotted name as the page writes it: the longest importable module, then attributes."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


@pytest.mark.parametrize("name", NAMES)
def test_every_name_on_the_page_exists(name):
    # e.g. `agentsim.plan.validation.parse` (the page once said `agentsim.validation.parse`, which never existed)
    assert _resolve(name) is not None


def test_spans_are_what_the_page_says():
    res = agentsim.simulate(ROOT / "scenarios" / "coding-agent.yaml", runs=3, seed=1)
    assert "one row per step that only takes time (a tool,\n  a wait, a listen" in PAGE
    assert set(res.spans["kind"]) <= {"tool", "wait"} and len(res.spans)
    assert (res.spans["slot"] == res.spans["kind"]).all()  # a tool's time goes to tool, a wait's to wait
    assert not set(res.spans["step"]) & set(res.calls["step"])  # calls are in res.calls, not in res.spans


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_api_example_runs(index):
    import matplotlib

    matplotlib.use("Agg")
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        exec(compile(BLOCKS[index], f"docs/api.md block {index}", "exec"), {})
    finally:
        os.chdir(cwd)
        import matplotlib.pyplot as plt

        plt.close("all")


def test_simulate_dict_error_names_dict_and_path():
    data = {
        "name": "x",
        "models": {"m": {"price": {"input_mtok": 1, "output_mtok": 5}, "ttft": 0.5, "output_tps": 100}},
        "agent": {"steps": [{"call": {"model": "mm", "input": 1000, "output": 200}}]},
    }
    with pytest.raises(agentsim.ScenarioError) as exc:
        agentsim.simulate(data, runs=5)
    assert "<dict>" in str(exc.value)
    assert "agent.steps[0].call.model" in str(exc.value)


def test_simulate_dict_equals_file(tmp_path):
    import yaml

    path = ROOT / "scenarios" / "chat-turn.yaml"
    a = agentsim.simulate(path, runs=30, seed=3)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if "extends" in data or "profile" in str(data):
        pytest.skip("the file refers to other files")
    b = agentsim.simulate(data, runs=30, seed=3)
    assert a.runs.equals(b.runs)


def test_simulate_rejects_other_types():
    with pytest.raises(TypeError):
        agentsim.simulate(42)

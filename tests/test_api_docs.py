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

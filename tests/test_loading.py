"""Loading scenario files: formats, extends, empirical data files, and cross-field errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

import agentsim
from agentsim.model.loading import ScenarioError
from conftest import FIXTURES, ROOT, model, scenario

GOOD = FIXTURES / "good.yaml"


def test_json_and_toml_read_like_yaml(tmp_path):
    import yaml

    doc = yaml.safe_load(GOOD.read_text())
    (tmp_path / "s.json").write_text(json.dumps(doc))
    toml = (
        'name = "bad"\n[models.opus]\nttft = 1.0\noutput_tps = 60\n[models.opus.price]\ninput_mtok = 5\n'
        "output_mtok = 25\n[models.opus.speeds.fast]\noutput_tps_x = 2.5\nprice_x = 6\n"
        '[[agent.steps]]\ncall = {name = "plan", model = "opus", output = 100}\n'
        "[[agent.steps]]\n[agent.steps.repeat]\ntimes = 3\n"
        'steps = [{call = {name = "act", model = "opus", output = 50}}]\n'
    )
    (tmp_path / "s.toml").write_text(toml)
    a = agentsim.load(GOOD)
    for f in ("s.json", "s.toml"):
        assert agentsim.load(tmp_path / f).model_dump() == a.model_dump()


def test_json_errors_have_lines(tmp_path):
    import yaml

    doc = yaml.safe_load(GOOD.read_text())
    doc["models"]["opus"]["output_tps"] = -3
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc, indent=2))
    with pytest.raises(ScenarioError) as e:
        agentsim.load(path)
    item = e.value.items[0]
    assert item.path == ("models", "opus", "output_tps") and item.line is not None
    assert '"output_tps": -3' in path.read_text().splitlines()[item.line - 1]


def test_extends_merges_mappings_and_replaces_the_rest(tmp_path):
    (tmp_path / "child.yaml").write_text(
        f"extends: {GOOD}\nname: child\nmodels:\n  opus: {{output_tps: 120}}\nruns: 7\n"
    )
    child = agentsim.load(tmp_path / "child.yaml")
    assert child.name == "child" and child.runs == 7
    assert child.models["opus"].output_tps == 120.0
    assert child.models["opus"].price.input_mtok == 5.0  # kept from the base
    (tmp_path / "self.yaml").write_text("extends: self.yaml\nname: x\n")
    with pytest.raises(ScenarioError, match="cannot extend itself"):
        agentsim.load(tmp_path / "self.yaml")


def test_empirical_values_from_a_csv_file(tmp_path):
    (tmp_path / "lat.csv").write_text("latency_s,other\n1.0,x\n2.0,y\n4.0,z\n")
    doc = scenario([{"tool": {"latency": {"empirical": {"file": "lat.csv", "column": "latency_s"}}}}], runs=3000)
    import yaml

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = agentsim.simulate(path)
    wall = res.runs["wall_time_s"].to_numpy()
    assert set(np.unique(wall)) == {1.0, 2.0, 4.0}
    se = wall.std() / np.sqrt(len(wall))
    assert abs(wall.mean() - 7 / 3) < 4 * se


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ({"file": "missing.csv", "column": "x"}, "does not exist"),
        ({"file": "lat.csv", "column": "latency"}, "did you mean 'latency_s'"),
        ({"file": "lat.csv", "column": "other"}, "has no numbers"),
    ],
)
def test_empirical_file_errors(tmp_path, spec, words):
    import yaml

    (tmp_path / "lat.csv").write_text("latency_s,other\n1.0,x\n2.0,y\n")
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario([{"wait": {"latency": {"empirical": spec}}}])))
    with pytest.raises(ScenarioError) as e:
        agentsim.load(path)
    msg = str(e.value)
    assert words in msg and "agent.steps[0].wait.latency.empirical" in msg


@pytest.mark.parametrize(
    ("doc", "words"),
    [
        (
            scenario([{"subagent": {"workflow": "w"}}], workflows={"w": {"steps": [{"subagent": {"workflow": "w"}}]}}),
            "calls itself",
        ),
        (
            scenario([{"subagent": {"workflow": "wf"}}], workflows={"w": {"steps": [{"wait": {"latency": 1}}]}}),
            "did you mean 'w'",
        ),
        (
            scenario([{"call": {"output": 1}}], models={"m": model(fallback={"model": "m", "after": 1})}),
            "cannot fall back to itself",
        ),
        (
            scenario([{"call": {"output": 1}}], models={"m": model(fallback={"model": "n", "after": 1})}),
            "fallback model 'n'",
        ),
        (scenario([{"parallel": {"join": {"k": 3}, "branches": [{"wait": {"latency": 1}}]}}]), "only 1 branches"),
        (scenario([{"call": {"output": 1}}], limits={"a": {"models": ["m@turbo"], "rpm": 1}}), "no speed tier 'turbo'"),
        (scenario([{"call": {"output": 1}}], limits={"a": {"models": ["m"]}}), "sets no limit"),
        (scenario([{"call": {"output": {"normal": {"mean": 10, "sd": 5}}}}]), "add min: 0"),
        (scenario([{"call": {"output": 1}}], workload={"arrivals": {"per_hour": 5}}), "needs a duration"),
    ],
)
def test_cross_field_errors(doc, words):
    from agentsim.plan.compiler import compile_plan
    from agentsim.plan.validation import parse

    with pytest.raises(ScenarioError) as e:
        compile_plan(parse(doc))
    assert words in str(e.value)


def test_a_parallel_written_as_a_list_has_the_spec_of_its_mapping_form():
    # ParallelStep.spec wraps the validated branches without validating them again: it must equal the
    # spec pydantic builds from the mapping spelling {branches: [...]}, defaults and fields set included
    from agentsim.steps.parallel import ParallelSpec, ParallelStep

    call = {"call": {"name": "a", "model": "m", "output": 10}}
    branches = [call, [{"tool": {"latency": 1}}, {"wait": {"latency": 2}}]]
    listed = ParallelStep.model_validate({"parallel": branches}).spec
    mapped = ParallelSpec.model_validate({"branches": branches})
    assert listed == mapped
    assert listed.model_dump() == mapped.model_dump()
    assert listed.model_fields_set == mapped.model_fields_set == {"branches"}
    assert (listed.name, listed.join) == (None, "all")


def test_a_scenario_is_compiled_once_and_a_changed_copy_anew():
    # loading compiles (to report the compiler's problems); every command compiles again: the same plan
    import copy
    import pickle

    from agentsim.plan.compiler import compile_plan
    from agentsim.plan.validation import load

    a, b = load(ROOT / "scenarios" / "coding-agent.yaml"), load(ROOT / "scenarios" / "coding-agent.yaml")
    plan = compile_plan(a)
    assert compile_plan(a) is plan and plan.scenario is a
    assert a == b and compile_plan(b) is not plan  # the kept plan is not part of the scenario's value
    changed = a.model_copy(update={"runs": 7})  # shares the private attributes, but is another scenario
    assert compile_plan(changed) is not plan and compile_plan(changed).scenario is changed
    for other in (pickle.loads(pickle.dumps(a)), copy.deepcopy(a)):  # the plan is not carried along
        assert other == a and compile_plan(other) is not plan and compile_plan(other).scenario is other
    assert len(pickle.dumps(a)) == len(pickle.dumps(a.model_copy()))


def test_a_command_keeps_what_it_read_out_of_later_collections_until_it_ends():
    # The command line freezes what a read made (a scenario and its plan live until the command ends) and
    # hands it back to the collector at the end; a library read freezes nothing.
    import gc

    from agentsim.model.heap import gc_paused, reads_kept
    from agentsim.plan.validation import load

    assert gc.get_freeze_count() == 0
    load(ROOT / "scenarios" / "coding-agent.yaml")
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    with reads_kept():
        with gc_paused():
            with gc_paused():  # nested: only the outermost resumes (and freezes)
                pass
            assert not gc.isenabled() and gc.get_freeze_count() == 0
        assert gc.isenabled() and gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
    from typer.testing import CliRunner

    from agentsim.cli.main import app

    assert CliRunner().invoke(app, ["validate", str(ROOT / "scenarios" / "coding-agent.yaml")]).exit_code == 0
    assert gc.get_freeze_count() == 0 and gc.isenabled()

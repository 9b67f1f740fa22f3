"""Parameter uncertainty: the interval that includes the speeds' uncertainty, against closed forms."""

from __future__ import annotations

import json
import math

import numpy as np
from typer.testing import CliRunner

import agentsim
from agentsim.cli.main import app
from agentsim.plan.compiler import compile_plan
from agentsim.plan.validation import parse
from agentsim.sim.param_uncertainty import Z95, parameter_ci95
from agentsim.sim.simulation import simulate_plan

runner = CliRunner()


def _chain(uncertainty: dict | None, *, noisy: bool, top: bool = True) -> dict:
    model = {
        "price": {"input_mtok": 1, "output_mtok": 1},
        "ttft": {"lognormal": {"median": 0.5, "p90": 1.0}} if noisy else 0.5,
        "output_tps": {"gamma": {"mean": 60, "sd": 10}} if noisy else 60,
    }
    if uncertainty is not None:
        model["uncertainty"] = uncertainty
    doc = {
        "name": "chain",
        "runs": 50,
        "seed": 4,
        "models": {"m": model},
        "agent": {
            "steps": [{"repeat": {"name": "r", "times": 10, "steps": [{"call": {"model": "m", "output": 300}}]}}]
        },
    }
    if top:
        doc["uncertainty"] = "parameters"
    return doc


def test_without_the_key_nothing_changes():
    sc = parse(_chain({"output_tps_x": {"uniform": {"low": 0.8, "high": 1.2}}}, noisy=True, top=False))
    plain = parse(_chain(None, noisy=True, top=False))
    a, b = agentsim.simulate(sc).to_json(), agentsim.simulate(plain).to_json()
    assert a == b and "param_ci95" not in a


def test_degenerate_uncertainty_gives_the_monte_carlo_interval():
    res = agentsim.simulate(parse(_chain({"output_tps_x": 1, "ttft_x": 1.0}, noisy=True)))
    wall = res.summary_dict()["variants"]["baseline"]["wall_time_s"]
    assert wall["param_ci95"] == wall["ci95"] and wall["ci95"][0] < wall["ci95"][1]


# a deterministic chain: 10 calls of 0.5 s TTFT and 300 tokens at 60 tokens/s times g, g ~ uniform(0.8, 1.2):
# the mean wall time of a parameter set is 10 (0.5 + 5 / g); the Monte-Carlo CI has zero width
E_INV = math.log(1.2 / 0.8) / 0.4  # E[1/g]
SD_INV = math.sqrt((1 / 0.8 - 1 / 1.2) / 0.4 - E_INV**2)  # sd of 1/g


def test_interval_width_matches_the_closed_form():
    sc = parse(_chain({"output_tps_x": {"uniform": {"low": 0.8, "high": 1.2}}}, noisy=False))
    plan = compile_plan(sc)
    point = simulate_plan(plan, 50, 4).summary_dict()
    assert point["variants"]["baseline"]["wall_time_s"]["ci95"] == [55.0, 55.0]
    sets = 400
    lo, hi = parameter_ci95(sc, plan, point, 50, 4, lambda p: simulate_plan(p, 50, 4).summary_dict(), sets=sets)[
        "baseline"
    ]
    sd = 50 * SD_INV  # sd of a set's mean wall time
    # the sample sd of 400 near-uniform values: relative standard error sqrt((kurtosis - 1) / 4K) < 0.025
    assert abs((hi - lo) / 2 / (Z95 * sd) - 1) < 4 * 0.025
    assert abs((lo + hi) / 2 - 10 * (0.5 + 5 * E_INV)) < 4 * sd / math.sqrt(sets)


def test_cli_flag_and_table(tmp_path):
    f = tmp_path / "s.json"
    doc = _chain({"output_tps_x": {"uniform": {"low": 0.8, "high": 1.2}}}, noisy=False, top=False)
    f.write_text(json.dumps(doc))
    res = runner.invoke(app, ["run", str(f), "--uncertainty", "parameters", "--json"])
    assert res.exit_code == 0, res.output
    lo, hi = json.loads(res.stdout)["variants"]["baseline"]["wall_time_s"]["param_ci95"]
    assert lo < 55.0 < hi  # 20 sets: wide, around the closed-form mean 10 (0.5 + 5 E[1/g]) = 55.7
    res = runner.invoke(app, ["run", str(f), "--uncertainty", "parameters"])
    assert "95% CI with params" in res.stdout
    res = runner.invoke(app, ["run", str(f), "--uncertainty", "params"])
    assert res.exit_code == 2 and "the only choice is parameters" in res.output
    assert np.isfinite(lo)

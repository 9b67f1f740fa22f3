"""A calibrated profile carries the bootstrap spread of its estimates, and uncertainty: parameters uses it."""

from __future__ import annotations

import math

import numpy as np

import agentsim
from agentsim.measure.calibrate import BOOTSTRAP, calibrate
from agentsim.plan.distributions import Z90
from test_profile_ranges import _profile, _table


def test_output_speed_spread_matches_the_standard_error_of_the_mean():
    n = 200
    table = _table(n, np.linspace(500, 8000, n).round())
    cal = calibrate(table)
    tps = table["tps"].to_numpy()
    # the mean's relative standard error, and the bootstrap's own error on a spread from BOOTSTRAP resamples
    se_log = float(np.std(tps, ddof=1) / np.mean(tps)) / math.sqrt(n)
    got = math.log(cal.uncertainty["output_tps_x"]["lognormal"]["p90"]) / Z90
    assert abs(got / se_log - 1) < 3 / math.sqrt(2 * (BOOTSTRAP - 1))
    assert set(cal.uncertainty) == {"ttft_x", "output_tps_x", "prefill_tps_x"}


SCENARIO = """name: s
runs: 200
uncertainty: parameters
models:
  m:
    profile: ./p.yaml
    price: {input_mtok: 1, output_mtok: 1}
agent:
  steps:
    - call: {name: a, model: m, input: 4000, output: 200}
"""


def test_profile_uncertainty_widens_the_interval(tmp_path):
    _profile(tmp_path, np.linspace(500, 8000, 60).round())
    f = tmp_path / "s.yaml"
    f.write_text(SCENARIO)
    wall = agentsim.simulate(f).summary_dict()["variants"]["baseline"]["wall_time_s"]
    (lo, hi), (plo, phi) = wall["ci95"], wall["param_ci95"]
    assert phi - plo > hi - lo
    g = tmp_path / "plain.yaml"
    g.write_text(SCENARIO.replace("uncertainty: parameters\n", ""))
    plain = agentsim.simulate(g).summary_dict()["variants"]["baseline"]["wall_time_s"]
    assert "param_ci95" not in plain and plain["ci95"] == wall["ci95"]

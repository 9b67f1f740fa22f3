"""Where returns diminish: the marginal gain per unit of a swept value and the Kneedle knee, by hand and on a
sweep whose wall time is known in closed form (issue 36)."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from agentsim.analysis.knee import find_knee, higher_is_better, marginal_gains
from agentsim.analysis.sweeps import parse_set, run_sweep
from agentsim.cli.main import app
from conftest import model, scenario

runner = CliRunner()


def test_the_knee_of_a_hand_computed_curve():
    # x' = x / 5, y' = (y - 1) / 9; below the line 1 - x' by [0, 0.467, 0.489, 0.344, 0.178, 0]: largest at x = 2
    x, y = [0, 1, 2, 3, 4, 5], [10, 4, 2, 1.5, 1.2, 1.0]
    k = find_knee(x, y)
    assert (k.x, k.y) == (2.0, 2.0)
    assert k.gain_after == pytest.approx(0.5)  # from 2 to 1.5 over one unit
    # rising and flattening, higher better (a share): the mirror image has its knee at the same place
    k_up = find_knee(x, [11 - v for v in y], higher=True)
    assert k_up.x == 2.0 and k_up.gain_after == pytest.approx(0.5)


def test_no_knee_for_a_line_or_too_few_points():
    assert find_knee([1, 2, 3, 4], [8, 6, 4, 2]) is None  # a straight line: no bend
    assert find_knee([1, 2], [5, 1]) is None
    assert find_knee([1, 2, 3], [4, 4, 4]) is None


def test_marginal_gains_by_hand():
    gain, share = marginal_gains([50, 100, 200], [17.0, 10.0, 6.0])
    assert np.isnan(gain[0]) and np.isnan(share[0])
    assert gain[1:].tolist() == pytest.approx([7 / 50, 4 / 100])  # seconds saved per unit
    assert share[1:].tolist() == pytest.approx([7 / 17, 4 / 10])
    up, _ = marginal_gains([1, 2], [0.5, 0.8], higher=True)
    assert up[1] == pytest.approx(0.3)
    assert higher_is_better("slo_all_share") and higher_is_better("success_share")
    assert not higher_is_better("failed_share") and not higher_is_better("wall_mean_s")


SPEEDS = [50, 100, 200, 400, 1000, 2000]  # (no tie for the farthest point: see analysis/knee.py)


def _amdahl(tmp_path):
    # one call, TTFT 2 s, 600 tokens at a constant speed s: wall = 2 + 600 / s exactly, in every run
    path = tmp_path / "amdahl.yaml"
    doc = scenario([{"call": {"name": "a", "model": "m", "input": 100, "output": 600}}], models={"m": model(ttft=2.0)})
    import yaml

    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def test_sweep_gains_and_knee_match_the_closed_form(tmp_path):
    sw = run_sweep(_amdahl(tmp_path), [parse_set("models.m.output_tps=" + ",".join(map(str, SPEEDS)))], runs=20,
                   workers=1)  # fmt: skip
    g = sw.gains()
    s = np.array(SPEEDS, dtype=float)
    assert g["wall_mean_s"].to_numpy() == pytest.approx(2 + 600 / s, rel=1e-12)
    # (600/s_{i-1} - 600/s_i) / (s_i - s_{i-1}) = 600 / (s_{i-1} s_i)
    assert g["gain_per_unit"].to_numpy()[1:] == pytest.approx(600 / (s[:-1] * s[1:]), rel=1e-9)
    # the knee by the rule written out: farthest below the chord of the curve scaled to [0, 1]
    y = 2 + 600 / s
    xn, yn = (s - s[0]) / (s[-1] - s[0]), (y - y[-1]) / (y[0] - y[-1])
    want = s[np.argmax((1 - xn) - yn)]
    k = sw.knees()
    assert k["knee_x"].tolist() == [want]
    assert g.loc[g["knee"], "models.m.output_tps"].tolist() == [want]
    assert k["gain_per_unit_after"].iloc[0] == pytest.approx(600 / (want * s[list(s).index(want) + 1]), rel=1e-9)
    with pytest.raises(ValueError, match="not swept"):
        sw.gains(axis="models.m.ttft")


def test_the_sweep_command_shows_the_gain_and_the_knee(tmp_path):
    args = ["sweep", str(_amdahl(tmp_path)), "--set", "models.m.output_tps=" + ",".join(map(str, SPEEDS)),
            "--runs", "10", "--workers", "1", "-o", str(tmp_path / "out")]  # fmt: skip
    r = runner.invoke(app, args, env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    assert "gain/unit" in r.stdout
    assert "120 ms" in r.stdout  # 50 -> 100 tok/s: 600 / (50 x 100) = 0.12 s saved per +1 tok/s
    assert "returns diminish at models.m.output_tps = " in r.stdout

"""The shared-limits figures show what they promise: one row per account, the in-flight counts and bucket
levels of the timeseries, the concurrency cap, the counted window, and each call's queue wait as a CDF;
and ``agentsim run --out`` writes them (``limits.png``, ``wait_cdf.png``) for a scenario with limits."""

from __future__ import annotations

import matplotlib.colors as mcolors
import numpy as np
import pytest
import yaml
from matplotlib.image import imread
from matplotlib.lines import Line2D
from matplotlib.patches import Polygon, Rectangle
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.viz.plots import variant_colors
from conftest import model, run, scenario

DOC = scenario(
    [
        {"call": {"input": 2000, "output": 200}},
        {"fanout": {"n": 2, "steps": [{"call": {"input": 500, "output": 100}}]}},
    ],
    models={"m": model(ttft={"exponential": {"mean": 2}}, tps=80, speeds={"fast": {"output_tps_x": 2, "price_x": 3}})},
    variants={"standard": {}, "fast": {"speed": {"m": "fast"}}},
    limits={
        "acct": {"models": ["m"], "concurrency": 3, "rpm": 40, "input_tpm": 60000},
        "side": {"models": ["m@fast"], "output_tpm": 20000},
    },
    workload={"arrivals": {"per_hour": 240}, "duration": {"minutes": 20}, "warmup": {"minutes": 2}},
)


@pytest.fixture(scope="module")
def res():
    return run(DOC)


def _lines(ax) -> list[Line2D]:
    return [ln for ln in ax.get_lines() if not ln.get_label().startswith("_")]


def test_limits_figure_rows_and_series_match_the_timeseries(res):
    ts = res.limits_timeseries()
    accounts = list(dict.fromkeys(ts["account"]))
    assert accounts == ["acct", "side"]
    fig = res.plot_limits()
    axes = fig.axes
    assert len(axes) == 2 * len(accounts)  # one row per account: in flight (left), buckets (right)
    colors = variant_colors(["standard", "fast"])
    for row, account in enumerate(accounts):
        left, right = axes[2 * row], axes[2 * row + 1]
        assert left.get_title() == f"{account}: requests in flight" and left.get_ylabel() == "requests"
        assert right.get_title() == f"{account}: token buckets"
        assert right.get_ylabel() == "level (share of capacity)"
        assert left.get_xlabel() == right.get_xlabel() == "simulated time (min)"
        a = ts[ts["account"] == account]
        # the left panel: one step line per variant, exactly the in-flight series (time in minutes)
        flight = {ln.get_label(): ln for ln in _lines(left) if ln.get_label() != "limit"}
        assert set(flight) == set(a.loc[a["series"] == "in_flight", "variant"].astype(str))
        for variant, ln in flight.items():
            g = a[(a["variant"] == variant) & (a["series"] == "in_flight")].sort_values("t_s", kind="stable")
            assert ln.get_drawstyle() == "steps-post"
            np.testing.assert_array_equal(ln.get_xdata(), g["t_s"].to_numpy() / 60)
            np.testing.assert_array_equal(ln.get_ydata(), g["value"].to_numpy())
            assert mcolors.to_hex(ln.get_color()) == mcolors.to_hex(colors[variant])
        # the right panel: each bucket's level as a share of its capacity, never above 1
        buckets = {ln.get_label(): ln for ln in _lines(right)}
        kinds = [k for k in ("rpm", "input_tpm", "output_tpm") if k in set(a["series"])]
        expected = {f"{v} {k}" for v in a["variant"].astype(str).unique() for k in kinds}
        assert set(buckets) == expected
        for label, ln in buckets.items():
            variant, kind = label.split(" ")
            g = a[(a["variant"] == variant) & (a["series"] == kind)].sort_values("t_s", kind="stable")
            np.testing.assert_allclose(ln.get_ydata(), g["value"].to_numpy() / g["limit"].to_numpy(), rtol=1e-15)
            assert np.max(ln.get_ydata()) <= 1 + 1e-12
        # the concurrency cap as a horizontal line, only where there is one
        caps = [ln for ln in _lines(left) if ln.get_label() == "limit"]
        if account == "acct":
            assert len(caps) == 1 and list(caps[0].get_ydata()) == [3, 3]
            assert max(ln.get_ydata().max() for ln in flight.values()) == 3  # the cap binds in this workload
        else:
            assert caps == []
        # the counted window (warm-up to end) shaded on both panels
        for ax in (left, right):
            (span,) = [p for p in ax.patches if isinstance(p, Polygon | Rectangle)]
            if isinstance(span, Rectangle):
                x = [span.get_x(), span.get_x() + span.get_width()]
            else:
                x = span.get_xy()[:, 0]
            assert min(x) == pytest.approx(2.0) and max(x) == pytest.approx(20.0)


def test_wait_cdf_is_the_empirical_cdf_of_queue_waits(res):
    fig = res.plot_wait_cdf()
    (ax,) = fig.axes
    assert ax.get_xlabel() == "queue wait per call (s)" and ax.get_ylabel() == "share of calls"
    lines = {ln.get_label(): ln for ln in _lines(ax)}
    assert list(lines) == ["standard", "fast"]
    calls = res.calls
    for variant, ln in lines.items():
        c = calls[(calls["variant"] == variant) & (calls["status"] == "ok")]
        waits = np.sort((c["t_start"] - c["t_submit"]).to_numpy())
        assert len(waits) > 50 and waits[-1] > 0  # calls did queue
        np.testing.assert_array_equal(ln.get_xdata(), waits)
        np.testing.assert_array_equal(ln.get_ydata(), np.arange(1, len(waits) + 1) / len(waits))
        assert ln.get_drawstyle() == "steps-post"


def _has_color(img: np.ndarray, hex_color: str, tol: float = 0.08) -> bool:
    rgb = np.array(mcolors.to_rgb(hex_color))
    return bool((np.abs(img[..., :3] - rgb).max(axis=-1) < tol).sum() >= 20)


def test_run_out_writes_the_limits_figures(tmp_path):
    path = tmp_path / "limited.yaml"
    path.write_text(yaml.safe_dump(DOC))
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["run", str(path), "--out", str(out)])
    assert r.exit_code == 0, r.output
    colors = variant_colors(["standard", "fast"])
    # limits.png: 11 x (2.8 x 2 accounts) inches at 120 dpi; wait_cdf.png: 7 x 4 inches
    for name, (w, h) in (("limits.png", (1320, 672)), ("wait_cdf.png", (840, 480))):
        img = imread(out / name)
        assert img.shape[:2] == (h, w), name
        for variant in ("standard", "fast"):  # both variants' lines are drawn
            assert _has_color(img, colors[variant]), (name, variant)
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump(scenario([{"call": {"input": 10, "output": 10}}])))
    r = CliRunner().invoke(app, ["run", str(plain), "--out", str(tmp_path / "p")])
    assert r.exit_code == 0 and not (tmp_path / "p" / "limits.png").exists()


def test_envelope_keeps_each_bins_extreme():
    from agentsim.viz.plots_limits import envelope

    t = np.arange(10.0)
    y = np.array([0, 5, 1, 1, 7, 2, 2, 2, 3, 0.0])
    # bins [0, 3), [3, 6), [6, 9]: peaks 5, 7, 3; troughs 0, 1, 0 (the value entering a bin counts too)
    x, peak = envelope(t, y, np.maximum, bins=3)
    assert list(x) == [0, 3, 6] and list(peak) == [5, 7, 3]
    assert list(envelope(t, y, np.minimum, bins=3)[1]) == [0, 1, 0]
    # a bin with no change keeps the level the series entered it with
    x, lv = envelope(np.array([0.0, 1, 9, 10]), np.array([4.0, 6, 2, 2]), np.minimum, bins=3)
    assert list(x) == pytest.approx([0, 10 / 3, 20 / 3]) and list(lv) == [4, 6, 2]
    assert envelope(t, y, np.maximum, bins=20) == (t, y)  # short series: as they are


def test_figures_of_what_a_scenario_lacks_say_so():
    plain = run(scenario([{"call": {"input": 100, "output": 10}}]), runs=5)
    for fig, words in ((plain.plot_wait_cdf(), "no shared limits"), (plain.plot_limits(), "no workload")):
        texts = [t.get_text() for ax in fig.axes for t in ax.texts]
        assert any(words in " ".join(t.split()) for t in texts), texts
        assert all(not ax.axison for ax in fig.axes)  # no empty axis

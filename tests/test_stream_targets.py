"""The stream page answers the voice builder's question (issue 36): each lane shows the run's voice to voice and,
per slo target, whether this run meets it and the share of the runs within it; it says how its run was chosen
(the median, a percentile, or --run); the shares are those summary.json gives for the same runs and seed."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import agentsim
from agentsim.analysis.stream_timeline import StreamTimelineError, token_timelines
from agentsim.cli.main import app
from agentsim.viz.stream_page import build_stream_page
from conftest import SCENARIOS

runner = CliRunner()
VOICE = SCENARIOS / "voice-agent.yaml"


def _page_data(html: str) -> dict:
    start = html.index('<script type="application/json" id="timeline">') + len(
        '<script type="application/json" id="timeline">'
    )
    return json.loads(html[start : html.index("</script>", start)])


def test_each_lane_has_voice_to_voice_and_the_targets_of_summary_json():
    frame = token_timelines(VOICE, runs=200)
    res = agentsim.simulate(VOICE, runs=200)
    doc = res.summary_dict()
    r = int(frame["run"].iloc[0])
    for name, targets in frame.attrs["targets"].items():
        (t,) = targets
        want = doc["variants"][name]["slo"]["voice_to_voice_s"]
        assert (t["share"], t["ci95"], t["runs"]) == (want["share"], want["ci95"], 200)
        row = res.runs[(res.runs["variant"] == name) & (res.runs["run"] == r)].iloc[0]
        assert frame.attrs["voice_to_voice"][name] == row["reply.voice_to_voice_s"]
        assert t["value"] == row["reply.voice_to_voice_s"] and t["met"] == (t["value"] <= 0.8)
    data = _page_data(build_stream_page(VOICE, runs=200))
    lane = data["variants"][2]
    assert lane["name"] == "1000-tps-provider" and lane["voice_to_voice"] is not None
    assert lane["targets"][0]["text"].startswith("voice_to_voice_s ≤ 0.80 s: this run ")
    assert "of 200 runs within (95% CI" in lane["targets"][0]["text"]
    assert data["picked"] == "median"


def test_the_page_says_how_its_run_was_chosen(tmp_path):
    out = tmp_path / "page.html"
    r = runner.invoke(app, ["stream", str(VOICE), "-o", str(out), "--runs", "50", "--run", "6"])
    assert r.exit_code == 0, r.output
    html = out.read_text(encoding="utf-8")
    assert "run 6 (the run chosen with --run)" in html and "median" not in html.split("</p>")[0]
    r = runner.invoke(app, ["stream", str(VOICE), "-o", str(out), "--runs", "50"])
    assert "(the run whose call took the median time in gpt-5.2-instant)" in out.read_text(encoding="utf-8")
    r = runner.invoke(app, ["stream", str(VOICE), "-o", str(out), "--runs", "50", "--run", "6", "--percentile", "95"])
    assert r.exit_code == 2 and "--percentile" in r.stderr


def test_a_percentile_picks_that_order_statistic_of_the_call_time():
    sc = agentsim.load(SCENARIOS / "chat-turn.yaml")
    frame = token_timelines(sc, "answer", runs=101, percentile=95)
    calls = agentsim.simulate(sc, runs=101, engine="des").calls
    first = calls[(calls["variant"] == "gpt-5.2-instant") & (calls["step"] == "answer")].sort_values("run")
    took = (first["t_end"] - first["t_start"]).to_numpy()
    r = int(frame["run"].iloc[0])
    assert took[r] == np.sort(took)[95]  # round(0.95 x 100)
    assert frame.attrs["picked"] == "p95"
    with pytest.raises(StreamTimelineError, match="between 0 and 100"):
        token_timelines(sc, "answer", runs=11, percentile=120)

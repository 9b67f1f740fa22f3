"""Measured ranges in calibrated profiles, and the warnings when a scenario leaves them."""

from __future__ import annotations

import numpy as np
import pandas as pd
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.measure.calibrate import calibrate, profile_document
from agentsim.measure.measured_range import in_flight
from agentsim.model.profiles import Profile

runner = CliRunner()


def test_in_flight_by_hand():
    # requests [0, 5), [1, 2.5), [2, 3), [10, 11): when each is sent, 1, 2, 3 and 1 are in flight
    got = in_flight(np.array([0, 1, 2, 10.0]), np.array([5, 1.5, 1, 1.0]))
    assert got.tolist() == [1, 2, 3, 1]
    assert np.isnan(in_flight(np.array([np.nan]), np.array([1.0]))).all()


def _table(n: int, inputs: np.ndarray, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ttft = 0.3 * np.exp(0.2 * rng.standard_normal(n)) + inputs / 20000
    out = rng.integers(100, 301, n).astype(float)
    tps = 50 * np.exp(0.1 * rng.standard_normal(n))
    start = np.arange(n) * 100.0  # one at a time
    return pd.DataFrame(
        {
            "ttft_s": ttft,
            "input_tokens": inputs,
            "cached_input_tokens": np.zeros(n),
            "uncached_input_tokens": inputs,
            "output_tokens": out,
            "latency_s": ttft + out / tps,
            "tps": tps,
            "itl_s": np.nan,
            "gaps_s": None,
            "ok": True,
            "usable": True,
            "reason": None,
            "error": None,
            "start_s": start,
            "model": "m",
        }
    )


def _profile(tmp_path, inputs, name="p.yaml"):
    import datetime as dt

    cal = calibrate(_table(inputs.size, inputs.astype(float)))
    doc = profile_document(cal, "m", ["x.jsonl"], ["measure"], dt.date(2026, 1, 1), "given")
    Profile.model_validate(doc)
    from agentsim.measure.calibrate import write_profile

    write_profile(tmp_path / name, doc)
    return doc


def test_profile_records_ranges_and_dropped_prefill(tmp_path):
    fixed = _profile(tmp_path, np.full(60, 1000))
    assert fixed["measured"]["input_tokens"] == [1000, 1000]
    assert fixed["measured"]["dropped"] == ["prefill_tps"]
    assert fixed["measured"]["concurrency"] == 1
    lo, hi = fixed["measured"]["output_tokens"]
    assert 100 <= lo <= hi <= 300
    varied = _profile(tmp_path, np.linspace(500, 8000, 60).round())
    assert varied["measured"]["input_tokens"] == [500, 8000]
    assert "dropped" not in varied["measured"] and "prefill_tps" in varied


SCENARIO = """name: s
models:
  m:
    profile: ./p.yaml
    price: {{input_mtok: 1, output_mtok: 1}}
agent:
  steps:
    - call: {{name: big, model: m, input: {input}, output: 200}}
"""


def test_validate_and_run_warn_outside_the_range(tmp_path):
    _profile(tmp_path, np.linspace(500, 8000, 60).round())
    inside = tmp_path / "inside.yaml"
    inside.write_text(SCENARIO.format(input=4000))
    outside = tmp_path / "outside.yaml"
    outside.write_text(SCENARIO.format(input=15600))
    res = runner.invoke(app, ["validate", str(inside)])
    assert res.exit_code == 0 and "warning" not in res.stderr
    for cmd in (["validate", str(outside)], ["run", str(outside), "--runs", "5"]):
        res = runner.invoke(app, cmd)
        assert res.exit_code == 0, res.output
        assert f"warning: {outside}, line 8: call 'big' on model 'm' (profile ./p.yaml)" in res.stderr
        assert "15,600-15,600" in res.stderr and "500-8,000 measured in p.yaml" in res.stderr


def test_dropped_prefill_warns_at_the_profile_line(tmp_path):
    _profile(tmp_path, np.full(60, 1000))
    f = tmp_path / "s.yaml"
    f.write_text(SCENARIO.format(input=1000))
    res = runner.invoke(app, ["validate", str(f)])
    assert res.exit_code == 0
    assert f"warning: {f}, line 4: model 'm' (profile ./p.yaml) has no prefill term" in res.stderr


def test_measure_spreads_prompt_sizes_by_default(tmp_path):
    import json

    # nothing listens on port 9: every request fails fast, but the run header and the sizes are written
    out = tmp_path / "m.jsonl"
    res = runner.invoke(
        app, ["measure", "--base-url", "http://127.0.0.1:9/v1", "--model", "x", "--requests", "4", "-o", str(out)]
    )
    assert res.exit_code == 0, res.output
    recs = [json.loads(x) for x in out.read_text().splitlines()]
    assert recs[0]["kind"] == "run" and recs[0]["input_tokens"] == [500, 8000]
    assert sorted(r["input_tokens_requested"] for r in recs[1:]) == [500, 3000, 5500, 8000]  # 7,500 / 3 apart


def test_queued_profile_warns(tmp_path):
    import yaml

    doc = _profile(tmp_path, np.linspace(500, 8000, 60).round())
    doc["measured"]["queueing"] = {"headers_queued": False, "ttft_grows": True, "valid_at_concurrency": 20}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(doc, sort_keys=False, default_flow_style=None))
    f = tmp_path / "s.yaml"
    f.write_text(SCENARIO.format(input=4000))
    res = runner.invoke(app, ["validate", str(f)])
    assert res.exit_code == 0
    assert f"warning: {f}, line 4: model 'm' (profile ./p.yaml) was measured with queueing" in res.stderr
    assert "concurrency of about 20" in res.stderr

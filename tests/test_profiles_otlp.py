"""Speed profiles filling models, and the OTLP JSON reader."""

from __future__ import annotations

import json

import pytest

import agentsim
from agentsim.model.loading import ScenarioError
from agentsim.model.profiles import bundled_profiles, load_profile
from agentsim.traces.otlp import attr, read_otlp


def test_bundled_profiles_load():
    assert bundled_profiles()
    for name in bundled_profiles():
        prof, _ = load_profile(name)
        assert prof.source and prof.kind


def test_profile_fills_a_model_and_scenario_values_win(tmp_path):
    prof = tmp_path / "mine.yaml"
    prof.write_text(
        "profile: mine\nkind: measured\nsource: our bench, Nov 2026\ndate: 2026-11-01\n"
        "ttft: 2.0\noutput_tps: 50\nprefill_tps: 1000\n"
    )
    sc = tmp_path / "s.yaml"
    sc.write_text(
        "name: s\nmodels:\n  a: {profile: ./mine.yaml, price: {input_mtok: 1, output_mtok: 2}}\n"
        "  b: {profile: ./mine.yaml, output_tps: 100, price: {input_mtok: 1, output_mtok: 2}}\n"
        "agent: {steps: [{call: {model: a, output: 100}}, {call: {model: b, output: 100}}]}\n"
    )
    res = agentsim.simulate(sc, runs=2)
    c = res.calls[res.calls.run == 0]
    assert c["ttft_s"].tolist() == [2.0, 2.0]
    assert c["decode_s"].tolist() == [2.0, 1.0]


def test_bad_profile_file_points_at_the_profile(tmp_path):
    prof = tmp_path / "bad.yaml"
    prof.write_text("profile: bad\nkind: guessed\nsource: x\ndate: 2026-11-01\nttft: 1\noutput_tps: 5\n")
    sc = tmp_path / "s.yaml"
    sc.write_text(
        "name: s\nmodels:\n  a: {profile: bad.yaml, price: {input_mtok: 1, output_mtok: 2}}\n"
        "agent: {steps: [{call: {output: 1}}]}\n"
    )
    with pytest.raises(ScenarioError) as e:
        agentsim.load(sc)
    assert f"{prof}:2: kind:" in str(e.value)


def test_read_otlp_document_and_json_lines(tmp_path):
    span = {
        "traceId": "t1",
        "spanId": "s1",
        "name": "chat opus",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000002500000000",
        "status": {"code": 1},
        "attributes": [
            {"key": "gen_ai.usage.prompt_tokens", "value": {"intValue": "1200"}},
            {"key": "gen_ai.request.model", "value": {"stringValue": "claude-opus-4-8"}},
        ],
    }
    doc = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [span]}]}]}
    one = tmp_path / "one.json"
    one.write_text(json.dumps(doc))
    spans, problems = read_otlp(one)
    assert problems == [] and len(spans) == 1
    s = spans[0]
    assert s.duration_s == pytest.approx(2.5) and s.status == "ok" and s.parent_id is None
    assert attr(s, "input_tokens") == 1200 and attr(s, "request_model") == "claude-opus-4-8"
    lines = tmp_path / "many.jsonl"
    lines.write_text(json.dumps(doc) + "\n{not json\n" + json.dumps(doc) + "\n")
    spans, problems = read_otlp(lines)
    assert len(spans) == 2 and [p[0] for p in problems] == [2]

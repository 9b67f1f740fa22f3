"""Malformed measurement files: one clear message naming the file and the place, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentsim.cli.main import app
from measurement_formats import sample_file

runner = CliRunner()


def _truncate(path: Path, keep: float = 0.6) -> Path:
    text = path.read_text()
    path.write_text(text[: int(len(text) * keep)])
    return path


def _edit_json(path: Path, fn) -> Path:
    doc = json.loads(path.read_text())
    fn(doc)
    path.write_text(json.dumps(doc, indent=1))
    return path


def _edit_lines(path: Path, fn) -> Path:
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    for rec in lines:
        fn(rec)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _scale_llmperf(doc):
    for r in doc:
        r["ttft_s"] *= 1000
        r["end_to_end_latency_s"] *= 1000


def _drop_key(key):
    def fn(doc):
        for r in doc:
            r.pop(key, None)

    return fn


def _aiperf_unit(rec):
    if rec.get("metrics") and "time_to_first_token" in rec["metrics"]:
        rec["metrics"]["time_to_first_token"]["unit"] = "furlongs"


def _aiperf_no_ttft(rec):
    (rec.get("metrics") or {}).pop("time_to_first_token", None)


def _otel_no_ttft(doc):
    for sp in doc["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        sp["attributes"] = [a for a in sp["attributes"] if a["key"] != "gen_ai.response.time_to_first_chunk"]


def _otel_no_genai(doc):
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"] = [s for s in spans if s["name"].startswith("invoke_agent")][:2]


def _csv(text: str):
    def build(tmp: Path) -> Path:
        p = tmp / "m.csv"
        p.write_text(text)
        return p

    return build


GOOD_CSV_ROW = "0.5,1.5,1000,100\n"

CASES = {
    # llmperf
    "llmperf-truncated": (
        lambda t: _truncate(sample_file(t, "llmperf")),
        [],
        ["not valid JSON", "the file looks truncated"],
    ),
    "llmperf-milliseconds": (
        lambda t: _edit_json(sample_file(t, "llmperf"), _scale_llmperf),
        [],
        ["implausible", "look like milliseconds"],
    ),
    "llmperf-no-ttft": (
        lambda t: _edit_json(sample_file(t, "llmperf"), _drop_key("ttft_s")),
        ["--format", "llmperf"],
        ["no record has ttft_s"],
    ),
    # vLLM
    "vllm-truncated": (lambda t: _truncate(sample_file(t, "vllm")), [], ["not valid JSON", "truncated"]),
    "vllm-no-itls": (
        lambda t: _edit_json(sample_file(t, "vllm"), lambda d: d.pop("itls")),
        [],
        ["itls: missing 'itls'", "--save-detailed"],
    ),
    "vllm-ragged": (
        lambda t: _edit_json(sample_file(t, "vllm"), lambda d: d["output_lens"].pop()),
        [],
        ["output_lens: 'output_lens' has 24 entries but 'ttfts' has 25"],
    ),
    # GuideLLM
    "guidellm-truncated": (lambda t: _truncate(sample_file(t, "guidellm")), [], ["not valid JSON", "truncated"]),
    "guidellm-no-requests": (
        lambda t: _edit_json(sample_file(t, "guidellm"), lambda d: d["benchmarks"][0].pop("requests")),
        [],
        ["benchmarks[0].requests: a benchmark has no 'requests' breakdown"],
    ),
    "guidellm-no-ttft": (
        lambda t: _edit_json(
            sample_file(t, "guidellm"),
            lambda d: [r.pop("time_to_first_token_ms") for r in d["benchmarks"][0]["requests"]["successful"]],
        ),
        [],
        ["no record has time_to_first_token_ms"],
    ),
    # AIPerf
    "aiperf-unit": (
        lambda t: _edit_lines(sample_file(t, "aiperf"), _aiperf_unit),
        [],
        [":1: metrics.time_to_first_token: unknown time unit 'furlongs'"],
    ),
    "aiperf-truncated": (
        lambda t: _truncate(sample_file(t, "aiperf"), 0.5),
        [],
        ["not valid JSON", "the last line looks truncated"],
    ),
    "aiperf-no-ttft": (
        lambda t: _edit_lines(sample_file(t, "aiperf"), _aiperf_no_ttft),
        [],
        ["no record has metrics.time_to_first_token", "--streaming"],
    ),
    # OTLP GenAI spans
    "otel-truncated": (lambda t: _truncate(sample_file(t, "otel")), ["--format", "otel"], ["not OTLP JSON"]),
    "otel-no-ttft": (
        lambda t: _edit_json(sample_file(t, "otel"), _otel_no_ttft),
        [],
        ["no record has gen_ai.response.time_to_first_chunk"],
    ),
    "otel-no-model-calls": (
        lambda t: _edit_json(sample_file(t, "otel"), _otel_no_genai),
        [],
        ["none of the 2 spans is a GenAI model call"],
    ),
    # CSV
    "csv-unitless": (
        _csv("ttft,latency_s,input_tokens,output_tokens\n" + GOOD_CSV_ROW),
        ["--format", "csv"],
        [":1: column 'ttft' has no unit", "ttft_s or ttft_ms"],
    ),
    "csv-ms-in-seconds": (
        _csv("ttft_s,latency_s,input_tokens,output_tokens\n" + "450,1500,1000,100\n" * 30),
        [],
        ["implausible", "milliseconds"],
    ),
    "csv-mixed-units": (
        _csv("ttft_s,latency_ms,input_tokens,output_tokens\n" + GOOD_CSV_ROW * 30),
        [],
        ["exceeds the end-to-end latency in 30 of 30", "different units"],
    ),
    "csv-no-output": (_csv("ttft_s,latency_s,input_tokens\n0.5,1.5,1000\n"), [], [":1: missing column output_tokens"]),
    "csv-not-a-number": (
        _csv("ttft_ms,latency_ms,input_tokens,output_tokens\n500,1500,1000,100\nabc,1,1,1\n"),
        [],
        [":3: column ttft_ms: expected a number, got 'abc'"],
    ),
    # agentsim measure JSONL, and detection
    "measure-truncated": (
        lambda t: _truncate(sample_file(t, "measure"), 0.7),
        [],
        ["not valid JSON", "the last line looks truncated"],
    ),
    "unknown-json": (
        _csv('{"hello": [1, 2, 3]}\n'),
        [],
        ["cannot tell which benchmark tool wrote this JSON", "--format"],
    ),
    "empty": (_csv(""), [], ["the file is empty"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_malformed_file_exits_2_with_file_and_place(tmp_path, case):
    build, args, fragments = CASES[case]
    path = build(tmp_path)
    res = runner.invoke(app, ["calibrate", str(path), *args, "-o", str(tmp_path / "p.yaml")])
    assert res.exit_code == 2, res.output
    out = " ".join(res.output.split())  # the console may wrap long lines
    assert out.startswith(f"error: {path}"), out
    for frag in fragments:
        assert frag in out, (frag, out)
    assert "Traceback" not in res.output
    assert not (tmp_path / "p.yaml").exists()


def test_missing_file_and_unknown_format(tmp_path):
    res = runner.invoke(app, ["calibrate", str(tmp_path / "nope.json"), "-o", str(tmp_path / "p.yaml")])
    assert res.exit_code == 2 and "nope.json: no such file" in res.output
    f = sample_file(tmp_path, "csv")
    res = runner.invoke(app, ["calibrate", str(f), "--format", "excel", "-o", str(tmp_path / "p.yaml")])
    assert res.exit_code == 2 and "--format 'excel' is not a known format" in res.output
    res = runner.invoke(app, ["calibrate", str(f), "-o", str(tmp_path)])
    assert res.exit_code == 2 and "is a folder" in res.output


def test_a_record_whose_output_count_is_nan_is_left_out_as_incomplete(tmp_path):
    """NaN is how benchmark tools write "not measured": a record without its output count cannot give a
    speed, so it is left out (it once stayed "usable" and crashed the speed fit: exit 1)."""
    fixture = Path(__file__).parent / "fixtures" / "measurements" / "llmperf_individual_responses.json"
    records = json.loads(fixture.read_text())
    ok = [i for i, r in enumerate(records) if not r.get("error_code")]
    records[ok[3]]["number_output_tokens"] = float("nan")
    f = tmp_path / "llmperf_individual_responses.json"
    f.write_text(json.dumps(records))  # json writes NaN, as Python tools do
    res = runner.invoke(app, ["calibrate", str(f), "-o", str(tmp_path / "p.yaml")])
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert f"{len(records)} read, {len(ok) - 1} used" in out and "1 incomplete" in out, out
    assert (tmp_path / "p.yaml").exists()

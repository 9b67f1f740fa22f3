"""Readers of recorded formats on REAL exports written by the formats' own projects (or real captures).

Each fixture under tests/fixtures/real/FORMAT is a small excerpt; its PROVENANCE.md says where it comes
from (repository, path, commit). Expected values are read off the excerpts by hand.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from agentsim.cli.main import app

REAL = Path(__file__).resolve().parent / "fixtures" / "real"
Z75, Z90, Z99 = 0.6744897501960817, 1.2815515655446004, 2.3263478740408408
runner = CliRunner()


# --------------------------------------------------------------------------- OpenRouter


def test_real_openrouter_listings_read_as_ordinary_percentiles(tmp_path):
    files = [
        REAL / "openrouter" / n
        for n in ("openrouter-glm-5.3-flash-2026-09-30.json", "openrouter-glm-5.3-2026-08-30.json")
    ]
    r = runner.invoke(app, ["profiles", "import", "openrouter", *map(str, files), "-o", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert "latency read as milliseconds" in r.stderr
    doc = yaml.safe_load((tmp_path / "openrouter-glm-5.3-flash-z.ai.yaml").read_text())
    # throughput 28/44/68/101 tokens/s at probabilities 0.50/0.75/0.90/0.99 (z = Z75, Z90, Z99)
    sigma = (Z75 * math.log(44 / 28) + Z90 * math.log(68 / 28) + Z99 * math.log(101 / 28)) / (Z75**2 + Z90**2 + Z99**2)
    assert doc["output_tps"] == {"lognormal": {"median": 28.0, "p90": float(f"{28 * math.exp(Z90 * sigma):.4g}")}}
    assert doc["output_tps"]["lognormal"]["p90"] > 28  # the fast tail is above the median
    assert doc["fit"]["output_tps"]["snapshots"][0]["published"] == {
        "p50": 28.0,
        "p75": 44.0,
        "p90": 68.0,
        "p99": 101.0,
    }
    assert doc["ttft"]["lognormal"]["median"] == 3.446  # 3446 ms
    io = yaml.safe_load((tmp_path / "openrouter-glm-5.3-io-net-fp8.yaml").read_text())
    assert io["output_tps"]["lognormal"]["median"] == 25.0 and io["ttft"]["lognormal"]["median"] == 2.23  # 2229.5 ms


def test_a_listing_whose_throughput_falls_is_refused_naming_the_documentation_and_the_file(tmp_path):
    # OpenRouter's own OpenAPI example: throughput 45.2, 38.5, 28.3, 15.1 (contradicting its PercentileStats schema)
    f = REAL / "openrouter" / "openapi-example-2026-05-06T14-00Z.json"
    r = runner.invoke(app, ["profiles", "import", "openrouter", str(f), "-o", str(tmp_path / "out")])
    assert r.exit_code == 2
    msg = " ".join(r.stderr.split())
    assert "data.endpoints[0].throughput_last_30m" in msg and "45.2" in msg and "15.1" in msg  # the file's shape
    assert "PercentileStats" in msg and "99th percentile" in msg  # the documentation
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- span trees: a call holding tools

T_ADK = 1_793_610_000.0  # the fixtures' time origin, 2026-11-02T10:20:00Z


def _replay(*paths):
    r = runner.invoke(app, ["replay", *map(str, paths), "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


def test_adk_call_llm_holding_execute_tool_is_a_call_and_its_tool_follows_it():
    from agentsim.traces.session_files import read_sessions

    f = REAL / "otel" / "adk-call-llm-holds-tool.json"
    (s,), (rep,) = read_sessions([(f, "auto")])
    calls = sorted(s.calls, key=lambda n: n.start)
    assert [(round(c.start - T_ADK, 2), round(c.end - T_ADK, 2)) for c in calls] == [(0.02, 1.8), (3.52, 5.9)]
    assert [(c.call.input_tokens, c.call.output_tokens) for c in calls] == [(1200, 20), (1300, 60)]
    (tool,) = [n for n in s.nodes if n.kind == "tool"]
    assert tool.name == "get_weather" and calls[0].id in tool.preds  # the tool waits for the call that asked
    assert s.id == "adk-session-7"  # gcp.vertex.agent.session_id
    assert any("hold tool" in n for n in rep.notes)
    out = _replay(f)
    assert out["recorded"]["calls"] == 2 and out["recorded"]["tokens"]["input"] == 2500
    # model time is both calls' (1.78 s + 2.38 s), the tool 1.6 s: nothing moved to 'other'
    assert out["recorded"]["time_s"]["model"] == pytest.approx(4.16, abs=1e-3)
    assert out["recorded"]["time_s"]["tool"] == pytest.approx(1.6, abs=1e-3)


def test_adk_1_4_call_llm_without_usage_is_counted_flagged_and_left_unpriced():
    out = _replay(REAL / "otel" / "adk-1.4.2-call-llm-no-usage.json")
    assert out["recorded"]["calls"] == 2 and out["recorded"]["unpriced_calls"] == 2
    assert out["recorded"]["cost_usd"] == 0  # nothing known is summed; the unpriced count says why
    assert any("no token usage recorded" in n and "(2 calls)" in n for n in out["notes"])
    assert any("2 calls record no token usage" in n for n in out["files"][0]["notes"])


def test_langfuse_ui_trace_downloads_of_one_session_replay_as_one_session():
    files = [REAL / "langfuse" / f"trace-{k}.json" for k in (1, 2, 3)]
    out = _replay(*files)
    assert out["sessions"] == 1  # trace.sessionId, read from the download's "trace" object
    assert out["recorded"]["calls"] == 6 and out["recorded"]["tokens"]["input"] == 3 * 2500
    # human: from each agent run's end (+5.99 s) to the next one's start (+0.01 s)
    assert out["recorded"]["time_s"]["human"] == pytest.approx((120.01 - 5.99) + (300.01 - 125.99), abs=1e-3)
    assert "SECRET" not in json.dumps(out)


def test_langsmith_merged_runs_read_usage_metadata_and_flag_the_call_without_any():
    out = _replay(REAL / "langsmith" / "merged-runs.json")
    rec = out["recorded"]
    assert rec["calls"] == 2 and rec["unpriced_calls"] == 1
    assert rec["tokens"]["input"] == 9200 and rec["tokens"]["cache_read"] == 8000 and rec["tokens"]["output"] == 350
    assert rec["cost_usd"] > 0  # the first call is priced from outputs.usage_metadata
    assert any("1 calls record no token usage" in n for n in out["files"][0]["notes"])


# --------------------------------------------------------------------------- OTLP time units, and fit


def _otlp_calls(tmp_path, name: str, scale: float, ttfts=None, n: int = 12) -> Path:
    """``n`` sequential chat calls from 2026-11-02T10:20Z, timestamps in units of 1/scale s (1e9: nanoseconds)."""
    spans, t = [], 0.0
    for i in range(n):
        dur = 1.0 + (i % 5) * 0.4
        attrs = [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.request.model", "value": {"stringValue": "claude-sonnet-4-5"}},
            {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "1000"}},
            {"key": "gen_ai.usage.output_tokens", "value": {"intValue": str(50 + 20 * (i % 4))}},
        ]
        if ttfts is not None:
            attrs.append({"key": "gen_ai.response.time_to_first_chunk", "value": {"doubleValue": ttfts[i]}})
        start, end = (T_ADK + t) * scale, (T_ADK + t + dur) * scale
        spans.append(
            {
                "traceId": "t1",
                "spanId": f"s{i}",
                "name": "chat",
                "startTimeUnixNano": str(int(start)),
                "endTimeUnixNano": str(int(end)),
                "attributes": attrs,
            }
        )
        t += dur + 2.0
    f = tmp_path / name
    f.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    return f


@pytest.mark.parametrize(("scale", "unit"), [(1, "seconds"), (1e3, "milliseconds"), (1e6, "microseconds")])
def test_otlp_times_in_another_unit_are_converted_with_a_note(tmp_path, scale, unit):
    from agentsim.traces.session_files import read_sessions

    good = read_sessions([(_otlp_calls(tmp_path, "ns.json", 1e9), "otel")])[0][0]
    (s,), (rep,) = read_sessions([(_otlp_calls(tmp_path, f"{unit}.json", scale), "otel")])
    tol = max(1e-3, 2 / scale)  # whole units: seconds lose the fractions
    assert s.start == pytest.approx(good.start, abs=tol) and s.wall_time_s == pytest.approx(good.wall_time_s, abs=tol)
    assert s.start_date.isoformat() == "2026-11-02"  # not 1970-01-01
    assert any(f"24 timestamps (*TimeUnixNano) were written in {unit}" in n for n in rep.notes), rep.notes


def test_otlp_times_plausible_in_no_unit_are_refused(tmp_path):
    f = _otlp_calls(tmp_path, "tiny.json", 1e9)
    f.write_text(f.read_text().replace(f'"startTimeUnixNano": "{int(T_ADK * 1e9)}"', '"startTimeUnixNano": "12345"'))
    r = runner.invoke(app, ["replay", str(f), "--json"])
    assert r.exit_code == 2
    assert "startTimeUnixNano 12345 is not a time: it names no moment between 2000 and 2100" in " ".join(
        r.stderr.split()
    )


def test_fit_on_a_seconds_file_works_and_names_no_temporary_file(tmp_path):
    f = _otlp_calls(tmp_path, "seconds.json", 1)
    r = runner.invoke(app, ["fit", str(f), "-o", str(tmp_path / "out" / "agent.yaml")])
    assert r.exit_code == 0, r.output
    assert "agentsim-fit-" not in r.output and "tmp" not in r.stderr.replace(str(tmp_path), "")
    run = runner.invoke(app, ["run", str(tmp_path / "out" / "agent.yaml"), "--runs", "20", "--json"])
    assert run.exit_code == 0, run.output


def test_fit_never_writes_a_profile_it_would_refuse(tmp_path):
    # TTFT recorded as 0 for most calls (non-streamed calls, as some instrumentations write it) and ~1 s for the
    # rest: a lognormal through those quantiles spreads so wide that a scenario refuses it (ttft can reach 1e+10 s)
    ttfts = [0.0] * 8 + [0.9, 1.1, 1.0, 1.2]
    f = _otlp_calls(tmp_path, "ttft0.json", 1e9, ttfts=ttfts)
    r = runner.invoke(app, ["fit", str(f), "-o", str(tmp_path / "out" / "agent.yaml")])
    assert r.exit_code == 0, r.output
    assert "agentsim-fit-" not in r.output
    assert "not plausible" in r.stderr and "ttft can reach" in r.stderr  # the note says why the fit was not used
    run = runner.invoke(app, ["run", str(tmp_path / "out" / "agent.yaml"), "--runs", "20", "--json"])
    assert run.exit_code == 0, run.output


# --------------------------------------------------------------------------- AIPerf


def test_aiperf_first_per_request_export_with_metric_ttft_reads():
    from agentsim.traces.benchmarks import read_aiperf

    rows = read_aiperf(REAL / "aiperf" / "profile_export_ttft.jsonl")
    ok, failed = rows.rows
    assert ok["ttft_s"] == pytest.approx(0.255886568) and ok["latency_s"] == pytest.approx(0.297525228)
    assert ok["output_tokens"] == 9 and ok["input_tokens"] == 550 and len(ok["gaps_s"]) == 8
    assert ok["start_s"] == pytest.approx(1759813207.532900363)
    assert failed["ok"] is False and "RequestCancellationError" in failed["error"]
    assert rows.date.isoformat() == "2025-10-07"


# --------------------------------------------------------------------------- nothing dropped without a count


def test_a_run_given_twice_in_one_file_is_said_to_repeat_in_that_file(tmp_path):
    runs = json.loads((REAL / "langsmith" / "merged-runs.json").read_text())
    f = tmp_path / "runs.json"
    f.write_text(json.dumps([*runs, runs[1]]))
    r = runner.invoke(app, ["replay", str(f), "--json"])
    assert r.exit_code == 0, r.output
    assert "1 records repeat one earlier in the same file" in r.stderr
    assert "another file" not in r.stderr
    assert json.loads(r.stdout)["recorded"]["calls"] == 2


def test_a_codex_running_total_that_goes_down_is_counted_in_the_notes(tmp_path):
    from agentsim.traces.session_files import read_sessions

    def line(ts, typ, payload):
        return json.dumps({"timestamp": f"2026-11-04T10:00:{ts:02d}.000Z", "type": typ, "payload": payload})

    def count(ts, total):
        usage = {
            "input_tokens": total,
            "cached_input_tokens": 0,
            "output_tokens": total // 10,
            "reasoning_output_tokens": 0,
            "total_tokens": total + total // 10,
        }
        return line(ts, "event_msg", {"type": "token_count", "info": {"total_token_usage": usage}})

    meta = {"id": "019a4e10-0000-7000-8000-0000000000aa", "timestamp": "2026-11-04T10:00:00.000Z", "cwd": "/w"}
    lines = [
        line(0, "session_meta", meta),
        line(1, "turn_context", {"model": "gpt-5"}),
        line(1, "event_msg", {"type": "task_started"}),
        count(5, 1000),
        count(9, 2500),
        count(14, 300),
        count(20, 900),
    ]
    f = tmp_path / "rollout-2026-11-04T10-00-00-019a4e10-0000-7000-8000-0000000000aa.jsonl"
    f.write_text("\n".join(lines) + "\n")
    (s,), (rep,) = read_sessions([(f, "codex")])
    # 1000, then +1500, then the total falls to 300 (reset: that call's usage is unknown), then +600
    assert [c.call.input_tokens for c in sorted(s.calls, key=lambda n: n.start)] == [1000, 1500, 600]
    assert any("1 token counts without last_token_usage report a running total below" in n for n in rep.notes)

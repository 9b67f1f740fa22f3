"""Edges of the provider-snapshot, span-format and fit code: the less common shapes of each input, and what is
refused. Expected values are worked out by hand in the comments."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import pytest

from agentsim.fit.agent_fit import FitError, fit_agent
from agentsim.model import input_files
from agentsim.traces import provider_snapshots as ps
from agentsim.traces.record_files import records, when
from agentsim.traces.session_files import detect_format, read_sessions
from agentsim.traces.sessions import Call, FileReport, Node, Session, link_nodes

Z75, Z90 = 0.6744897501960817, 1.2815515655446004


# --------------------------------------------------------------------------- provider snapshots


def test_reading_a_listing_refuses_missing_huge_and_binary_files(tmp_path, monkeypatch):
    with pytest.raises(ps.SnapshotFileError, match="no such file"):
        ps.read_json_file(tmp_path / "nope.json")
    big = tmp_path / "big.json"
    big.write_text("{}" + " " * 100)
    monkeypatch.setitem(input_files.MAX_BYTES, "provider listing", 50)
    with pytest.raises(ps.SnapshotFileError, match="more than a provider listing file may hold"):
        ps.read_json_file(big)
    monkeypatch.undo()
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(ps.SnapshotFileError, match="cannot be read as UTF-8"):
        ps.read_json_file(binary)


def test_taken_at_forms(tmp_path):
    assert ps.parse_taken_at("2026-05-06") == (dt.datetime(2026, 5, 6, tzinfo=dt.UTC), False)
    assert ps.parse_taken_at("2026-05-06T16:00+02:00") == (dt.datetime(2026, 5, 6, 14, tzinfo=dt.UTC), True)
    assert ps.parse_taken_at("2026-05-06T14:00") == (dt.datetime(2026, 5, 6, 14, tzinfo=dt.UTC), True)
    f = tmp_path / "endpoints_20260506T1430.json"
    f.write_text("{}")
    assert ps.taken_at_of(f, None)[:2] == (dt.datetime(2026, 5, 6, 14, 30, tzinfo=dt.UTC), True)
    g = tmp_path / "endpoints-2026-02-30.json"
    g.write_text("{}")
    with pytest.raises(ps.SnapshotFileError, match="not a real date"):
        ps.taken_at_of(g, None)


def test_fit_without_a_median_is_ordinary_least_squares():
    # p75 = 2, p90 = 4: sigma = log(4 / 2) / (Z90 - Z75), mu = log 2 - sigma * Z75 (two points: an exact line)
    mu, sigma, err = ps.fit_lognormal({0.75: 2.0, 0.9: 4.0}, 0.5)
    assert sigma == pytest.approx(math.log(2) / (Z90 - Z75))
    assert mu == pytest.approx(math.log(2) - sigma * Z75) and err == pytest.approx(0, abs=1e-12)
    with pytest.raises(ValueError, match="fall"):
        ps.fit_lognormal({0.5: 2.0, 0.9: 1.0}, 0.5)


def _listing(model, tag, lat, thr):
    return {
        "data": {
            "id": model,
            "endpoints": [{"provider_name": tag, "tag": tag, "latency_last_30m": lat, "throughput_last_30m": thr}],
        }
    }


def test_equal_percentiles_give_a_constant_and_same_slugs_are_told_apart(tmp_path):
    from agentsim.traces.snapshot_import import import_snapshots

    a = tmp_path / "a-2026-05-06T14-00Z.json"
    a.write_text(json.dumps(_listing("openai/gpt-4", "x", {"p50": 0.5, "p90": 0.5}, {"p50": 40, "p90": 40})))
    b = tmp_path / "b-2026-05-06T14-00Z.json"
    b.write_text(json.dumps(_listing("azure/gpt-4", "x", {"p50": 0.6}, {"p50": 30})))
    res = import_snapshots("openrouter", [a, b])
    assert sorted(res.profiles) == ["openrouter-gpt-4-x", "openrouter-gpt-4-x-azure"]
    assert res.profiles["openrouter-gpt-4-x"]["ttft"] == 0.5 and res.profiles["openrouter-gpt-4-x"]["output_tps"] == 40
    for bad, message in (("nowhere", "unknown source"), ("openrouter", "--latency-unit 'hours'")):
        with pytest.raises(ps.SnapshotFileError, match=message):
            import_snapshots(bad, [a], latency_unit="hours")
    with pytest.raises(ps.SnapshotFileError, match="no file given"):
        import_snapshots("openrouter", [])
    with pytest.raises(ps.SnapshotFileError, match="no such file"):
        import_snapshots("openrouter", [tmp_path / "missing-2026-05-06.json"])


def test_artificial_analysis_shapes(tmp_path):
    from agentsim.traces.snapshot_import import import_snapshots

    f = tmp_path / "aa-2026-05-06.json"
    for doc, message in (
        ({"data": [], "prompt_options": [1]}, "prompt_options: expected an object"),
        ({"data": [], "prompt_options": {"parallel_queries": 0}}, "parallel_queries 0"),
        ({"data": [1]}, r"data\[0\]: expected a model object"),
        ({"data": [{"slug": 5}]}, r"data\[0\]\.slug: expected a string"),
        ({"data": [{"slug": "m", "pricing": [1]}]}, "pricing: expected an object"),
        ({"data": []}, "has no endpoints"),
    ):
        f.write_text(json.dumps(doc))
        with pytest.raises(ps.SnapshotFileError, match=message):
            import_snapshots("artificial-analysis", [f])
    # no prompt_options: the site's default workload, said so
    f.write_text(
        json.dumps(
            {"data": [{"id": "m-1", "median_output_tokens_per_second": 50, "median_time_to_first_token_seconds": 0.5}]}
        )
    )
    res = import_snapshots("artificial-analysis", [f])
    assert "the site's default" in res.profiles["aa-m-1"]["source"]


# --------------------------------------------------------------------------- records and times


def test_record_files_and_times(tmp_path):
    empty = tmp_path / "e.json"
    empty.write_text("  \n")
    rep = FileReport(str(empty), "x")
    assert list(records(empty, rep)) == [] and rep.notes == ["the file is empty"]
    assert when(1_793_952_000, "t") == 1_793_952_000.0  # epoch seconds
    assert when(1_793_952_000_500, "t") == 1_793_952_000.5  # epoch milliseconds
    for bad, message in (
        (True, "is not a time"),
        (5, "neither epoch seconds"),
        (float("inf"), "is not a time"),
        ("0001-01-01T00:00:00+01:00", "between 1970 and 9999"),
    ):
        with pytest.raises(ValueError, match=message):
            when(bad, "t")
    mixed = tmp_path / "m.json"
    mixed.write_text(json.dumps([1, {"a": 1}]))
    rep = FileReport(str(mixed), "x")
    assert [r for _, _, r in records(mixed, rep)] == [{"a": 1}] and rep.corrupt == 1


# --------------------------------------------------------------------------- span formats


def _write(tmp_path, name, rows) -> Path:
    p = tmp_path / name
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


T = "2026-11-02T09:00:0{}"


def test_agents_sdk_chat_completions_usage_and_models_from_response_or_metadata(tmp_path):
    def span(sid, data, a=0, b=1):
        return {
            "object": "trace.span",
            "id": sid,
            "trace_id": "tr",
            "started_at": T.format(a) + "Z",
            "ended_at": T.format(b) + "Z",
            "span_data": data,
        }

    rows = [
        span(
            "g1",
            {
                "type": "generation",
                "model": "gpt-4o",
                "usage": {
                    "prompt_tokens": 500,
                    "completion_tokens": 20,
                    "prompt_tokens_details": {"cached_tokens": 100},
                },
            },
        ),
        span(
            "r1",
            {"type": "response", "response": {"model": "gpt-5"}, "usage": {"input_tokens": 10, "output_tokens": 2}},
            2,
            3,
        ),
        span("r2", {"type": "response", "metadata": {"model": "gpt-5-mini"}, "usage": None}, 4, 5),
        span("bad", {"type": "response", "usage": [1]}, 6, 7),
        span("bad2", {"type": "response", "usage": {"input_tokens_details": [{"cached_tokens": "x"}]}}, 6, 7),
        span("bad3", {"type": "response", "usage": {"input_tokens_details": 7}}, 6, 7),
        {"object": "trace.span", "id": "x", "trace_id": "tr", "span_data": "nope"},
        {"object": "trace.span", "trace_id": "tr", "span_data": {}},
    ]
    (s,), (rep,) = read_sessions([(_write(tmp_path, "a.jsonl", rows), "openai-agents")])
    calls = {n.id: n.call for n in s.calls}
    assert (calls["g1"].model, calls["g1"].input_tokens, calls["g1"].cache_read_tokens) == ("gpt-4o", 500, 100)
    assert calls["r1"].model == "gpt-5" and calls["r2"].model == "gpt-5-mini" and calls["r2"].input_tokens == 0
    assert rep.corrupt == 5  # three bad usages, a span_data that is not an object, a span without an id


def test_langsmith_parents_from_parent_run_ids_and_model_from_invocation_params(tmp_path):
    base = {"trace_id": "root", "start_time": T.format(1), "end_time": T.format(2)}
    rows = [
        {"id": "root", "trace_id": "root", "run_type": "chain", "start_time": T.format(0), "end_time": None},
        {
            "id": "c",
            "run_type": "llm",
            "parent_run_ids": ["root"],
            **base,
            "prompt_tokens": 50,
            "completion_tokens": 5,
            "extra": {"invocation_params": {"model_name": "gpt-4o-mini"}},
        },
        {"id": "d", "run_type": "llm", **base, "first_token_time": T.format(5)},
        {"id": "e", "run_type": "llm", **base, "prompt_token_details": [1]},
        {"id": "f", "run_type": "tool", **base, "end_time": None},
        {"run_type": "llm", **base},
    ]
    (s,), (rep,) = read_sessions([(_write(tmp_path, "r.jsonl", rows), "langsmith")])
    (c,) = s.calls
    assert c.parent == "root" and c.call.model == "gpt-4o-mini"  # under the chain, by parent_run_ids
    # d: first token after the end; e: details not an object; f: a tool that never ended; the last: no id
    assert rep.corrupt == 4


def test_langfuse_usage_types_and_trace_exports(tmp_path):
    from agentsim.traces.langfuse import usage_parts

    # total is not read; prompt/completion names count as input and output; 1h cache writes apart
    assert usage_parts({"prompt": 10, "completion": 3, "total": 13, "cache_creation_1h_input_tokens": 4}) == {
        "input_tokens": 14,
        "cache_read": 0,
        "cache_write": 4,
        "cache_write_1h": 4,
        "output": 3,
        "reasoning": 0,
    }
    obs = {
        "id": "o",
        "type": "GENERATION",
        "startTime": T.format(0) + "Z",
        "endTime": T.format(1) + "Z",
        "usageDetails": 5,
        "environment": "prod",
    }
    trace = {
        "id": "t",
        "sessionId": "s",
        "observations": [obs, "junk", {**obs, "id": "ok", "usageDetails": {"input": 1}}],
    }
    (s,), (rep,) = read_sessions([(_write(tmp_path, "t.jsonl", [trace]), "langfuse")])
    assert s.project == "prod" and [n.id for n in s.calls] == ["ok"]
    assert rep.corrupt == 2 and rep.first_problem == "record 0, observation 1 of its trace: not an object"


def test_detection_of_large_documents_by_their_keys(tmp_path):
    filler = "x" * 300_000
    cases = {
        "openai-agents": [{"object": "trace.span", "span_data": {"type": "agent"}, "pad": filler}],
        "langfuse": [{"type": "SPAN", "startTime": T.format(0), "traceId": "t", "pad": filler}],
        "claude-code": [{"sessionId": "s", "pad": filler}],
        "codex": [{"timestamp": T.format(0), "payload": {}, "pad": filler}],
    }
    for fmt, doc in cases.items():
        p = tmp_path / f"{fmt}.json"
        p.write_text(json.dumps(doc))
        assert detect_format(p) == fmt, fmt
    (tmp_path / "plain.json").write_text(json.dumps([{"hello": filler}]))
    assert detect_format(tmp_path / "plain.json") is None
    assert detect_format(tmp_path / "missing.json") is None


# --------------------------------------------------------------------------- fit


def _calls_session(sid: str, side_models: list[str]) -> Session:
    nodes, t = [], dt.datetime(2026, 11, 2, 9, tzinfo=dt.UTC).timestamp()
    for k in range(8):
        c = Call(f"{sid}c{k}", "claude-sonnet-4-5", "anthropic", input_tokens=1000 + 100 * k, output_tokens=50)
        nodes.append(Node(f"c{k}", "call", t, t + 2.0 + 0.1 * k, call=c))
        t += 3.0
    for j, m in enumerate(side_models):
        c = Call(f"{sid}x{j}", m, "anthropic", input_tokens=300, output_tokens=10)
        first = nodes[0].start
        nodes.append(Node(f"x{j}", "call", first + 2.5 + 3 * j, first + 2.8 + 3 * j, call=c))
    link_nodes(nodes)
    return Session(sid, "otel", "f", nodes=nodes)


def test_models_with_too_few_calls_get_the_bundled_profile_or_the_default_assumption():
    sessions = [_calls_session("a", ["claude-opus-4-8"]), _calls_session("b", ["claude-haiku-4-5"])]
    res = fit_agent(sessions, name="x", stem="x", sim_runs=100)
    models = res.scenario["models"]
    assert models["claude-opus-4-8"]["profile"] == "claude-opus-4-8"  # bundled with agentsim
    assert models["claude-haiku-4-5"]["profile"] == "./x.claude-haiku-4-5.profile.yaml"
    assert res.profiles["x.claude-haiku-4-5.profile.yaml"]["kind"] == "assumption"
    assert any("too few" in n and "bundled" in n for n in res.notes)
    assert any("too few" in n and "default assumption" in n for n in res.notes)
    with pytest.raises(FitError, match="leaves"):
        fit_agent(sessions[:1], name="x", stem="x", holdout=0.5)

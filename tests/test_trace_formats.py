"""Langfuse, LangSmith and OpenAI Agents SDK exports, and OpenTelemetry GenAI spans under the current and the
deprecated attribute names -> calls, tools, containers and human gaps, with the replay guarantees.

The fixtures in tests/fixtures/traces hold one conversation each, in each tool's own export shape:

    trace A (t = 0 .. 13.5 s): an agent container "coder" holding
        call c1 [0, 4]    input 10,000 (8,000 cache reads, 1,500 cache writes), output 300, first token at 1 s
        tools bash [4, 10] and read [4, 5], in parallel
        call c2 [10, 13]  input 11,000 (10,000 reads, 1,000 writes), output 200, first token at 10.8 s
    trace B (t = 60 .. 62 s): call c3, input 12,000, output 100
    -> one session (a shared session/thread/group id), wall time 62 s, human time 13.5 .. 60 s.

Content fields (prompts, completions, tool arguments and results) hold SECRET-... markers that must appear in
no output. Every expected number below is read off that plan, not off the code's output.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.traces.session_files import SessionInputError, detect_format, read_sessions

FIX = Path(__file__).resolve().parent / "fixtures" / "traces"
T0 = dt.datetime(2026, 11, 2, 9, 0, tzinfo=dt.UTC).timestamp()
runner = CliRunner()


def one_session(path: Path, fmt: str = "auto"):
    sessions, reports = read_sessions([(path, fmt)])
    return sessions, reports


def shape(session):
    """(kind, start, end, parent, agent, preds) per node, times from T0, sorted by start then kind."""
    return sorted(
        (n.kind, round(n.start - T0, 3), round(n.end - T0, 3), n.parent, n.agent, tuple(sorted(n.preds)))
        for n in session.nodes
    )


def tokens(session):
    return [
        (
            c.call.input_tokens,
            c.call.cache_read_tokens,
            c.call.cache_write_tokens,
            c.call.output_tokens,
            c.call.reasoning_tokens,
            None if c.call.ttft_s is None else round(c.call.ttft_s, 3),
        )
        for c in sorted(session.calls, key=lambda n: n.start)
    ]


def test_langfuse_trace_export_is_one_session_with_a_container_tools_and_a_human_gap():
    sessions, reports = one_session(FIX / "langfuse" / "traces.json")
    (s,) = sessions
    assert s.id == "conv-1" and s.source == "langfuse" and s.wall_time_s == pytest.approx(62.0)
    agent = "lf-agent"
    assert shape(s) == [
        ("agent", 0.0, 13.5, None, "main", ()),
        ("call", 0.0, 4.0, agent, "coder", ()),
        ("call", 10.0, 13.0, agent, "coder", ("lf-t1", "lf-t2")),
        ("call", 60.0, 62.0, None, "main", ("h1",)),
        ("human", 13.5, 60.0, None, "main", (agent,)),
        ("tool", 4.0, 5.0, agent, "coder", ("lf-c1",)),
        ("tool", 4.0, 10.0, agent, "coder", ("lf-c1",)),
    ]
    # usage types add up: input = input + cache_read_input_tokens + cache_creation_input_tokens; c3 uses the
    # deprecated usage object; the EVENT (no endTime) under the agent is no node
    assert tokens(s) == [
        (10000, 8000, 1500, 300, 0, 1.0),
        (11000, 10000, 1000, 200, 0, 0.8),
        (12000, 0, 0, 100, 0, None),
    ]
    assert {n.name for n in s.nodes if n.kind == "tool"} == {"bash", "read"}
    assert reports[0].corrupt == 0


def test_langfuse_api_pages_as_json_lines_and_openai_usage_types():
    (s,), _ = one_session(FIX / "langfuse" / "observations.jsonl")
    assert s.id == "lf-trace-C"  # no sessionId: the trace is the session
    # o1: input 1500 + input_cached_tokens 500; output 600 + output_reasoning_tokens 400; o3: 100 + 2100 cached
    assert tokens(s) == [(2000, 500, 0, 1000, 400, 2.0), (2200, 2100, 0, 50, 0, None)]
    assert [n.kind for n in sorted(s.nodes, key=lambda n: n.start)] == ["call", "tool", "call"]


def test_langsmith_runs_form_a_thread_with_the_dotted_order_parent():
    (s,), _ = one_session(FIX / "langsmith" / "runs.jsonl")
    assert s.id == "conv-1" and s.source == "langsmith" and s.project == "support-bot"
    root = "ls-root"
    assert shape(s) == [
        ("agent", 0.0, 13.5, None, "main", ()),
        ("call", 0.0, 4.0, root, "main", ()),
        ("call", 10.0, 13.0, root, "main", ("ls-t1", "ls-t2")),
        ("call", 60.0, 62.0, None, "main", ("h1",)),
        ("human", 13.5, 60.0, None, "main", (root,)),
        ("tool", 4.0, 5.0, root, "main", ("ls-c1",)),  # ls-t2: no parent_run_id, placed by its dotted_order
        ("tool", 4.0, 10.0, root, "main", ("ls-c1",)),
    ]
    # prompt_tokens include the cached tokens (LangChain's usage_metadata)
    assert tokens(s) == [
        (10000, 8000, 1500, 300, 0, 1.0),
        (11000, 10000, 1000, 200, 0, 0.8),
        (12000, 11000, 1000, 100, 0, None),
    ]
    assert {(c.call.model, c.call.provider) for c in s.calls} == {("claude-sonnet-4-5", "anthropic")}


def test_openai_agents_spans_with_generation_response_function_agent_and_handoff():
    (s,), reports = one_session(FIX / "openai-agents" / "traces.jsonl")
    assert s.id == "conv-1" and s.source == "openai-agents" and s.project == "support"
    assert shape(s) == [
        ("agent", 0.0, 13.5, None, "main", ()),
        ("call", 0.0, 4.0, "span_agent", "coder", ()),
        ("call", 10.0, 13.0, "span_agent", "coder", ("span_t1", "span_t2")),
        ("call", 60.0, 62.0, None, "main", ("h1",)),
        ("human", 13.5, 60.0, None, "main", ("span_agent",)),
        ("tool", 4.0, 5.0, "span_agent", "coder", ("span_c1",)),
        ("tool", 4.0, 10.0, "span_agent", "coder", ("span_c1",)),
    ]
    # input_tokens include cached_tokens; output_tokens include reasoning_tokens (OpenAI); the response span's
    # details are lists (summed); OpenAI reports no cache writes
    assert tokens(s) == [
        (10000, 8000, 0, 300, 100, None),
        (11000, 10000, 0, 200, 0, None),
        (12000, 11000, 0, 100, 0, None),
    ]
    assert [c.call.model for c in sorted(s.calls, key=lambda n: n.start)] == ["gpt-5", "unknown", "gpt-5"]
    assert any("name no model" in n for n in reports[0].notes)


def test_detection_of_every_shape(tmp_path):
    assert detect_format(FIX / "langfuse" / "traces.json") == "langfuse"
    assert detect_format(FIX / "langfuse" / "observations.jsonl") == "langfuse"
    assert detect_format(FIX / "langsmith" / "runs.jsonl") == "langsmith"
    assert detect_format(FIX / "openai-agents" / "traces.jsonl") == "openai-agents"
    runs = [json.loads(line) for line in (FIX / "langsmith" / "runs.jsonl").read_text().splitlines()]
    (tmp_path / "runs.json").write_text(json.dumps({"runs": runs}))  # one document: a page of runs
    assert detect_format(tmp_path / "runs.json") == "langsmith"
    big = {"data": runs * 2000}  # a document larger than what detection reads: told by its keys
    (tmp_path / "big.json").write_text(json.dumps(big))
    assert detect_format(tmp_path / "big.json") == "langsmith"
    (tmp_path / "x.json").write_text(json.dumps([{"hello": 1}]))
    assert detect_format(tmp_path / "x.json") is None
    with pytest.raises(SessionInputError, match="Langfuse, LangSmith or OpenAI Agents SDK"):
        read_sessions([(tmp_path / "x.json", "auto")])


def test_replay_of_each_format_prices_the_recorded_usage():
    r = runner.invoke(app, ["replay", str(FIX / "langsmith"), "--variant", "identity", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    when = dt.datetime.fromtimestamp(T0, dt.UTC)
    expected = 0.0
    for inp, read, write, out in ((10000, 8000, 1500, 300), (11000, 10000, 1000, 200), (12000, 11000, 1000, 100)):
        u = Usage(input_tokens=inp, cache_read_tokens=read, cache_write_tokens=write, output_tokens=out)
        expected += float(
            calc_price(u, "claude-sonnet-4-5", provider_id="anthropic", genai_request_timestamp=when).total_price
        )
    assert doc["recorded"]["cost_usd"] == pytest.approx(expected, rel=1e-9)
    assert doc["recorded"]["wall_time_s"] == pytest.approx(62.0)
    assert doc["variants"]["identity"]["vs_recorded"]["delta_time_s"] == pytest.approx(0.0, abs=1e-9)


def test_no_content_reaches_any_output(tmp_path):
    secrets = set()
    for f in FIX.rglob("*.json*"):
        secrets.update(re.findall(r"SECRET-[A-Za-z0-9-]+", f.read_text()))
    assert len(secrets) >= 15
    out = tmp_path / "res"
    r = runner.invoke(app, ["replay", str(FIX), "--out", str(out), "-v", "fast"])
    assert r.exit_code == 0, r.output
    texts = [r.output]
    for p in out.iterdir():
        raw = p.read_bytes()
        assert b"SECRET" not in raw, p.name
        if p.suffix == ".parquet":
            import pandas as pd

            texts.append(pd.read_parquet(p).to_csv())
    assert not any("SECRET" in t for t in texts)


# --------------------------------------------------------------------------- hostile records


def _obs(oid, kind="GENERATION", start=0.0, end=1.0, parent=None, **extra):
    base = dt.datetime.fromtimestamp(T0, dt.UTC)
    iso = lambda s: (base + dt.timedelta(seconds=s)).isoformat().replace("+00:00", "Z")  # noqa: E731
    return {
        "id": oid,
        "traceId": "t",
        "type": kind,
        "startTime": iso(start),
        "endTime": iso(end),
        "parentObservationId": parent,
        "model": "gpt-5",
        "usageDetails": {"input": 100, "output": 10},
        **extra,
    }


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (_obs("b", usageDetails={"input": float("nan")}), "not a whole number"),
        (_obs("b", usageDetails={"input": -5}), "is negative"),
        (_obs("b", usageDetails={"input": 2.5}), "not a whole number"),
        (_obs("b", usageDetails={"input": 1e12}), "not plausible"),
        (_obs("b", usageDetails={"input": "100"}), "not a number"),
        (_obs("b", start=5, end=1), "ends before it starts"),
        (_obs("b", startTime="yesterday"), "is not an ISO 8601 time"),
        (_obs("b", startTime=1e20), "neither epoch seconds nor epoch milliseconds"),
        (_obs("b", endTime=None), "has no endTime"),
        (_obs("b", completionStartTime="2020-01-01T00:00:00Z"), "completionStartTime lies outside"),
        ({"traceId": "t", "type": "GENERATION", "startTime": "2026-11-02T09:00:00Z"}, "needs an id"),
    ],
)
def test_a_hostile_langfuse_record_is_skipped_and_named(tmp_path, bad, reason):
    f = tmp_path / "obs.json"
    f.write_text(json.dumps([_obs("good", start=0, end=1), bad]))
    (s,), (rep,) = read_sessions([(f, "langfuse")])
    assert len(s.calls) == 1 and rep.corrupt == 1
    assert reason in rep.first_problem and "record 1" in rep.first_problem, rep.first_problem
    alone = tmp_path / "bad.json"
    alone.write_text(json.dumps([bad]))
    r = runner.invoke(app, ["replay", str(alone), "--json"])
    assert r.exit_code == 2 and "bad.json" in r.stderr and reason in r.stderr


def test_hostile_langsmith_and_agents_records_exit_2_naming_the_record(tmp_path):
    f = tmp_path / "runs.jsonl"
    f.write_text(
        json.dumps(
            {
                "id": "r1",
                "trace_id": "r1",
                "run_type": "llm",
                "start_time": "2026-11-02T09:00:00",
                "end_time": "2026-11-02T09:00:01",
                "prompt_tokens": -1,
            }
        )
        + "\n"
        + "[not json\n"
        + json.dumps(
            {
                "id": "r2",
                "parent_run_id": "r1",
                "run_type": "llm",
                "start_time": "2026-11-02T09:00:00",
                "end_time": "2026-11-02T09:00:01",
            }
        )
        + "\n"
    )
    r = runner.invoke(app, ["replay", str(f), "--json"])
    assert r.exit_code == 2 and "runs.jsonl" in r.stderr
    # the broken line, the negative count and the orphan without a trace id: three corrupt lines
    assert "3 corrupt lines skipped" in r.stderr and "line 2: not a JSON record" in r.stderr
    f.write_text(f.read_text().splitlines()[0] + "\n")
    r = runner.invoke(app, ["replay", str(f), "--json"])
    assert r.exit_code == 2 and "record 0 (run 'r1'): token count -1 is negative" in r.stderr
    g = tmp_path / "spans.jsonl"
    g.write_text(
        json.dumps(
            {
                "object": "trace.span",
                "id": "s1",
                "trace_id": "t1",
                "started_at": "2026-11-02T09:00:00",
                "ended_at": None,
                "span_data": {"type": "generation"},
            }
        )
        + "\n"
    )
    r = runner.invoke(app, ["replay", str(g), "--json"])
    assert r.exit_code == 2 and "span 's1'" in r.stderr and "has no ended_at" in r.stderr


def test_parent_cycles_and_deep_nesting_end_promptly(tmp_path):
    cyc = [
        _obs("a", kind="SPAN", parent="b", end=5),
        _obs("b", kind="SPAN", parent="a", end=5),
        _obs("c", parent="a"),
        _obs("ok", start=6, end=7),
    ]
    f = tmp_path / "cycle.json"
    f.write_text(json.dumps(cyc))
    (s,), (rep,) = read_sessions([(f, "langfuse")])
    # the cycle a <-> b is cut at its earliest span (a, read as a root): the call below it is kept, and said
    assert sorted(n.id for n in s.calls) == ["c", "ok"]
    assert any("form a cycle" in n and "cut at" in n for n in rep.notes), rep.notes
    deep = [_obs(f"s{i}", kind="SPAN", parent=f"s{i - 1}" if i else None, end=10) for i in range(400)]
    deep.append(_obs("leaf", parent="s399", start=1, end=2))
    g = tmp_path / "deep.json"
    g.write_text(json.dumps(deep))
    with pytest.raises(SessionInputError, match="levels deep"):
        read_sessions([(g, "langfuse")])


# --------------------------------------------------------------------------- OpenTelemetry names


def _otlp(attrs: dict) -> dict:
    def val(v):
        return (
            {"intValue": str(v)}
            if isinstance(v, int)
            else {"doubleValue": v}
            if isinstance(v, float)
            else {"stringValue": v}
        )

    ns = int(T0 * 1e9)
    span = {
        "traceId": "ab" * 16,
        "spanId": "cd" * 8,
        "name": "chat m",
        "startTimeUnixNano": str(ns),
        "endTimeUnixNano": str(ns + 3_000_000_000),
        "attributes": [{"key": k, "value": val(v)} for k, v in attrs.items()],
    }
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [span]}]}]}


CURRENT = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "anthropic",
    "gen_ai.request.model": "claude-sonnet-4-5",
    "gen_ai.usage.input_tokens": 10000,
    "gen_ai.usage.cache_read.input_tokens": 8000,
    "gen_ai.usage.cache_creation.input_tokens": 1500,
    "gen_ai.usage.output_tokens": 300,
    "gen_ai.usage.reasoning.output_tokens": 120,
    "gen_ai.response.time_to_first_chunk": 1.25,
}
DEPRECATED = {
    "gen_ai.system": "anthropic",
    "gen_ai.request.model": "claude-sonnet-4-5",
    "gen_ai.usage.prompt_tokens": 10000,
    "gen_ai.usage.cache_read_input_tokens": 8000,
    "gen_ai.usage.cache_creation_input_tokens": 1500,
    "gen_ai.usage.completion_tokens": 300,
    "gen_ai.usage.reasoning_tokens": 120,
    "gen_ai.server.time_to_first_token": 1.25,
}


SENTRY = {  # the names Sentry's AI agents instrumentation writes (cached and reasoning as sub-attributes)
    **{k: v for k, v in DEPRECATED.items() if "cache_read" not in k and "reasoning" not in k},
    "gen_ai.usage.input_tokens.cached": 8000,
    "gen_ai.usage.output_tokens.reasoning": 120,
}


@pytest.mark.parametrize("names", [CURRENT, DEPRECATED, SENTRY], ids=["current", "deprecated", "sentry"])
def test_otel_genai_current_and_deprecated_names_give_the_same_call(tmp_path, names):
    f = tmp_path / "span.json"
    f.write_text(json.dumps(_otlp(names)))
    (s,), _ = read_sessions([(f, "auto")])
    (c,) = [n.call for n in s.calls]
    assert (c.model, c.provider) == ("claude-sonnet-4-5", "anthropic")
    assert (c.input_tokens, c.cache_read_tokens, c.cache_write_tokens, c.output_tokens, c.reasoning_tokens) == (
        10000,
        8000,
        1500,
        300,
        120,
    )
    assert c.ttft_s == 1.25


def test_otel_input_without_the_cached_tokens_is_added_back(tmp_path):
    f = tmp_path / "span.json"
    f.write_text(json.dumps(_otlp({**CURRENT, "gen_ai.usage.input_tokens": 500})))  # Anthropic style: uncached only
    (s,), (rep,) = read_sessions([(f, "auto")])
    assert s.calls[0].call.input_tokens == 500 + 8000 + 1500
    assert any("added back" in n for n in rep.notes)

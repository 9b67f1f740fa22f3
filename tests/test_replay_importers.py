"""Session importers: Claude Code JSONL, Codex CLI rollouts, OTLP JSON traces -> calls, tools, human gaps.

Every expected number below was worked out by hand from the fixture lines in
``tests/fixtures/sessions`` (see the comments), not copied from the code's output.
Costs are recomputed with ``genai_prices.calc_price`` call by call.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import shutil
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price

from agentsim.traces.session_files import SessionInputError, detect_format, read_sessions, select_sessions
from agentsim.traces.sessions import Node, link_nodes

FIX = Path(__file__).resolve().parent / "fixtures" / "sessions"


def t(s: str) -> float:
    return dt.datetime.fromisoformat(s + "+00:00").timestamp()


def load(sub: str, fmt: str = "auto"):
    return read_sessions([(FIX / sub, fmt)])


def by_id(sessions):
    return {s.id: s for s in sessions}


def usage_of(call):
    return (
        call.model,
        call.tier,
        call.input_tokens,
        call.cache_read_tokens,
        call.cache_write_5m_tokens,
        call.cache_write_1h_tokens,
        call.output_tokens,
        call.reasoning_tokens,
    )


def expected_cost(rows, provider):
    """Sum of genai_prices.calc_price over hand-listed calls (model, tier, input, read, w5m, w1h, out, reasoning,
    start, price context)."""
    total = 0.0
    for model, _tier, inp, read, w5m, w1h, out, reas, start, ctx in rows:
        u = Usage(
            input_tokens=inp,
            cache_read_tokens=read,
            cache_write_tokens=w5m + w1h,
            cache_write_1h_tokens=w1h,
            output_tokens=out,
            output_reasoning_tokens=reas,
        )
        when = dt.datetime.fromtimestamp(t(start), dt.UTC)
        total += float(
            calc_price(u, model, provider_id=provider, price_context=ctx, genai_request_timestamp=when).total_price
        )
    return total


# --------------------------------------------------------------------------- Claude Code

OPUS, HAIKU, SONNET = "claude-opus-4-8", "claude-haiku-4-5-20251001", "claude-sonnet-4-5-20250929"
# message id -> (model, tier, input incl. cached = input+cache_creation+cache_read, cache read, 5m write, 1h write,
#                output, reasoning, start (parent line), end (last content line))
CLAUDE = {
    # prompt u1 09:00:00 -> a1 (partial usage) 09:00:04 -> a2 tool_use Bash 09:00:06, final usage 3/2000/10000/150
    "msg_A1": (
        OPUS,
        "standard",
        3 + 2000 + 10000,
        10000,
        2000,
        0,
        150,
        0,
        "2026-11-02T09:00:00",
        "2026-11-02T09:00:06",
    ),
    # tool_result u2 09:01:41 -> a3, a4, a5 and a duplicate of a5 at 09:01:46; cache_creation 1000 = 400 5m + 600 1h
    "msg_A2": (
        OPUS,
        "standard",
        5 + 1000 + 12003,
        12003,
        400,
        600,
        120,
        0,
        "2026-11-02T09:01:41",
        "2026-11-02T09:01:46",
    ),
    # after both parallel tool results (u4 09:01:49) -> a6 09:01:57, usage.speed fast
    "msg_A3": (OPUS, "fast", 8 + 300 + 13008, 13008, 300, 0, 400, 0, "2026-11-02T09:01:49", "2026-11-02T09:01:57"),
    # prompt u5 09:05:00 -> a8 Task tool_use 09:05:06, no requestId
    "msg_A4": (OPUS, "standard", 10 + 500 + 13316, 13316, 500, 0, 200, 0, "2026-11-02T09:05:00", "2026-11-02T09:05:06"),
    # subagent: prompt su1 09:05:06.5 -> sa1 09:05:09.5; tool_result su2 09:05:12 -> sa2 09:06:09
    "msg_B1": (HAIKU, "standard", 20 + 3000, 0, 3000, 0, 60, 0, "2026-11-02T09:05:06.500", "2026-11-02T09:05:09.500"),
    "msg_B2": (HAIKU, "standard", 4 + 200 + 3020, 3020, 200, 0, 3000, 0, "2026-11-02T09:05:12", "2026-11-02T09:06:09"),
    # Task result u6 09:06:10 -> a9 09:06:14
    "msg_A5": (OPUS, "standard", 6 + 13826, 13826, 0, 0, 90, 0, "2026-11-02T09:06:10", "2026-11-02T09:06:14"),
    # sess-bbb: b-u1 14:00:00 -> b-a1 14:00:12; b-u2 14:00:13 -> b-a2 14:00:21 (400 written for 1 h)
    "msg_C1": (OPUS, "standard", 2 + 5000, 0, 5000, 0, 300, 0, "2026-11-03T14:00:00", "2026-11-03T14:00:12"),
    "msg_C2": (OPUS, "standard", 3 + 400 + 5002, 5002, 0, 400, 240, 0, "2026-11-03T14:00:13", "2026-11-03T14:00:21"),
    # sess-ccc (a resumed session repeating two sess-bbb lines): c-u1 15:00:00 -> c-a1 15:00:05
    "msg_D1": (SONNET, "standard", 100 + 5002, 5002, 0, 0, 120, 0, "2026-11-03T15:00:00", "2026-11-03T15:00:05"),
}


def test_claude_code_calls_tokens_and_times():
    sessions, reports = load("claude-code")
    assert sorted(s.id for s in sessions) == ["sess-aaa", "sess-bbb", "sess-ccc"]
    calls = {n.call.call_id: n for s in sessions for n in s.calls}
    # duplicated content lines, the <synthetic> message and the replayed lines are not calls
    assert sorted(calls) == sorted(CLAUDE)
    for mid, (model, tier, inp, read, w5m, w1h, out, reas, start, end) in CLAUDE.items():
        n = calls[mid]
        assert usage_of(n.call) == (model, tier, inp, read, w5m, w1h, out, reas), mid
        assert (n.start, n.end) == (t(start), t(end)), mid
    s = by_id(sessions)
    assert [len(s[k].calls) for k in ("sess-aaa", "sess-bbb", "sess-ccc")] == [7, 2, 1]
    # wall time: first node start to last node end
    assert s["sess-aaa"].wall_time_s == pytest.approx(6 * 60 + 14)  # 09:00:00 -> 09:06:14
    assert s["sess-bbb"].wall_time_s == pytest.approx(21.0)
    assert s["sess-ccc"].wall_time_s == pytest.approx(5.0)  # the repeated lines from sess-bbb are skipped
    aaa = {r.path.split("/")[-1]: r for r in reports}["sess-aaa.jsonl"]
    assert aaa.corrupt == 1 and aaa.corrupt_lines == [14]
    assert any("synthetic" in note for note in aaa.notes)
    assert {s.project for s in sessions} == {"-home-dev-shop", "-home-dev-blog"}


def test_claude_code_tools_subagent_and_human_time():
    aaa = by_id(load("claude-code")[0])["sess-aaa"]
    nodes = {n.id: n for n in aaa.nodes}
    tools = {n.name: n for n in aaa.nodes if n.kind == "tool"}
    assert sorted(tools) == ["Bash", "Glob", "Grep", "Read", "Task"]
    bash = tools["Bash"]  # the long tool call: from the call's end (09:00:06) to its result (09:01:41)
    assert bash.duration == pytest.approx(95.0)
    read, grep = tools["Read"], tools["Grep"]  # asked together, run in parallel
    assert read.start == grep.start == t("2026-11-02T09:01:46")
    assert (read.end, grep.end) == (t("2026-11-02T09:01:47.500"), t("2026-11-02T09:01:49"))
    a3 = next(n for n in aaa.calls if n.call.call_id == "msg_A3")
    assert set(a3.preds) == {read.id, grep.id}  # the next call waits for both
    assert read.id not in grep.preds and grep.id not in read.preds
    task = tools["Task"]  # holds the subagent's calls and tools (toolUseResult.agentId = sub1)
    inner = [n for n in aaa.nodes if n.parent == task.id]
    assert sorted(n.call.call_id if n.call else n.name for n in inner) == ["Glob", "msg_B1", "msg_B2"]
    assert {n.agent for n in inner} == {"sub1"}
    assert all(nodes[p].parent == task.id for n in inner for p in n.preds)
    humans = [n for n in aaa.nodes if n.kind == "human"]  # 09:01:57 (last answer) -> 09:05:00 (next prompt)
    assert [(h.start, h.end) for h in humans] == [(t("2026-11-02T09:01:57"), t("2026-11-02T09:05:00"))]


def test_claude_code_costs_match_calc_price():
    sessions, _ = load("claude-code")
    rows = [
        (m, tier, inp, rd, w5, w1, out, rs, start, {"speed": "fast"} if tier == "fast" else None)
        for (m, tier, inp, rd, w5, w1, out, rs, start, _end) in CLAUDE.values()
    ]
    from agentsim.replay.retime import replay

    res = replay(sessions, {})
    assert res.totals("recorded")["cost_usd"] == pytest.approx(expected_cost(rows, "anthropic"), rel=1e-12)


def test_claude_code_session_file_alone_brings_its_subagents(tmp_path):
    sessions, _ = read_sessions([(FIX / "claude-code/-home-dev-shop/sess-aaa.jsonl", "auto")])
    assert len(sessions) == 1 and len(sessions[0].calls) == 7


# --------------------------------------------------------------------------- Codex CLI

GPT = "gpt-5.3-codex"
CODEX = [  # (model, tier, input incl. cached, cached, 5m, 1h, output incl. reasoning, reasoning, start, end)
    # task_started 10:00:00.300 -> token_count 10:00:04.300 (last_token_usage)
    (GPT, "standard", 8000, 6000, 0, 0, 300, 200, "2026-11-04T10:00:00.300", "2026-11-04T10:00:04.300"),
    # shell output 10:00:34.300 -> token_count 10:00:37.300; the repeat at 10:00:37.400 is not a call
    (GPT, "standard", 9000, 8000, 0, 0, 200, 50, "2026-11-04T10:00:34.300", "2026-11-04T10:00:37.300"),
    # turn 2: only total_token_usage; the call is 27000-17000 in, 22000-14000 cached, 900-500 out, 450-250 reasoning
    (GPT, "standard", 10000, 8000, 0, 0, 400, 200, "2026-11-04T10:02:00.100", "2026-11-04T10:02:05.100"),
    # subagent Scout: its first token count (before task_started) repeats the parent's history and is skipped
    (GPT, "standard", 4000, 3000, 0, 0, 100, 50, "2026-11-04T10:00:05.100", "2026-11-04T10:00:08.100"),
    (GPT, "standard", 4500, 4000, 0, 0, 600, 100, "2026-11-04T10:00:09.100", "2026-11-04T10:00:20.100"),
    # rollout 3: turn_context service_tier priority; two parallel shell calls
    (GPT, "priority", 5000, 0, 0, 0, 150, 100, "2026-11-05T11:00:00.020", "2026-11-05T11:00:02.520"),
    (GPT, "priority", 5600, 5000, 0, 0, 80, 0, "2026-11-05T11:00:09.520", "2026-11-05T11:00:12.520"),
]


def test_codex_calls_tokens_and_times():
    sessions, reports = load("codex")
    assert len(sessions) == 2  # the subagent rollout sits inside its parent's session
    got = sorted((usage_of(n.call), n.start, n.end) for s in sessions for n in s.calls)
    want = sorted(((m, tier, i, c, w5, w1, o, r), t(a), t(b)) for m, tier, i, c, w5, w1, o, r, a, b in CODEX)
    assert got == want
    s = {x.project: x for x in sessions}
    assert s["api"].wall_time_s == pytest.approx(124.8)  # 10:00:00.300 -> 10:02:05.100
    assert s["web"].wall_time_s == pytest.approx(12.5)  # 11:00:00.020 -> 11:00:12.520
    humans = [n for n in s["api"].nodes if n.kind == "human"]  # 10:00:37.300 -> user_message 10:02:00
    assert [round(h.duration, 6) for h in humans] == [82.7]
    rep = next(r for r in reports if "T10-00-00" in r.path)
    assert rep.corrupt == 1 and rep.corrupt_lines == [16]
    assert any("repeat" in n for n in rep.notes)


def test_codex_tools_subagent_and_parallel_tools():
    sessions, _ = load("codex")
    api = next(s for s in sessions if s.project == "api")
    agent = next(n for n in api.nodes if n.kind == "agent")
    assert agent.agent == "Scout" and (agent.start, agent.end) == (
        t("2026-11-04T10:00:05.100"),
        t("2026-11-04T10:00:20.100"),
    )
    shell = next(n for n in api.nodes if n.name == "shell")
    assert shell.duration == pytest.approx(30.0)  # call end 10:00:04.300 -> output 10:00:34.300
    second = next(n for n in api.calls if n.start == t("2026-11-04T10:00:34.300"))
    assert set(second.preds) == {shell.id, agent.id}  # the subagent ran beside the shell tool
    web = next(s for s in sessions if s.project == "web")
    tools = sorted((n for n in web.nodes if n.kind == "tool"), key=lambda n: n.end)
    assert [round(n.duration, 6) for n in tools] == [3.0, 7.0]
    last = max(web.calls, key=lambda n: n.start)
    assert set(last.preds) == {tools[0].id, tools[1].id}


def test_codex_costs_match_calc_price():
    from agentsim.replay.retime import replay

    sessions, _ = load("codex")
    rows = [
        (m, tier, i, c, w5, w1, o, r, a, {"service_tier": tier} if tier != "standard" else None)
        for m, tier, i, c, w5, w1, o, r, a, _b in CODEX
    ]
    res = replay(sessions, {})
    assert res.totals("recorded")["cost_usd"] == pytest.approx(expected_cost(rows, "openai"), rel=1e-12)


# --------------------------------------------------------------------------- OpenTelemetry

OTEL = [  # (model, provider, input incl. cached, read, 5m write, output, reasoning, start s, end s after 08:00)
    (
        "claude-sonnet-4-5-20250929",
        "anthropic",
        4000,
        3000,
        500,
        200,
        0,
        "2026-11-06T08:00:00.500",
        "2026-11-06T08:00:04.500",
    ),
    ("claude-sonnet-4-5", "anthropic", 5000, 4000, 0, 300, 0, "2026-11-06T08:00:12.500", "2026-11-06T08:00:19.500"),
    # input_tokens 300 < 5000 read + 100 written: Anthropic-style uncached count, so 300 + 5100
    ("claude-sonnet-4-5", "anthropic", 5400, 5000, 100, 150, 0, "2026-11-06T08:01:00.500", "2026-11-06T08:01:06.500"),
    ("gpt-5.3-codex", "openai", 1000, 0, 0, 100, 0, "2026-11-07T08:00:00", "2026-11-07T08:00:03"),
    ("gpt-5.3-codex", "openai", 2000, 1000, 0, 50, 20, "2026-11-07T08:01:40", "2026-11-07T08:01:42.500"),
]


def test_otel_calls_tokens_times_and_structure():
    sessions, reports = load("otel")
    got = sorted(
        (
            n.call.model,
            n.call.provider,
            n.call.input_tokens,
            n.call.cache_read_tokens,
            n.call.cache_write_5m_tokens,
            n.call.output_tokens,
            n.call.reasoning_tokens,
            n.start,
            n.end,
        )
        for s in sessions
        for n in s.calls
    )
    want = sorted((m, p, i, r, w, o, rs, t(a), t(b)) for m, p, i, r, w, o, rs, a, b in OTEL)
    assert got == want
    conv = by_id(sessions)["conv-42"]  # two traces of one conversation
    assert conv.project == "support-bot"
    assert conv.wall_time_s == pytest.approx(70.0)  # 08:00:00 -> 08:01:10
    humans = [n for n in conv.nodes if n.kind == "human"]  # end of turn 1 (20 s) -> start of turn 2 (60 s)
    assert [h.duration for h in humans] == [40.0]
    tools = {n.name: n for n in conv.nodes if n.kind == "tool"}
    chat2 = next(n for n in conv.calls if n.start == t("2026-11-06T08:00:12.500"))
    assert set(chat2.preds) == {tools["search"].id, tools["fetch"].id}
    assert conv.calls[0].call.ttft_s == pytest.approx(1.2)
    jobs = next(r for r in reports if r.path.endswith("jobs.jsonl"))
    assert jobs.corrupt == 1 and jobs.corrupt_lines == [2] and jobs.sessions == 2
    assert any("Anthropic style" in n for r in reports for n in r.notes)


# --------------------------------------------------------------------------- discovery, errors, filters


def test_detect_format():
    assert detect_format(FIX / "otel/conversation.json") == "otel"
    assert detect_format(FIX / "otel/jobs.jsonl") == "otel"
    assert detect_format(FIX / "claude-code/-home-dev-blog/sess-bbb.jsonl") == "claude-code"
    assert detect_format(next((FIX / "codex").rglob("*.jsonl"))) == "codex"


def test_everything_at_once_and_filters():
    sessions, _ = read_sessions([(FIX, "auto")])
    assert len(sessions) == 8 and sum(len(s.calls) for s in sessions) == 10 + 7 + 5
    assert len(select_sessions(sessions, project="blog")) == 2
    assert [s.id for s in select_sessions(sessions, since=dt.date(2026, 11, 3), until=dt.date(2026, 11, 3))] == [
        "sess-bbb",
        "sess-ccc",
    ]


def test_nothing_usable_and_missing_paths(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text(
        '{"type":"summary","summary":"x","leafUuid":"y"}\n{"parentUuid":null,"sessionId":"s",'
        '"type":"user","uuid":"u","timestamp":"2026-11-02T09:00:00Z","message":{"content":"hi"}}\n'
    )
    with pytest.raises(SessionInputError, match="nothing usable"):
        read_sessions([(empty, "auto")])
    with pytest.raises(SessionInputError, match="no such file"):
        read_sessions([(tmp_path / "missing", "auto")])
    junk = tmp_path / "junk.jsonl"
    junk.write_text("hello\n")
    with pytest.raises(SessionInputError, match="not a recognised session file"):
        read_sessions([(junk, "auto")])
    folder = tmp_path / "f"
    folder.mkdir()
    shutil.copy(junk, folder / "junk.jsonl")
    with pytest.raises(SessionInputError, match="no recorded session"):
        read_sessions([(folder, "auto")])


def test_link_nodes_frontier():
    # a -> (b || c) -> d ; e starts before c ends: it waits for a and b only
    nodes = [
        Node("a", "call", 0, 1),
        Node("b", "tool", 1, 3),
        Node("c", "tool", 1, 5),
        Node("d", "call", 5, 6),
        Node("e", "call", 3, 4),
    ]
    link_nodes(nodes)
    preds = {n.id: set(n.preds) for n in nodes}
    assert preds == {"a": set(), "b": {"a"}, "c": {"a"}, "e": {"b"}, "d": {"c", "e"}}
    assert math.isclose(sum(n.duration for n in nodes), 1 + 2 + 4 + 1 + 1)


def test_claude_code_inline_sidechain_and_interruption(tmp_path):
    """Older Claude Code wrote subagent lines inline (isSidechain, no agentId); an interruption marker is no prompt."""
    u = {"input_tokens": 1, "output_tokens": 10, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}

    def line(uuid, parent, ts, kind, side=False, **msg):
        d = {
            "parentUuid": parent,
            "isSidechain": side,
            "sessionId": "old",
            "type": kind,
            "uuid": uuid,
            "timestamp": f"2026-11-08T10:{ts}Z",
        }
        d["message"] = msg
        return json.dumps(d)

    task = [{"type": "tool_use", "id": "toolu_T", "name": "Task", "input": {}}]
    lines = [
        line("u1", None, "00:00.000", "user", content="go"),
        line("a1", "u1", "00:03.000", "assistant", id="m1", model="claude-opus-4-8", content=task, usage=u),
        line("s1", None, "00:03.500", "user", side=True, content="sub prompt"),
        line("s2", "s1", "00:08.000", "assistant", side=True, id="ms", model="claude-opus-4-8", content=[], usage=u),
        line("u2", "a1", "00:10.000", "user", content=[{"type": "tool_result", "tool_use_id": "toolu_T"}]),
        line("u3", "u2", "00:20.000", "user", content=[{"type": "text", "text": "[Request interrupted by user]"}]),
        line("u4", "u3", "01:00.000", "user", content="next"),
        line("a2", "u4", "01:04.000", "assistant", id="m2", model="claude-opus-4-8", content=[], usage=u),
    ]
    f = tmp_path / "old.jsonl"
    f.write_text("\n".join(lines) + "\n")
    (s,), _ = read_sessions([(f, "auto")])
    task_node = next(n for n in s.nodes if n.name == "Task")
    side = next(n for n in s.calls if n.call.call_id == "ms")
    assert side.parent == task_node.id and (side.start, side.end) == (
        t("2026-11-08T10:00:03.500"),
        t("2026-11-08T10:00:08"),
    )
    humans = [n for n in s.nodes if n.kind == "human"]  # tool result 10:00:10 -> prompt 10:01:00, one gap
    assert [(h.start, h.end) for h in humans] == [(t("2026-11-08T10:00:10"), t("2026-11-08T10:01:00"))]
    assert s.wall_time_s == 64.0

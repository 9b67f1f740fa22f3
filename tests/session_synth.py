"""A seeded generator of synthetic agent sessions, written in formats agentsim reads (OTLP JSON Lines, Claude
Code JSONL), for the ``agentsim fit`` tests.

A population is described by :class:`Agent` (every distribution named, so that tests can compute its true
quantiles). A session: one main model (drawn by the models' shares); ``steps`` calls in a row; after each
call, ``tools`` tool runs and (with ``subagent_p``) one subagent, all in parallel from the call's end; then,
with ``idle_p``, the person's idle time before the next call. A call lasts ``TTFT + output / tps``.
Context and cache follow agentsim's rule (DESIGN.md §4): the first call sends ``system + growth`` tokens,
each next call its predecessor's input + visible output + a new ``growth`` draw; the part the previous call
sent is a cache read when the gap since that call's end is at most 5 minutes, the rest a cache write.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.special import ndtri

Z90 = 1.2815515655446004
T0 = dt.datetime(2026, 11, 2, 8, 0, tzinfo=dt.UTC).timestamp()


@dataclass(frozen=True)
class LogN:
    median: float
    p90: float

    @property
    def sigma(self) -> float:
        return math.log(self.p90 / self.median) / Z90

    def draw(self, rng, size=None):
        return self.median * np.exp(self.sigma * rng.standard_normal(size))

    def quantile(self, p: float) -> float:
        return self.median * math.exp(self.sigma * float(ndtri(p)))


@dataclass(frozen=True)
class Mix:
    """A two-part mixture: with probability ``p_slow`` the slow part."""

    p_slow: float
    fast: LogN
    slow: LogN

    def draw(self, rng, size):
        slow = rng.random(size) < self.p_slow
        return np.where(slow, self.slow.draw(rng, size), self.fast.draw(rng, size))


@dataclass(frozen=True)
class Model:
    name: str
    share: float
    ttft: LogN
    tps: LogN
    # speed by context size: the speed falls linearly from x1 at 0 tokens to (x, at tokens), then holds
    context_x: tuple[float, int] | None = None

    def speed_at(self, tokens: int) -> float:
        if self.context_x is None:
            return 1.0
        x, at = self.context_x
        return 1.0 + (x - 1.0) * min(tokens, at) / at


@dataclass(frozen=True)
class Agent:
    models: tuple[Model, ...]
    steps: tuple[int, int]  # uniform integers, inclusive
    output: LogN  # visible output tokens
    growth: LogN  # new input tokens before each call
    system: int
    tools: tuple[tuple[int, ...], tuple[float, ...]]  # values, probabilities
    tool_latency: Mix
    idle_p: float = 0.0
    idle: LogN = LogN(30.0, 120.0)
    turns: tuple[int, int] | None = None  # a conversation: turns per session (uniform), steps per turn, idle between
    subagent_p: float = 0.0
    sub_model: Model | None = None
    sub_steps: tuple[int, int] = (2, 4)
    ttl_s: float = 300.0


@dataclass
class Call:
    model: str
    start: float
    ttft: float
    end: float
    input: int
    read: int
    write: int
    output: int


@dataclass
class Turn:
    """What runs between two human prompts: calls, tools and subagents (each a list of calls and tools)."""

    calls: list[Call] = field(default_factory=list)
    tools: list[tuple[float, float, int]] = field(default_factory=list)  # (start, end, index of the asking call)
    subagents: list[tuple[list[Call], list[tuple[float, float, int]], int]] = field(default_factory=list)


class _Context:
    def __init__(self, system: int):
        self.size = system
        self.prev_input = 0
        self.prev_end = -1e18

    def call(self, model: Model, agent: Agent, rng, start: float) -> Call:
        inp = self.size + round(float(agent.growth.draw(rng)))
        read = self.prev_input if start - self.prev_end <= agent.ttl_s else 0
        out = max(1, round(float(agent.output.draw(rng))))
        ttft = float(model.ttft.draw(rng))
        end = start + ttft + out / (float(model.tps.draw(rng)) * model.speed_at(inp))
        self.prev_input, self.prev_end, self.size = inp, end, inp + out
        return Call(model.name, start, ttft, end, inp, read, inp - read, out)


def _subagent(agent: Agent, rng, start: float):
    ctx = _Context(agent.system // 4)
    calls, tools, t = [], [], start
    for _ in range(int(rng.integers(agent.sub_steps[0], agent.sub_steps[1] + 1))):
        c = ctx.call(agent.sub_model, agent, rng, t)
        calls.append(c)
        lat = agent.tool_latency.fast.draw(rng)
        tools.append((c.end, c.end + float(lat), len(calls) - 1))
        t = c.end + float(lat)
    return calls, tools, t


def session(agent: Agent, rng, start: float) -> list[Turn]:
    """One session: its turns. With ``turns``, a conversation: that many turns (uniform) of ``steps`` steps each
    (uniform), the person's ``idle`` time before each but the first; else ``steps`` steps in all, a new turn
    after each step with probability ``idle_p`` (after the person's idle time)."""
    shares = np.array([m.share for m in agent.models])
    model = agent.models[int(rng.choice(len(agent.models), p=shares / shares.sum()))]
    ctx = _Context(agent.system)
    turns, t = [Turn()], start
    if agent.turns is not None:
        for k in range(int(rng.integers(agent.turns[0], agent.turns[1] + 1))):
            if k:
                t += float(agent.idle.draw(rng))
                turns.append(Turn())
            for _ in range(int(rng.integers(agent.steps[0], agent.steps[1] + 1))):
                t = _step(agent, model, ctx, rng, turns[-1], t)
        return turns
    for _ in range(int(rng.integers(agent.steps[0], agent.steps[1] + 1))):
        t = _step(agent, model, ctx, rng, turns[-1], t)
        if agent.idle_p and rng.random() < agent.idle_p:
            t += float(agent.idle.draw(rng))
            turns.append(Turn())
    return [tr for tr in turns if tr.calls]


def _step(agent: Agent, model: Model, ctx: _Context, rng, turn: Turn, t: float) -> float:
    """A call, the tools it asks for and maybe a subagent, from ``t``; when the last of them ends."""
    values, probs = agent.tools
    c = ctx.call(model, agent, rng, t)
    turn.calls.append(c)
    k = len(turn.calls) - 1
    ends = [c.end]
    for lat in agent.tool_latency.draw(rng, int(rng.choice(values, p=probs))):
        turn.tools.append((c.end, c.end + float(lat), k))
        ends.append(c.end + float(lat))
    if agent.subagent_p and rng.random() < agent.subagent_p:
        calls, tools, sub_end = _subagent(agent, rng, c.end)
        turn.subagents.append((calls, tools, k))
        ends.append(sub_end)
    return max(ends)


def turn_end(turn: Turn) -> float:
    """When the last call, tool or subagent of a turn ends."""
    ends = [c.end for c in turn.calls] + [b for _, b, _ in turn.tools]
    return max(ends + [max([c.end for c in cs] + [b for _, b, _ in ts]) for cs, ts, _ in turn.subagents])


def population(agent: Agent, n: int, seed: int) -> list[list[Turn]]:
    rng = np.random.default_rng(seed)
    return [session(agent, rng, T0 + i * 3 * 3600.0) for i in range(n)]


# --------------------------------------------------------------------------- OTLP JSON Lines


def _attrs(d: dict) -> list[dict]:
    out = []
    for k, v in d.items():
        val = (
            {"intValue": str(v)}
            if isinstance(v, int)
            else {"doubleValue": v}
            if isinstance(v, float)
            else {"stringValue": v}
        )
        out.append({"key": k, "value": val})
    return out


def _span(trace, sid, parent, name, a, b, attrs):
    sp = {
        "traceId": trace,
        "spanId": sid,
        "name": name,
        "startTimeUnixNano": str(round(a * 1e9)),
        "endTimeUnixNano": str(round(b * 1e9)),
        "attributes": _attrs(attrs),
    }
    if parent:
        sp["parentSpanId"] = parent
    return sp


def _chat(trace, sid, parent, c: Call, session_id, with_ttft):
    attrs = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": c.model,
        "gen_ai.usage.input_tokens": c.input,
        "gen_ai.usage.cache_read.input_tokens": c.read,
        "gen_ai.usage.cache_creation.input_tokens": c.write,
        "gen_ai.usage.output_tokens": c.output,
        "session.id": session_id,
        "gen_ai.input.messages": "SECRET-PROMPT-synthetic",
    }
    if with_ttft:
        attrs["gen_ai.response.time_to_first_chunk"] = float(c.ttft)
    return _span(trace, sid, parent, f"chat {c.model}", c.start, c.end, attrs)


def write_otel(sessions: list[list[Turn]], path: Path, with_ttft: bool = True) -> None:
    """One JSON line per turn (a trace): a wrapper span, chat spans, execute_tool spans, invoke_agent subagents."""
    with path.open("w") as fh:
        for i, turns in enumerate(sessions):
            sid = f"session-{i:05d}"
            for j, turn in enumerate(turns):
                trace = f"{i:016x}{j:016x}"
                spans = [
                    _span(
                        trace,
                        "root",
                        None,
                        "invoke_agent main",
                        turn.calls[0].start,
                        turn_end(turn),
                        {"gen_ai.operation.name": "invoke_agent", "session.id": sid},
                    )
                ]
                for k, c in enumerate(turn.calls):
                    spans.append(_chat(trace, f"c{k}", "root", c, sid, with_ttft))
                for k, (a, b, _) in enumerate(turn.tools):
                    spans.append(
                        _span(
                            trace,
                            f"t{k}",
                            "root",
                            "execute_tool bash",
                            a,
                            b,
                            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "bash"},
                        )
                    )
                for k, (calls, tools, _) in enumerate(turn.subagents):
                    end = max([c.end for c in calls] + [b for _, b, _ in tools])
                    spans.append(
                        _span(
                            trace,
                            f"a{k}",
                            "root",
                            "invoke_agent explorer",
                            calls[0].start,
                            end,
                            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "explorer"},
                        )
                    )
                    spans += [_chat(trace, f"a{k}c{m}", f"a{k}", c, sid, with_ttft) for m, c in enumerate(calls)]
                    spans += [
                        _span(
                            trace,
                            f"a{k}t{m}",
                            f"a{k}",
                            "execute_tool read",
                            a,
                            b,
                            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read"},
                        )
                        for m, (a, b, _) in enumerate(tools)
                    ]
                doc = {
                    "resourceSpans": [
                        {
                            "resource": {"attributes": _attrs({"service.name": "synthetic-agent"})},
                            "scopeSpans": [{"spans": spans}],
                        }
                    ]
                }
                fh.write(json.dumps(doc, separators=(",", ":")) + "\n")


# --------------------------------------------------------------------------- Claude Code JSONL


def _iso(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_claude_code(sessions: list[list[Turn]], folder: Path) -> None:
    """One ``<session>.jsonl`` per session under ``folder/-home-dev-synthetic`` (no subagents)."""
    project = folder / "-home-dev-synthetic"
    project.mkdir(parents=True, exist_ok=True)
    for i, turns in enumerate(sessions):
        sid = f"synthetic-{i:05d}"
        lines: list[dict] = []

        def add(obj, sid=sid, lines=lines):
            obj.update({"uuid": f"{sid}-{len(lines) + 1}", "sessionId": sid, "cwd": "/home/dev/synthetic"})
            lines.append(obj)
            return obj["uuid"]

        for turn in turns:
            parent = add(
                {
                    "type": "user",
                    "parentUuid": lines[-1]["uuid"] if lines else None,
                    "timestamp": _iso(turn.calls[0].start),
                    "message": {"role": "user", "content": "SECRET-PROMPT-synthetic"},
                }
            )
            for k, c in enumerate(turn.calls):
                tools = [(a, b) for a, b, ask in turn.tools if ask == k]
                uses = [
                    {
                        "type": "tool_use",
                        "id": f"{sid}-tu{len(lines)}-{m}",
                        "name": "Bash",
                        "input": {"command": "SECRET-COMMAND"},
                    }
                    for m in range(len(tools))
                ]
                usage = {
                    "input_tokens": c.input - c.read - c.write,
                    "cache_read_input_tokens": c.read,
                    "cache_creation_input_tokens": c.write,
                    "output_tokens": c.output,
                    "cache_creation": {"ephemeral_5m_input_tokens": c.write, "ephemeral_1h_input_tokens": 0},
                }
                msg = {
                    "id": f"msg-{sid}-{len(lines)}",
                    "model": c.model,
                    "role": "assistant",
                    "usage": usage,
                    "content": [{"type": "text", "text": "SECRET-ANSWER"}, *uses],
                }
                parent = add(
                    {
                        "type": "assistant",
                        "parentUuid": parent,
                        "timestamp": _iso(c.end),
                        "requestId": f"req-{sid}-{len(lines)}",
                        "message": msg,
                    }
                )
                for (_, b), use in sorted(zip(tools, uses, strict=True), key=lambda x: x[0][1]):
                    parent = add(
                        {
                            "type": "user",
                            "parentUuid": parent,
                            "timestamp": _iso(b),
                            "message": {
                                "role": "user",
                                "content": [
                                    {"type": "tool_result", "tool_use_id": use["id"], "content": "SECRET-OUTPUT"}
                                ],
                            },
                        }
                    )
        (project / f"{sid}.jsonl").write_text("".join(json.dumps(x, separators=(",", ":")) + "\n" for x in lines))


# --------------------------------------------------------------------------- LangSmith runs (JSON Lines)


def _naive(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).replace(tzinfo=None).isoformat(timespec="microseconds")


def _llm_run(rid, trace, parent, c: Call, thread, with_ttft):
    run = {
        "id": rid,
        "trace_id": trace,
        "parent_run_id": parent,
        "run_type": "llm",
        "name": "chat",
        "start_time": _naive(c.start),
        "end_time": _naive(c.end),
        "prompt_tokens": c.input,
        "completion_tokens": c.output,
        "prompt_token_details": {"cache_read": c.read, "cache_creation": c.write},
        "extra": {"metadata": {"ls_model_name": c.model, "thread_id": thread}},
        "inputs": {"q": "SECRET-PROMPT"},
    }
    if with_ttft:
        run["first_token_time"] = _naive(c.start + c.ttft)
    return run


def write_langsmith(sessions: list[list[Turn]], path: Path, with_ttft: bool = True) -> None:
    """One run per line: a chain run per turn (a trace), llm and tool runs in it, a chain run per subagent."""
    with path.open("w") as fh:
        for i, turns in enumerate(sessions):
            thread = f"thread-{i:05d}"
            for j, turn in enumerate(turns):
                trace = f"r{i}-{j}"
                runs = [
                    {
                        "id": trace,
                        "trace_id": trace,
                        "run_type": "chain",
                        "name": "agent",
                        "start_time": _naive(turn.calls[0].start),
                        "end_time": _naive(turn_end(turn)),
                        "extra": {"metadata": {"thread_id": thread}},
                    }
                ]
                runs += [_llm_run(f"{trace}c{k}", trace, trace, c, thread, with_ttft) for k, c in enumerate(turn.calls)]
                runs += [
                    {
                        "id": f"{trace}t{k}",
                        "trace_id": trace,
                        "parent_run_id": trace,
                        "run_type": "tool",
                        "name": "bash",
                        "start_time": _naive(a),
                        "end_time": _naive(b),
                    }
                    for k, (a, b, _) in enumerate(turn.tools)
                ]
                for k, (calls, tools, _) in enumerate(turn.subagents):
                    sid = f"{trace}a{k}"
                    end = max([c.end for c in calls] + [b for _, b, _ in tools])
                    runs.append(
                        {
                            "id": sid,
                            "trace_id": trace,
                            "parent_run_id": trace,
                            "run_type": "chain",
                            "name": "explorer",
                            "start_time": _naive(calls[0].start),
                            "end_time": _naive(end),
                        }
                    )
                    runs += [_llm_run(f"{sid}c{m}", trace, sid, c, thread, with_ttft) for m, c in enumerate(calls)]
                    runs += [
                        {
                            "id": f"{sid}t{m}",
                            "trace_id": trace,
                            "parent_run_id": sid,
                            "run_type": "tool",
                            "name": "read",
                            "start_time": _naive(a),
                            "end_time": _naive(b),
                        }
                        for m, (a, b, _) in enumerate(tools)
                    ]
                fh.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in runs))

"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) as recorded sessions.

A rollout is one JSON line per item, ``{"timestamp", "type", "payload"}``:
``session_meta`` (session id, cwd, provider, and for a subagent its ``source``),
``turn_context`` (the model of the turn that follows), ``response_item`` (messages,
reasoning, ``function_call`` / ``custom_tool_call`` / ``local_shell_call`` and their
``*_output``), and ``event_msg`` (``user_message``, ``task_started``,
``task_complete``, ``token_count`` ...).

How the items become calls, tools and human time:

* **One API call** per ``token_count`` event whose ``info`` has usage: its
  ``last_token_usage`` (``input_tokens`` includes ``cached_input_tokens``;
  ``reasoning_output_tokens`` are part of ``output_tokens``), or when that is
  missing the difference of ``total_token_usage`` from the previous event. An
  event repeating the previous ``total_token_usage`` (Codex re-emits it with rate
  limit updates) is not a new call. The model is the event's own, else the latest
  ``turn_context`` model, else ``gpt-5`` (as ccusage does, and said in a note).
* A call runs from the latest event that could have sent it — the turn's
  ``task_started`` (or the ``user_message``), the previous call's end, or the
  output of a tool the previous calls asked for — to its ``token_count``.
* A **tool** runs from the end of the call that asked for it to its ``*_output``.
* **Human time** runs from the end of the last node before a ``user_message`` to it.
* A **subagent rollout** (``session_meta.source`` ``subagent``) starts with a
  ``token_count`` that repeats the forked parent's history: that first count,
  before the subagent's first ``task_started``, is skipped. When its parent's
  rollout is read too (``parent_thread_id``), the subagent is placed in the parent's
  session as a parallel branch (an ``agent`` container).

Nothing of the content (prompts, messages, reasoning, tool arguments and outputs) is kept.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path

from agentsim.traces.sessions import (
    MAX_TOKENS_PER_CALL,
    Call,
    FileReport,
    Node,
    Session,
    json_lines,
    link_nodes,
    parse_timestamp,
    token_count,
)

__all__ = ["FORMAT", "looks_like", "read_codex"]

FORMAT = "codex"
FALLBACK_MODEL = "gpt-5"
ROLLOUT_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
TOOL_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
TOOL_OUTPUTS = ("function_call_output", "custom_tool_call_output", "local_shell_call_output")
PLAIN_TIERS = (None, "", "default", "auto", "standard")


def looks_like(obj: dict) -> bool:
    return isinstance(obj, dict) and obj.get("type") in ROLLOUT_TYPES and "payload" in obj


MAX_SESSION_TOKENS = 10**13  # a session's running total (total_token_usage) may pass one call's 10^8


def _usage(u, limit: int = MAX_TOKENS_PER_CALL) -> dict | None:
    if u is None:
        return None
    if not isinstance(u, dict):
        raise ValueError("usage is not an object")
    return {
        k: token_count(u.get(k), limit)
        for k in ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens")
    }


@dataclass
class _Rollout:
    path: Path
    report: FileReport
    session: Session
    subagent: bool = False
    parent_thread_id: str | None = None
    agent_label: str | None = None
    fallback_model_calls: int = 0
    skipped_replay: int = 0
    repeats: int = 0
    totals_down: int = 0  # running totals below the previous one (the counter was reset): usage unknown
    prompts: list[float] = field(default_factory=list)


class _RolloutReader:
    """The state of reading one rollout, line by line: one method per kind of item."""

    def __init__(self, path: Path):
        report = FileReport(str(path), FORMAT)
        self.ro = _Rollout(path, report, Session(id=path.stem, source=FORMAT, file=str(path)))
        self.provider = "openai"
        self.model: str | None = None
        self.tier = "standard"
        self.service_tier: str | None = None
        self.last_input: float | None = None  # the latest event that could have sent the next call
        self.turn_started = False
        self.first_count_done = False
        self.prev_total: dict | None = None
        self.pending: dict[str, tuple[float, str]] = {}  # tool call id -> (time asked, name), before its call ended
        self.asked_by: dict[str, Node] = {}  # tool call id -> the call node that asked for it
        self.held_outputs: dict[str, float] = {}  # outputs that arrived before their call's token_count
        self.counts = {"c": 0, "t": 0, "h": 0}
        self.nodes: list[Node] = []

    def new_id(self, k: str) -> str:
        self.counts[k] += 1
        return f"{k}{self.counts[k]}"

    def add_tool(self, cid: str, out_ts: float) -> None:
        call = self.asked_by[cid]
        asked_ts, name = self.pending.pop(cid)
        start = max(asked_ts, call.end)
        self.nodes.append(Node(self.new_id("t"), "tool", start, max(out_ts, start), name=name))

    def item(self, obj: dict) -> None:
        """Read one rollout line; raises ValueError/TypeError/KeyError/AttributeError on a corrupt one."""
        kind, payload = obj.get("type"), obj.get("payload")
        if kind not in ROLLOUT_TYPES:
            return
        if not isinstance(payload, dict):
            raise ValueError("payload is not an object")
        ts = parse_timestamp(obj.get("timestamp"))
        ptype = payload.get("type")
        if kind == "session_meta":
            self.session_meta(payload)
        elif kind == "turn_context":
            self.turn_context(payload)
        elif kind == "response_item" and ptype in TOOL_CALLS and isinstance(payload.get("call_id"), str):
            name = payload.get("name") if isinstance(payload.get("name"), str) else ptype.removesuffix("_call")
            self.pending[payload["call_id"]] = (ts, name)
        elif kind == "response_item" and ptype in TOOL_OUTPUTS and isinstance(payload.get("call_id"), str):
            self.tool_output(payload["call_id"], ts)
        elif kind == "event_msg" and ptype == "user_message":
            self.ro.prompts.append(ts)
            self.last_input = ts
        elif kind == "event_msg" and ptype in ("task_started", "turn_started"):
            self.turn_started = True
            self.last_input = ts
        elif kind == "event_msg" and ptype == "token_count":
            self.token_count(payload, ts)

    def session_meta(self, payload: dict) -> None:
        session = self.ro.session
        if isinstance(payload.get("id"), str):
            session.id = payload["id"]
        cwd = payload.get("cwd")
        if isinstance(cwd, str) and cwd:
            session.project = Path(cwd.replace("\\", "/")).name or None
        if isinstance(payload.get("model_provider"), str):
            self.provider = payload["model_provider"]
        _subagent_source(self.ro, payload)

    def turn_context(self, payload: dict) -> None:
        if isinstance(payload.get("model"), str):
            self.model = payload["model"]
        st = payload.get("service_tier")
        self.service_tier = st if isinstance(st, str) else None
        self.tier = "standard" if self.service_tier in PLAIN_TIERS else str(self.service_tier)

    def tool_output(self, cid: str, ts: float) -> None:
        if cid in self.asked_by and cid in self.pending:
            self.add_tool(cid, ts)
            self.last_input = ts if self.last_input is None else max(self.last_input, ts)
        elif cid in self.pending:
            self.held_outputs[cid] = ts

    def _usage_of_call(self, info: dict) -> dict | None:
        """The usage of the call a token_count reports, or None when it reports none (or a repeat)."""
        ro = self.ro
        last = _usage(info.get("last_token_usage"))
        total = _usage(info.get("total_token_usage"), MAX_SESSION_TOKENS)
        if ro.subagent and not self.turn_started and not self.first_count_done:
            self.first_count_done = True
            self.prev_total = total
            ro.skipped_replay += 1
            return None
        self.first_count_done = True
        if total is not None and total == self.prev_total:
            ro.repeats += 1
            return None
        if last is None and total is not None:
            prev = self.prev_total or {}
            if any(total[k] < prev.get(k, 0) for k in total):
                ro.totals_down += 1  # the counter was reset: this call's usage cannot be told
                self.prev_total = total
                return None
            last = {k: token_count(total[k] - prev.get(k, 0)) for k in total}
        if total is not None:
            self.prev_total = total
        if last is None or not any(last[k] for k in last if k != "total_tokens"):
            return None
        return last

    def token_count(self, payload: dict, ts: float) -> None:
        info = payload.get("info")
        if not isinstance(info, dict):
            return  # rate limits only
        last = self._usage_of_call(info)
        if last is None:
            return
        call_model = info.get("model") if isinstance(info.get("model"), str) else self.model
        if call_model is None:
            call_model = FALLBACK_MODEL
            self.ro.fallback_model_calls += 1
        call = Call(
            call_id=f"{self.ro.session.id}#{self.counts['c'] + 1}",
            model=call_model,
            provider=self.provider,
            tier=self.tier,
            service_tier=self.service_tier,
            input_tokens=last["input_tokens"],
            cache_read_tokens=min(last["cached_input_tokens"], last["input_tokens"]),
            output_tokens=last["output_tokens"],
            reasoning_tokens=min(last["reasoning_output_tokens"], last["output_tokens"]),
        )
        start = self.last_input if self.last_input is not None and self.last_input <= ts else ts
        node = Node(self.new_id("c"), "call", start, ts, call=call)
        self.nodes.append(node)
        for cid in [c for c in self.pending if c not in self.asked_by]:
            self.asked_by[cid] = node
        self.last_input = ts
        for cid in [c for c in self.held_outputs if c in self.asked_by]:
            out_ts = self.held_outputs.pop(cid)
            self.add_tool(cid, out_ts)
            self.last_input = max(self.last_input, out_ts)

    def finish(self) -> _Rollout:
        """Human gaps before each prompt, the nodes in the session, and the notes."""
        ro, nodes, report = self.ro, self.nodes, self.ro.report
        if nodes and ro.prompts and not ro.subagent:  # a subagent's prompts come from its parent agent
            ends = sorted(n.end for n in nodes)
            for p in ro.prompts:
                i = bisect.bisect_right(ends, p)
                if i and ends[i - 1] < p:
                    nodes.append(Node(self.new_id("h"), "human", ends[i - 1], p, name="human"))
        ro.session.nodes = nodes
        report.calls = self.counts["c"]
        if ro.fallback_model_calls:
            report.notes.append(f"{ro.fallback_model_calls} calls name no model; assumed {FALLBACK_MODEL} (as ccusage)")
        if ro.skipped_replay:
            report.notes.append("skipped the subagent's first token count (it repeats the forked parent's history)")
        if ro.repeats:
            report.notes.append(f"{ro.repeats} token counts repeat the previous total and are not new calls")
        if ro.totals_down:
            report.notes.append(
                f"{ro.totals_down} token counts without last_token_usage report a running total below the previous "
                "one (the counter was reset): their calls' usage cannot be told, and they are left out"
            )
        return ro


def _read_rollout(path: Path) -> _Rollout:
    reader = _RolloutReader(path)
    for no, obj in json_lines(path, reader.ro.report):
        try:
            reader.item(obj)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            reader.ro.report.bad_line(no, str(exc) if "token count" in str(exc) else None)
    return reader.finish()


def _subagent_source(ro: _Rollout, payload: dict) -> None:
    source = payload.get("source")
    if not isinstance(source, dict):
        return
    sub = source.get("subagent", source.get("sub_agent", source.get("subAgent")))
    if sub is None:
        return
    ro.subagent = True
    spawn = sub.get("thread_spawn") if isinstance(sub, dict) else None
    parent = (spawn or {}).get("parent_thread_id") or payload.get("parent_thread_id")
    ro.parent_thread_id = parent if isinstance(parent, str) else None
    label = None
    if isinstance(spawn, dict):
        label = spawn.get("agent_nickname") or spawn.get("agent_role") or spawn.get("agent_path")
    elif isinstance(sub, str):
        label = sub
    ro.agent_label = label if isinstance(label, str) else None


def _depth(ro: _Rollout, by_id: dict[str, _Rollout]) -> int:
    depth, cur, hops = 0, ro, 0
    while cur.subagent and cur.parent_thread_id in by_id and hops < 64:
        cur = by_id[cur.parent_thread_id]
        depth += 1
        hops += 1
    return depth


def read_codex(files: list[Path]) -> tuple[list[Session], list[FileReport]]:
    """Read Codex rollout files into sessions (subagents inside their parent's session when it is read too)."""
    read = [_read_rollout(f) for f in files]
    # The same rollout twice (a copy, or a path given twice) counts once: by rollout id, the copy
    # with the most lines wins (a copy taken while the session ran is a prefix of the final file).
    best: dict[str, _Rollout] = {}
    for ro in read:
        kept = best.get(ro.session.id)
        if kept is None or ro.report.lines > kept.report.lines:
            best[ro.session.id] = ro
    rollouts, copies = [], []
    for ro in read:
        (rollouts if best[ro.session.id] is ro else copies).append(ro)
    for ro in copies:
        kept = best[ro.session.id]
        ro.report.duplicates, ro.report.calls = ro.report.calls, 0
        ro.report.notes.append(f"the rollout {ro.session.id} is also in {kept.path}: counted once, from that file")
    by_id = {ro.session.id: ro for ro in rollouts}
    merged: set[int] = set()
    order = sorted(range(len(rollouts)), key=lambda k: -_depth(rollouts[k], by_id))  # deepest subagents first
    for k in order:
        ro = rollouts[k]
        parent = by_id.get(ro.parent_thread_id or "")
        if not ro.subagent or parent is None or parent is ro or not ro.session.nodes:
            continue
        agent = ro.agent_label or ro.session.id
        container = Node(f"a{k + 1}", "agent", ro.session.start, ro.session.end, name="subagent", agent=agent)
        for n in ro.session.nodes:
            n.id = f"{container.id}.{n.id}"
            n.parent = f"{container.id}.{n.parent}" if n.parent else container.id
            if n.agent == "main":
                n.agent = agent
        parent.session.nodes.extend([container, *ro.session.nodes])
        merged.add(k)
    sessions = []
    for k, ro in enumerate(rollouts):
        if k in merged:
            ro.report.notes.append(f"placed inside the parent session {ro.parent_thread_id}")
            continue
        if any(n.kind == "call" for n in ro.session.nodes):
            link_nodes(ro.session.nodes)
            sessions.append(ro.session)
            ro.report.sessions = 1
    return sessions, [ro.report for ro in read]

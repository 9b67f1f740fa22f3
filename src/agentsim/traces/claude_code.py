"""Claude Code sessions (``~/.claude/projects/<project>/<session>.jsonl``) as recorded sessions.

Claude Code writes one JSON line per event: a ``user`` line for each prompt or tool
result, an ``assistant`` line for each *content block* of a model response (text,
thinking, tool_use), plus ``system``/``summary`` lines. Lines are chained by
``uuid`` → ``parentUuid``. Subagents (the ``Task`` tool) write their own files under
``<session>/subagents/agent-<id>.jsonl`` (older versions: inline lines marked
``isSidechain``).

How the lines become calls, tools and human time (the rules ccusage uses for
usage, plus timing):

* **One API call** is every assistant line with the same (``message.id``,
  ``requestId``) — or ``message.id`` alone when ``requestId`` is absent. The call
  keeps the *last* line's ``usage``: ``input_tokens`` (uncached),
  ``cache_read_input_tokens``, ``cache_creation_input_tokens`` split into
  ``cache_creation.ephemeral_5m/1h_input_tokens`` (all 5-minute when the split is
  missing), ``output_tokens`` (thinking included), ``speed`` (``fast``) and
  ``service_tier``. Model ``<synthetic>`` (messages Claude Code writes itself) is
  not a call.
* A call runs from its **parent line** (the prompt or tool result it answers, via
  ``parentUuid`` of its first line) to its **last content line**. When Claude Code
  retried the request (a ``system`` line with ``retryInMs``, such as its
  ``api_error`` lines, answering the same parent or being the parent), the call
  starts when the last retry was sent (that line's time + ``retryInMs``): the
  failed attempts and the back-off before it are client overhead, kept as recorded.
* A **tool** runs from the end of the call that asked for it (its ``tool_use``) to
  the ``tool_result`` line with the same id. A ``Task`` tool contains the subagent
  it ran (matched by ``toolUseResult.agentId``, else by time).
* **Human time** runs from the end of the last node before a prompt to the
  prompt. Only the main thread has human time.
* **Replays are skipped**: a line whose ``uuid``, a call whose key, or a tool whose
  id was already read from another file (resumed sessions, subagent files that
  repeat the parent's messages) is not counted twice. Files are read in order of
  their first timestamp, each main file before its subagents.

Nothing of the content (prompts, thinking, tool inputs and results) is kept.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from pathlib import Path

from agentsim.traces.sessions import (
    Call,
    FileReport,
    Node,
    Session,
    json_lines,
    link_nodes,
    parse_timestamp,
    token_count,
)

__all__ = ["FORMAT", "looks_like", "read_claude_code", "session_groups"]

FORMAT = "claude-code"
TASK_TOOLS = ("Task", "Agent")
LINK_SLACK_S = 1.0  # a subagent matched by time may start/end this close outside its Task tool
MAX_RETRY_MS = 86_400_000  # a retryInMs beyond a day is corrupt: the line is not read as a retry


def looks_like(obj: dict) -> bool:
    """Whether a parsed JSON line looks like a Claude Code session line."""
    return (
        isinstance(obj, dict)
        and ("parentUuid" in obj or "sessionId" in obj or "isSidechain" in obj)
        and (obj.get("type") in ("user", "assistant", "system", "summary") or "uuid" in obj)
    )


def session_groups(files: list[Path]) -> list[tuple[Path | None, list[Path]]]:
    """Group files into (main session file, its subagent files).

    ``<dir>/<session>/subagents/*.jsonl`` belongs to ``<dir>/<session>.jsonl`` when that
    file is among ``files`` or exists; otherwise each subagent file is its own session.
    """
    mains = {f.resolve(): f for f in files if f.parent.name != "subagents"}
    groups: dict[Path, list[Path]] = {m: [] for m in mains}
    orphans: list[Path] = []
    for f in files:
        if f.parent.name != "subagents":
            continue
        main = (f.parent.parent.parent / (f.parent.parent.name + ".jsonl")).resolve()
        if main in groups:
            groups[main].append(f)
        elif main.is_file():
            mains[main] = main
            groups[main] = [f]
        else:
            orphans.append(f)
    out: list[tuple[Path | None, list[Path]]] = [(mains[m], sorted(subs)) for m, subs in groups.items()]
    for m, subs in out:
        if m is not None and not subs:  # a session file given alone: pick up its subagents
            sub_dir = m.parent / m.stem / "subagents"
            if sub_dir.is_dir():
                subs.extend(sorted(sub_dir.glob("*.jsonl")))
    out += [(None, [o]) for o in orphans]
    return out


# --------------------------------------------------------------------------- reading lines


@dataclass
class _Line:
    no: int
    ts: float
    type: str
    uuid: str | None
    parent: str | None
    sidechain: bool
    agent_id: str | None
    # assistant lines
    key: str | None = None
    message_id: str | None = None
    model: str | None = None
    usage: dict | None = None
    tool_uses: list[tuple[str, str]] = field(default_factory=list)  # (tool_use id, tool name)
    # user lines
    tool_results: list[str] = field(default_factory=list)  # tool_use ids answered
    prompt: bool = False
    result_agent_id: str | None = None  # toolUseResult.agentId of a Task tool result
    # system lines of a retried request: when the retry is sent (the line's time + retryInMs)
    retry_at: float | None = None


def _int(v) -> int:
    return token_count(v)


def _usage(u) -> dict:
    """The numbers of a usage object (nothing else); raises ValueError on a malformed one."""
    if not isinstance(u, dict):
        raise ValueError("usage is not an object")
    out = {
        "input": _int(u.get("input_tokens")),
        "output": _int(u.get("output_tokens")),
        "cache_read": _int(u.get("cache_read_input_tokens")),
        "cache_write": _int(u.get("cache_creation_input_tokens")),
        "speed": u.get("speed") if isinstance(u.get("speed"), str) else None,
        "service_tier": u.get("service_tier") if isinstance(u.get("service_tier"), str) else None,
    }
    split = u.get("cache_creation")
    if isinstance(split, dict):
        out["write_1h"] = _int(split.get("ephemeral_1h_input_tokens"))
        out["write_5m"] = _int(split.get("ephemeral_5m_input_tokens"))
    return out


def _interruption(text) -> bool:
    """Claude Code's own "[Request interrupted by user...]" marker: not a prompt (only its prefix is looked at)."""
    return isinstance(text, str) and text.startswith("[Request interrupted")


def _parse_line(no: int, obj: dict) -> _Line | None:
    """Keep the timing, ids, token numbers and tool names of a line; None for lines without a time."""
    kind = obj.get("type")
    if "timestamp" not in obj:
        if kind in ("user", "assistant"):
            raise ValueError("no timestamp")
        return None
    ts = parse_timestamp(obj["timestamp"])
    for key in ("uuid", "parentUuid"):
        if obj.get(key) is not None and not isinstance(obj[key], str):
            raise ValueError(f"{key} is not a string")
    line = _Line(
        no,
        ts,
        str(kind),
        obj.get("uuid"),
        obj.get("parentUuid"),
        bool(obj.get("isSidechain")),
        obj.get("agentId") if isinstance(obj.get("agentId"), str) else None,
    )
    msg = obj.get("message")
    wait_ms = obj.get("retryInMs")
    is_number = isinstance(wait_ms, int | float) and not isinstance(wait_ms, bool)
    if kind == "system" and is_number and math.isfinite(wait_ms) and 0 <= wait_ms <= MAX_RETRY_MS:
        line.retry_at = ts + wait_ms / 1000  # (a retryInMs that cannot be placed in time is not read as a retry)
    if kind == "assistant":
        if not isinstance(msg, dict):
            raise ValueError("assistant line without a message")
        line.message_id = msg.get("id") if isinstance(msg.get("id"), str) else None
        request_id = obj.get("requestId") if isinstance(obj.get("requestId"), str) else None
        line.key = f"{line.message_id}:{request_id}" if request_id else line.message_id
        if line.key is None:  # no id to deduplicate by: the line is its own call (as ccusage counts it)
            line.key = f"line:{line.uuid or no}"
        line.model = msg.get("model") if isinstance(msg.get("model"), str) else None
        if "usage" in msg:
            line.usage = _usage(msg["usage"])
        for block in msg.get("content") or ():
            if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                line.tool_uses.append((block["id"], str(block.get("name") or "tool")))
    elif kind == "user":
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    line.tool_results.append(str(block.get("tool_use_id")))
            texts = [b for b in content if isinstance(b, dict) and b.get("type") in ("text", "image")]
            line.prompt = not line.tool_results and bool(texts) and not _interruption(texts[0].get("text"))
        elif isinstance(content, str):
            line.prompt = not _interruption(content)
        if obj.get("isMeta") or obj.get("isCompactSummary"):
            line.prompt = False
        result = obj.get("toolUseResult")
        if isinstance(result, dict) and isinstance(result.get("agentId"), str):
            line.result_agent_id = result["agentId"]
    return line


def _read_file(path: Path, report: FileReport) -> list[_Line]:
    lines: list[_Line] = []
    for no, obj in json_lines(path, report):
        try:
            line = _parse_line(no, obj)
        except (ValueError, TypeError, AttributeError) as exc:
            report.bad_line(no, str(exc) if "token count" in str(exc) else None)
            continue
        if line is not None:
            lines.append(line)
    return lines


# --------------------------------------------------------------------------- building a session


@dataclass
class _Seen:
    """Identifiers already read, across every file of one import (replays are skipped)."""

    uuids: set = field(default_factory=set)
    calls: set = field(default_factory=set)
    tools: set = field(default_factory=set)


def _results_by_tool(fresh: list[_Line]) -> dict[str, _Line]:
    """tool_use id -> the first line carrying its result."""
    results: dict[str, _Line] = {}
    for ln in fresh:
        for tid in ln.tool_results:
            results.setdefault(tid, ln)
    return results


def _previous_times(lines: list[_Line]) -> dict[int, float | None]:
    """Line number -> timestamp of the line before it (a call's fallback anchor)."""
    prev_ts, last = {}, None
    for ln in lines:
        prev_ts[ln.no] = last
        last = ln.ts
    return prev_ts


def _resend_times(lines: list[_Line]) -> dict[str, float]:
    """A call's parent uuid -> when its request was last re-sent (a retry answering that parent, or being it)."""
    resent: dict[str, float] = {}
    for ln in lines:
        if ln.retry_at is not None:
            for key in (ln.parent, ln.uuid):
                if key is not None:
                    resent[key] = max(resent.get(key, -math.inf), ln.retry_at)
    return resent


def _call_of(call_id: str, final: _Line) -> Call:
    """The call's model, tier and tokens from its final line's usage."""
    u = final.usage
    w1h = u.get("write_1h", 0)
    w5m = u["cache_write"] - w1h if "write_1h" in u else u["cache_write"]
    speed = u["speed"]
    return Call(
        call_id=call_id,
        model=final.model or "unknown",
        provider="anthropic",
        tier=speed if speed and speed != "standard" else "standard",
        speed=speed,
        service_tier=u["service_tier"],
        input_tokens=u["input"] + u["cache_read"] + u["cache_write"],
        cache_read_tokens=u["cache_read"],
        cache_write_5m_tokens=max(w5m, 0),
        cache_write_1h_tokens=w1h,
        output_tokens=u["output"],
    )


class _Builder:
    def __init__(self, session: Session, seen: _Seen, anchors: dict[str, float]):
        self.s, self.seen, self.anchors = session, seen, anchors
        self.counts = {"call": 0, "tool": 0, "human": 0, "agent": 0}
        self.tool_nodes: dict[str, tuple[Node, str | None]] = {}  # tool_use id -> (node, agentId of its result)
        self.threads: list[tuple[str, list[Node]]] = []
        self.synthetic = 0

    def new_id(self, kind: str) -> str:
        self.counts[kind] += 1
        return f"{kind[0]}{self.counts[kind]}"

    def thread(self, agent: str, lines: list[_Line], main: bool) -> None:
        """Calls, tools and (main thread only) human gaps of one thread's lines, in file order."""
        fresh = [ln for ln in lines if ln.uuid is None or ln.uuid not in self.seen.uuids]
        results = _results_by_tool(fresh)
        prev_ts, resent = _previous_times(lines), _resend_times(lines)
        nodes: list[Node] = []
        for key, group in self._calls(fresh).items():
            first = group[0]
            start, end = self._call_start(first, prev_ts, resent), max(ln.ts for ln in group)
            call = _call_of(first.message_id or key, group[-1])
            nodes.append(Node(self.new_id("call"), "call", start, end, agent=agent, call=call))
            self.seen.calls.add(key)
            nodes.extend(self._tools(group, end, results, agent))
        if main and nodes:
            nodes.extend(self._human_gaps(fresh, sorted(n.end for n in nodes), agent))
        self.seen.uuids.update(ln.uuid for ln in fresh if ln.uuid)
        self.threads.append((agent, nodes))

    def _calls(self, fresh: list[_Line]) -> dict[str, list[_Line]]:
        """The lines of each call not seen before (by its key), in file order; synthetic ones counted, not kept."""
        calls: dict[str, list[_Line]] = {}
        for ln in fresh:
            if ln.type == "assistant" and ln.key is not None and ln.usage is not None:
                if ln.model == "<synthetic>":
                    self.synthetic += 1
                    continue
                if ln.key in self.seen.calls:
                    continue
                calls.setdefault(ln.key, []).append(ln)
        return calls

    def _call_start(self, first: _Line, prev_ts: dict[int, float | None], resent: dict[str, float]) -> float:
        """When a call was sent: its parent's anchor, else the previous timed line, else its own first line;
        moved to its last re-send when failed attempts and back-off came before (overhead, not the call)."""
        start = self.anchors.get(first.parent) if first.parent else None
        if start is None or start > first.ts:
            start = prev_ts.get(first.no)
        if start is None or start > first.ts:
            start = first.ts
        again = resent.get(first.parent) if first.parent else None
        if again is not None and start < again <= first.ts:
            start = again
        return start

    def _tools(self, group: list[_Line], end: float, results: dict[str, _Line], agent: str) -> list[Node]:
        """The tool runs a call asked for that returned and were not seen before, from the call's end."""
        tools = []
        for ln in group:
            for tid, name in ln.tool_uses:
                if tid in self.seen.tools or tid not in results:
                    continue  # a replay, or a tool that never returned (interrupted)
                res = results[tid]
                tool = Node(self.new_id("tool"), "tool", max(end, ln.ts), max(res.ts, end), name=name, agent=agent)
                self.seen.tools.add(tid)
                self.tool_nodes[tid] = (tool, res.result_agent_id)
                tools.append(tool)
        return tools

    def _human_gaps(self, fresh: list[_Line], ends: list[float], agent: str) -> list[Node]:
        """The person's turns: from the last node's end before each prompt to the prompt (``ends`` sorted)."""
        gaps = []
        for ln in fresh:
            if not ln.prompt:
                continue
            i = bisect.bisect_right(ends, ln.ts)
            if i and ends[i - 1] < ln.ts:
                gaps.append(Node(self.new_id("human"), "human", ends[i - 1], ln.ts, name="human", agent=agent))
        return gaps

    def finish(self) -> None:
        """Place each subagent thread inside the Task tool that ran it (else in an agent container)."""
        linked: set[str] = set()
        by_agent = {res_agent: node for node, res_agent in self.tool_nodes.values() if res_agent}
        for agent, nodes in self.threads:
            self.s.nodes.extend(nodes)
            if agent == "main" or not nodes:
                continue
            start, end = min(n.start for n in nodes), max(n.end for n in nodes)
            host = by_agent.get(agent)
            if host is None or host.agent == agent:
                candidates = [
                    node
                    for node, _ in self.tool_nodes.values()
                    if node.name in TASK_TOOLS
                    and node.id not in linked
                    and node.agent != agent
                    and node.start - LINK_SLACK_S <= start
                    and end <= node.end + LINK_SLACK_S
                ]
                host = min(candidates, key=lambda n: (n.duration, n.start), default=None)
            if host is None:
                host = Node(self.new_id("agent"), "agent", start, end, name="subagent", agent=agent)
                self.s.nodes.append(host)
            linked.add(host.id)
            for n in nodes:
                if n.parent is None:
                    n.parent = host.id


def _sidechain_threads(lines: list[_Line]) -> dict[str, list[_Line]]:
    """Split a main file's lines into the main thread and inline sidechains (older versions)."""
    by_uuid = {ln.uuid: ln for ln in lines if ln.uuid}
    threads: dict[str, list[_Line]] = {"main": []}
    root_of: dict[str, str] = {}
    for ln in lines:
        if not ln.sidechain:
            threads["main"].append(ln)
            continue
        root = ln
        hops = 0
        while root.parent in by_uuid and by_uuid[root.parent].sidechain and hops < 100_000:
            root = by_uuid[root.parent]
            hops += 1
        name = ln.agent_id or root_of.setdefault(root.uuid or str(root.no), f"sidechain-{root.no}")
        threads.setdefault(name, []).append(ln)
    return threads


def read_claude_code(groups: list[tuple[Path | None, list[Path]]]) -> tuple[list[Session], list[FileReport]]:
    """Read Claude Code session files (see :func:`session_groups`) into sessions, with a report per file."""
    parsed: list[tuple[Path, list[tuple[Path, list[_Line], FileReport]]]] = []
    reports: list[FileReport] = []
    for main, subs in groups:
        files = ([main] if main is not None else []) + list(subs)
        entries = []
        for f in files:
            rep = FileReport(str(f), FORMAT)
            reports.append(rep)
            entries.append((f, _read_file(f, rep), rep))
        parsed.append((main if main is not None else subs[0], entries))

    def first_ts(item):
        ts = [ln.ts for _, lines, _ in item[1] for ln in lines]
        return (min(ts) if ts else float("inf"), str(item[0]))

    parsed.sort(key=first_ts)
    seen = _Seen()
    sessions: list[Session] = []
    for head, entries in parsed:
        anchors = {ln.uuid: ln.ts for _, lines, _ in entries for ln in lines if ln.uuid}
        session = Session(id=head.stem, source=FORMAT, file=str(head), project=_project_of(head))
        builder = _Builder(session, seen, anchors)
        for i, (f, lines, rep) in enumerate(entries):
            before = builder.counts["call"]
            if i == 0 and f.parent.name != "subagents":
                for agent, tl in _sidechain_threads(lines).items():
                    builder.thread(agent, tl, main=agent == "main")
            else:
                agent = next((ln.agent_id for ln in lines if ln.agent_id), None) or f.stem.removeprefix("agent-")
                builder.thread(agent, lines, main=False)
            rep.calls = builder.counts["call"] - before
        if builder.synthetic:
            entries[0][2].notes.append(f"{builder.synthetic} <synthetic> assistant lines are not API calls")
        builder.finish()
        if any(n.kind == "call" for n in session.nodes):
            link_nodes(session.nodes)
            sessions.append(session)
            entries[0][2].sessions = 1
    return sessions, reports


def _project_of(path: Path) -> str | None:
    p = path.parent
    if p.name == "subagents":
        p = p.parent.parent
    return p.name or None

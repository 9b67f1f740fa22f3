"""Recorded agent sessions: the one shape every session importer produces.

A recorded session (a Claude Code conversation, a Codex CLI rollout, the spans of
one OpenTelemetry conversation) becomes a set of timed **nodes**:

* ``call``: one API request, with its model, speed tier and token usage;
* ``tool``: a tool run, from the end of the call that asked for it to the moment
  its result went back;
* ``human``: the person's time, from the agent going quiet to their next prompt;
* ``agent``: a container of another thread's nodes (a subagent, an agent span).

A tool may also be a container: Claude Code's ``Task`` tool holds the subagent it
ran, so replaying the subagent faster shortens the tool.

**Order and parallelism** come from the recorded intervals, container by
container. Node *B* waits for node *A* when *A* ended at or before *B* started and
no other node that also ended before *B* started began after *A* ended: *A* is on
*B*'s *frontier* (``preds``). Nodes whose intervals overlap ran in parallel (two
tools of one call, two subagents). The time between a node's start and the end of
its latest predecessor (or its container's start) is its *lag*: client overhead,
retries, anything not recorded as a node; replay keeps it unchanged.

Only timings, token counts, model names and tool names are kept: importers never
copy prompts, tool inputs or outputs, or file contents into these records.
"""

from __future__ import annotations

import datetime as dt
import heapq
import json
import math
from collections import defaultdict, deque
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "CALL_COLUMNS",
    "SPAN_COLUMNS",
    "Call",
    "FileReport",
    "Node",
    "Session",
    "calls_table",
    "link_nodes",
    "parse_timestamp",
    "spans_table",
    "token_count",
]

MAX_BAD_LINES_SHOWN = 5
MAX_TOKENS_PER_CALL = 10**8  # no model reads or writes more in one request: a larger count is corrupt


def token_count(v, limit: int = MAX_TOKENS_PER_CALL) -> int:
    """A recorded token count as an int (``None`` is 0); raises ValueError, saying why, on a negative,
    fractional, non-finite or implausible (above ``limit``, by default 10^8 for one call) count."""
    if v is None:
        return 0
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ValueError(f"token count {v!r} is not a number")
    if isinstance(v, float) and not (math.isfinite(v) and v == int(v)):
        raise ValueError(f"token count {v!r} is not a whole number")
    if v < 0:
        raise ValueError(f"token count {v:g} is negative")
    if v > limit:
        raise ValueError(f"token count {v:g} is above {limit:.0e}, which is not plausible")
    return int(v)


@dataclass(slots=True)
class Call:
    """Usage of one API call. ``input_tokens`` counts all input, cached included;
    ``output_tokens`` all output, reasoning included (as genai-prices counts them)."""

    call_id: str  # the source's id (message id, request id, span id) — never content
    model: str
    provider: str | None
    tier: str = "standard"  # speed tier used for speed and price: standard, fast, priority...
    speed: str | None = None  # raw speed field of the source (Claude Code usage.speed)
    service_tier: str | None = None  # raw service tier of the source
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_5m_tokens: int = 0
    cache_write_1h_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    ttft_s: float | None = None  # recorded time to first token, when the source has it (OTel)
    usage_recorded: bool = True  # False: the record carries no token usage (counted as 0, cost unknown)

    @property
    def cache_write_tokens(self) -> int:
        return self.cache_write_5m_tokens + self.cache_write_1h_tokens

    @property
    def uncached_input_tokens(self) -> int:
        return self.input_tokens - self.cache_read_tokens - self.cache_write_tokens


@dataclass(slots=True)
class Node:
    id: str  # unique within its session
    kind: str  # call | tool | human | agent
    start: float  # unix seconds
    end: float
    parent: str | None = None  # id of the containing node (None: the session itself)
    name: str | None = None  # tool name, or agent name of a container
    agent: str = "main"  # the thread it belongs to (main, or a subagent id)
    call: Call | None = None
    preds: tuple[str, ...] = ()
    order: int = 0  # position in its container's processing order (set by link_nodes)

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass
class Session:
    id: str
    source: str  # claude-code | codex | otel
    file: str
    project: str | None = None
    nodes: list[Node] = field(default_factory=list)
    dated: bool = True  # False: times count from the session's start, not the epoch (no calendar date known)
    estimated_calls: int = 0  # calls whose duration was not recorded but estimated (the reader says how)

    @property
    def start(self) -> float:
        """Start of the earliest top-level node (nested nodes lie inside their containers)."""
        return min(n.start for n in self.nodes if n.parent is None)

    @property
    def end(self) -> float:
        return max(n.end for n in self.nodes if n.parent is None)

    @property
    def wall_time_s(self) -> float:
        return self.end - self.start

    @property
    def calls(self) -> list[Node]:
        return [n for n in self.nodes if n.kind == "call"]

    @property
    def start_date(self) -> dt.date:
        return dt.datetime.fromtimestamp(self.start, dt.UTC).date()


@dataclass
class FileReport:
    """What reading one file gave: sessions and calls found, corrupt lines skipped, notes."""

    path: str
    format: str
    lines: int = 0
    sessions: int = 0
    calls: int = 0
    corrupt: int = 0
    corrupt_lines: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    first_problem: str | None = None  # why the first corrupt line was skipped, when known
    duplicates: int = 0  # records already read from another file: counted once
    repeated: int = 0  # records repeating one earlier in the same file (span formats): counted once

    def bad_line(self, line: int | None, reason: str | None = None) -> None:
        self.corrupt += 1
        if line is not None and len(self.corrupt_lines) < MAX_BAD_LINES_SHOWN:
            self.corrupt_lines.append(line)
        if reason and self.first_problem is None:
            self.first_problem = f"line {line}: {reason}" if line is not None else reason

    def corrupt_text(self) -> str:
        """Where the corrupt lines were and why the first was skipped, e.g. ``first at line 3, 9; line 3: ...``
        (a single-document file has no line numbers: only the reason, which names the span)."""
        parts = [f"first at line {', '.join(map(str, self.corrupt_lines))}"] if self.corrupt_lines else []
        if self.first_problem:
            parts.append(self.first_problem)
        return "; ".join(parts)

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "format": self.format,
            "lines": self.lines,
            "sessions": self.sessions,
            "calls": self.calls,
            "corrupt_lines_skipped": self.corrupt,
            "first_corrupt_lines": list(self.corrupt_lines),
            "notes": list(self.notes),
            **({"duplicates_skipped": self.duplicates} if self.duplicates else {}),
            **({"repeats_in_file_skipped": self.repeated} if self.repeated else {}),
        }


def json_lines(path: Path, report: FileReport, say_why: bool = False):
    """``(line number, object)`` for each JSON object line of a JSON Lines file.

    Blank lines are skipped; a line that is not a JSON object is counted as corrupt on ``report``
    (which also tracks how many lines were read), with the reason when ``say_why``.
    """
    with Path(path).open(encoding="utf-8", errors="replace") as fh:
        for no, raw in enumerate(fh, start=1):
            report.lines = no
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except (ValueError, RecursionError):  # not JSON, or nested too deep to read
                report.bad_line(no, "not a JSON record" if say_why else None)
                continue
            if not isinstance(obj, dict):
                report.bad_line(no, "not a JSON object" if say_why else None)
                continue
            yield no, obj


def parse_timestamp(value) -> float:
    """ISO 8601 (``2026-11-02T09:00:00.000Z``) to unix seconds; raises ValueError/TypeError."""
    if not isinstance(value, str):
        raise TypeError("timestamp is not a string")
    t = dt.datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    if t.tzinfo is None:
        t = t.replace(tzinfo=dt.UTC)
    return t.timestamp()


def link_nodes(nodes: list[Node]) -> None:
    """Fill every node's ``preds`` (its frontier among its container's nodes) and ``order``.

    Within each container, nodes are taken in order of (start, end); when a node is
    reached, every earlier node that has ended by its start joins the frontier,
    removing the frontier nodes it covers (those that ended before it started).

    The frontier is kept in order of end (nodes join it in that order), so the nodes a newcomer
    covers are a prefix of it: each node joins and leaves once, and nodes reached while the frontier
    is unchanged share one ``preds`` tuple (a thousand parallel calls followed by a thousand more
    cost linear time and memory, not quadratic).
    """
    groups: dict[str | None, list[Node]] = defaultdict(list)
    for seq, n in enumerate(nodes):
        groups[n.parent].append(n)
        n.order = seq  # provisional tie-breaker: creation order
    for group in groups.values():
        group.sort(key=lambda n: (n.start, n.end, n.order))
        for i, n in enumerate(group):
            n.order = i
        ended: list[tuple[float, int, Node]] = []
        frontier: deque[Node] = deque()
        preds: tuple[str, ...] = ()
        for n in group:
            changed = False
            while ended and ended[0][0] <= n.start:
                _, _, m = heapq.heappop(ended)
                while frontier and frontier[0].end <= m.start and frontier[0].order < m.order:
                    frontier.popleft()
                frontier.append(m)
                changed = True
            if changed:
                preds = tuple(f.id for f in frontier)
            n.preds = preds
            heapq.heappush(ended, (n.end, n.order, n))


# --------------------------------------------------------------------------- tables

CALL_COLUMNS = [
    "session",
    "project",
    "source",
    "agent",
    "node",
    "call_id",
    "model",
    "provider",
    "tier",
    "speed",
    "service_tier",
    "start_s",
    "end_s",
    "duration_s",
    "parent",
    "preds",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cache_write_5m_tokens",
    "cache_write_1h_tokens",
    "output_tokens",
    "reasoning_tokens",
    "recorded_ttft_s",
    "usage_recorded",
]

SPAN_COLUMNS = [
    "session",
    "project",
    "source",
    "agent",
    "node",
    "kind",
    "name",
    "start_s",
    "end_s",
    "duration_s",
    "parent",
    "preds",
]


# table column -> the node attribute (or the call attribute) it holds
_NODE_ATTRS = {
    "agent": "agent",
    "node": "id",
    "kind": "kind",
    "name": "name",
    "start_s": "start",
    "end_s": "end",
    "parent": "parent",
}
_CALL_ATTRS = {
    "call_id": "call_id",
    "model": "model",
    "provider": "provider",
    "tier": "tier",
    "speed": "speed",
    "service_tier": "service_tier",
    **{f"{k}_tokens": f"{k}_tokens" for k in ("input", "cache_read", "cache_write_5m", "cache_write_1h", "output")},
    "reasoning_tokens": "reasoning_tokens",
    "recorded_ttft_s": "ttft_s",
    "usage_recorded": "usage_recorded",
}


def _columns(sessions: list[Session], names: list[str], rows) -> dict[str, list]:
    """The table's columns (``names``), built a column at a time (no tuple per row): ``rows(session)`` gives
    the session's nodes that are rows."""
    cols: dict[str, list] = {c: [] for c in names}
    for s in sessions:
        nodes = rows(s)
        count = len(nodes)
        cols["session"] += [s.id] * count
        cols["project"] += [s.project] * count
        cols["source"] += [s.source] * count
        for col, attr in _NODE_ATTRS.items():
            if col in cols:
                cols[col] += map(attrgetter(attr), nodes)
        cols["duration_s"] += [n.end - n.start for n in nodes]
        cols["preds"] += [" ".join(n.preds) for n in nodes]
        if "call_id" in cols:
            calls = [n.call for n in nodes]
            for col, attr in _CALL_ATTRS.items():
                cols[col] += map(attrgetter(attr), calls)
            cols["cache_write_tokens"] += [c.cache_write_5m_tokens + c.cache_write_1h_tokens for c in calls]
    return cols


def calls_table(sessions: list[Session]) -> pd.DataFrame:
    """One row per API call (recorded values only)."""
    import pandas as pd

    cols = _columns(sessions, CALL_COLUMNS, lambda s: [n for n in s.nodes if n.kind == "call" and n.call is not None])
    return pd.DataFrame(cols if cols["node"] else [], columns=CALL_COLUMNS)  # (no row: every column of objects)


def spans_table(sessions: list[Session]) -> pd.DataFrame:
    """One row per tool run, human gap and agent container."""
    import pandas as pd

    cols = _columns(sessions, SPAN_COLUMNS, lambda s: [n for n in s.nodes if n.kind != "call"])
    return pd.DataFrame(cols if cols["node"] else [], columns=SPAN_COLUMNS)  # (no row: every column of objects)

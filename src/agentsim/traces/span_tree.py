"""Trees of timed spans (OpenTelemetry, Langfuse, LangSmith, OpenAI Agents SDK) as recorded sessions.

Every tracing format that records *spans* — an id, a parent, a start and an end — says the same
thing in its own words. Its reader turns each record into a :class:`TreeSpan` (what kind of thing
it is: a model ``call``, a ``tool`` run, or ``other``; its usage, read lazily; its session key and
project), and this module builds the sessions, the same way for every format:

* **Which spans are kept**: calls and tools; and any other span with a call or a tool below it,
  as a **container** (``agent``; a tool with calls below it is a container too, as Claude Code's
  ``Task`` tool is). A span is a call if it carries a model call, whatever it contains: a call span
  holding tool spans (Google ADK's ``call_llm`` holds its ``execute_tool`` spans) is counted as a
  call that ends where the first of them starts, and what it holds is replayed after it, in the
  same container. Only a call span wrapping another call span through plain spans (the same request
  recorded twice, by two instrumentations) is a container, and only the innermost request counts.
  Spans with nothing GenAI below them are left out: their time stays as lag.
* **Broken parent links**: a span naming itself as its parent, and each cycle of parent links, is
  cut at its earliest-starting span, which is read as a root; the file's notes say which spans.
* **Usage**: a call whose record carries no token usage is counted, flagged
  (``Call.usage_recorded``) and noted; replay leaves it unpriced rather than at $0.
* **Sessions**: the traces sharing a session key form one session (else one trace is one); the gap
  between one trace and the next is **human** time. Siblings' intervals give order and parallelism
  (:func:`~agentsim.traces.sessions.link_nodes`).
* **Bad records**: a span that ends before it starts, or a call whose usage cannot be read, is
  counted as corrupt on the file's report (with its line and why) and left out.

The walk is iterative (no recursion) and linear in the number of spans: traces may nest deeply and
hold millions of spans; how deep a session may nest is checked when files are read
(:mod:`agentsim.traces.session_files`). ``benchmarks/otel_spans.py`` measures the time per span.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, NamedTuple

from agentsim.model.domain import problem
from agentsim.traces.sessions import Call, FileReport, Node, Session, link_nodes, token_count

__all__ = ["PLAIN_TIERS", "RecordedUsage", "SpanSet", "TreeSpan", "build_session", "group_traces", "usage_call"]

PLAIN_TIERS = (None, "", "default", "auto", "standard", "on_demand")
MAX_TTFT_S = 86_400.0  # a first token more than a day after the request is corrupt


class RecordedUsage(NamedTuple):
    """A call's usage as its record has it (raw values, checked by :func:`usage_call`): token counts (None:
    not recorded), the time to first token in seconds, the service tier, and whether the record carries
    usage at all (None: whether any count is given). A named tuple: made once per call of a million (a frozen
    dataclass took 4 us to make)."""

    input_tokens: Any = None  # every input token, cached included (or, Anthropic style, uncached only)
    cache_read: Any = None
    cache_write: Any = None  # all cache writes, 1 h ones included
    cache_write_1h: Any = None
    output: Any = None  # reasoning included
    reasoning: Any = None
    ttft: Any = None
    service_tier: Any = None
    recorded: bool | None = None


def usage_call(call_id: str, model: str, provider: str | None, usage: RecordedUsage) -> tuple[Call, bool]:
    """A call from recorded usage (raw values as the file has them), and whether its input left out the
    cached tokens (then added back: the input counts every token sent, cached included).
    ``usage.recorded`` says whether the record carries usage at all (default: whether any count is given);
    a call without it is flagged (``Call.usage_recorded``), not priced as $0.

    Raises ValueError, saying why, on a count that is negative, fractional, non-finite or implausible
    (:func:`~agentsim.traces.sessions.token_count`) or a TTFT that is not a number of seconds."""
    u = usage
    recorded = u.recorded
    if recorded is None:
        recorded = any(v is not None for v in (u.input_tokens, u.cache_read, u.cache_write, u.cache_write_1h, u.output))
    inp = token_count(u.input_tokens)
    read = token_count(u.cache_read)
    write_1h = token_count(u.cache_write_1h)
    write = token_count(u.cache_write)
    write_5m = max(write - write_1h, 0) if write else 0
    out = token_count(u.output)
    ttft, service_tier = u.ttft, u.service_tier
    added = inp < read + write_5m + write_1h
    if added:
        inp += read + write_5m + write_1h
    bad = problem("duration", ttft) if ttft is not None else None
    if bad is not None:
        raise ValueError(f"time to first token: {bad}")
    if ttft is not None and ttft > MAX_TTFT_S:
        raise ValueError(f"time to first token {ttft:g} s is more than a day, which is not plausible")
    call = Call(
        call_id=call_id,
        model=str(model),
        provider=provider,
        tier="standard" if service_tier in PLAIN_TIERS else str(service_tier),
        service_tier=str(service_tier) if service_tier is not None else None,
        input_tokens=inp,
        cache_read_tokens=read,
        cache_write_5m_tokens=write_5m,
        cache_write_1h_tokens=write_1h,
        output_tokens=out,
        reasoning_tokens=min(token_count(u.reasoning), out),
        ttft_s=float(ttft) if ttft is not None else None,
        usage_recorded=recorded,
    )
    return call, added


@dataclass(slots=True)
class TreeSpan:
    """One span of a trace, as the session builder needs it (no content: names, times, usage)."""

    trace: str
    id: str
    parent: str | None
    name: str
    start: float  # unix seconds
    end: float
    kind: str  # call | tool | other
    usage: Callable[[str], tuple[Call, bool]] | None = None  # node id -> (call, cached tokens added back)
    tool_name: str | None = None
    agent_name: str | None = None  # the agent a container runs (its nodes belong to it)
    session: str | None = None  # key shared by the traces of one conversation
    project: str | None = None
    line: int | None = None  # line of the file it came from (None: a single document)
    label: str | None = None  # how messages name it (default: "span ID")
    key: tuple[str, str] = field(init=False, repr=False)  # (trace, id), its identity

    def __post_init__(self) -> None:
        self.key = (self.trace, self.id)

    @property
    def where(self) -> str:
        return self.label or f"span {self.id}"


class SpanSet:
    """Spans of many files, each (trace, id) once, grouped by trace, with the report of the file that
    brought each trace."""

    def __init__(self) -> None:
        self.traces: dict[str, list[TreeSpan]] = defaultdict(list)
        self.report_of_trace: dict[str, FileReport] = {}
        self._seen: dict[tuple[str, str], FileReport] = {}  # each span -> the report of the file that brought it

    def add(self, span: TreeSpan, rep: FileReport) -> None:
        first = self._seen.get(span.key)
        if first is not None:  # the same span again (a copy, a re-sent batch): counted once, said where
            if first is rep:
                rep.repeated += 1
            else:
                rep.duplicates += 1
            return
        self._seen[span.key] = rep
        self.traces[span.trace].append(span)
        self.report_of_trace.setdefault(span.trace, rep)

    def sessions(self, source: str, notes: dict[str, str] | None = None) -> list[Session]:
        """One session per session key (or trace), counted on the report of its first trace's file."""
        out = []
        for key, tids in group_traces(self.traces).items():
            rep = self.report_of_trace[tids[0]]
            session = build_session(key, [self.traces[t] for t in tids], rep, source, notes)
            if session is not None:
                out.append(session)
                rep.sessions += 1
                self._count_calls(session, tids)
        return out

    def _count_calls(self, session: Session, tids: list[str]) -> None:
        """Each file's report counts the calls of its own traces (a session may span files)."""
        calls = {n.id for n in session.nodes if n.kind == "call"}
        for tid in tids:
            found = 0
            for s in self.traces[tid]:  # (a loop, not sum() over a generator per trace: a trace per span)
                if s.kind == "call" and (s.id in calls or f"{tid}:{s.id}" in calls):
                    found += 1
            self.report_of_trace[tid].calls += found


def group_traces(traces: dict[str, list[TreeSpan]]) -> dict[str, list[str]]:
    """Session key -> trace ids: traces sharing a session key, else each trace alone."""
    grouped: dict[str, list[str]] = defaultdict(list)
    for tid, spans in traces.items():
        key = next((s.session for s in spans if s.session), None)
        grouped[key or tid].append(tid)
    return grouped


# --------------------------------------------------------------------------- the tree


@dataclass
class _Tree:
    ids: dict[tuple[str, str], str]  # (trace, span) -> node id, unique within the session
    by_id: dict[tuple[str, str], TreeSpan]
    children: dict[tuple[str, str], list[TreeSpan]]  # in start order
    roots: set[tuple[str, str]]  # spans without a parent in the session (or whose parent link was cut)
    genai_below: set[tuple[str, str]]  # spans with a call or a tool strictly below them
    wraps_call: set[tuple[str, str]]  # calls with another call below them through plain spans only
    cut: list[str]  # one line per cut parent link (a span that is its own parent, a cycle)

    def has_genai(self, s: TreeSpan) -> bool:
        return s.key in self.genai_below


def _index(spans: list[TreeSpan]) -> _Tree:
    """The session's span tree, built in time linear in the number of spans (no recursion)."""
    ids: dict[tuple[str, str], str] = {}
    by_id: dict[tuple[str, str], TreeSpan] = {}
    seen: set[str] = set()
    for s in spans:
        nid = s.id if s.id not in seen else f"{s.trace}:{s.id}"
        seen.add(nid)
        ids[s.key] = nid
        by_id[s.key] = s
    parent: dict[tuple[str, str], tuple[str, str] | None] = {}
    for s in spans:  # the parent's own key (the same tuple object: later look-ups match it by identity)
        up = by_id.get((s.trace, s.parent)) if s.parent else None
        parent[s.key] = up.key if up is not None else None
    cut = _cut_cycles(spans, parent, by_id)
    children: dict[tuple[str, str], list[TreeSpan]] = defaultdict(list)
    for s in spans:
        p = parent[s.key]
        if p is not None:
            children[p].append(s)
    for kids in children.values():
        if len(kids) > 1:
            kids.sort(key=lambda c: (c.start, c.id))
    roots = {k for k, p in parent.items() if p is None}
    below, wraps = _below(spans, children, roots)
    return _Tree(ids, by_id, children, roots, below, wraps, cut)


def _cut_cycles(spans: list[TreeSpan], parent: dict, by_id: dict) -> list[str]:
    """Cut every cycle of parent links at its earliest-starting span (which becomes a root), in place;
    one line per cut saying which spans formed it. Each span is walked once (a functional graph)."""
    state: dict[tuple[str, str], int] = {}  # 1: on the current walk, 2: done
    cut: list[str] = []
    for s in spans:
        path: list[tuple[str, str]] = []
        k: tuple[str, str] | None = s.key
        while k is not None and k not in state:
            state[k] = 1
            path.append(k)
            k = parent[k]
        if k is not None and state[k] == 1:  # the walk met itself: path[i:] is a cycle
            ring = path[path.index(k) :]
            head = min(ring, key=lambda r: (by_id[r].start, r[1]))
            parent[head] = None
            cut.append(_cut_text(ring, head, by_id))
        for p in path:
            state[p] = 2
    return cut


def _cut_text(ring: list[tuple[str, str]], head: tuple[str, str], by_id: dict) -> str:
    if len(ring) == 1:
        return f"{by_id[head].where} names itself as its parent"
    shown = " -> ".join(by_id[r].where for r in ring[:4]) + (" -> ..." if len(ring) > 4 else "")
    return f"parent links form a cycle ({shown}); cut at {by_id[head].where}, the earliest to start"


def _below(spans: list[TreeSpan], children: dict, roots: set) -> tuple[set, set]:
    """Spans with a call or tool strictly below them, and calls wrapping another call through plain
    spans only (the same request recorded twice), bottom-up in one pass over a post-order."""
    order: list[TreeSpan] = []
    stack = [s for s in spans if s.key in roots]
    while stack:  # pre-order; reversed, every span comes after all of its children
        s = stack.pop()
        order.append(s)
        stack.extend(children.get(s.key, ()))
    genai: set[tuple[str, str]] = set()
    call_via_plain: set[tuple[str, str]] = set()  # a call lies below through plain spans only
    for s in reversed(order):
        kids = children.get(s.key)
        if not kids:
            continue
        has_genai = has_call = False
        for c in kids:  # (loops, not any() over generators: a million spans)
            if not has_genai and (c.kind != "other" or c.key in genai):
                has_genai = True
            if not has_call and (c.kind == "call" or (_plain(c) and c.key in call_via_plain)):
                has_call = True
            if has_genai and has_call:
                break
        if has_genai:
            genai.add(s.key)
        if has_call:
            call_via_plain.add(s.key)
    wraps = {s.key for s in spans if s.kind == "call" and s.key in call_via_plain}
    return genai, wraps


def _plain(s: TreeSpan) -> bool:
    """A span that is neither a call, a tool nor an agent: an HTTP request, a chain step..."""
    return s.kind == "other" and s.agent_name is None


class _Builder:
    """Walks the spans of one session depth first and appends its nodes."""

    def __init__(self, session: Session, tree: _Tree, rep: FileReport):
        self.session, self.tree, self.rep = session, tree, rep
        self.cached_added = 0  # calls whose input left out the cached tokens (added back)
        self.nested_calls = 0  # call spans wrapping another call span (only the innermost is counted)
        self.holding = 0  # call spans holding tools (or agents): the call ends where the first one starts
        self.no_usage = 0  # calls whose record has no token usage

    def visit(self, root: TreeSpan) -> None:  # depth first, children in start order, without recursion
        stack: list[tuple[TreeSpan, str | None, str]] = [(root, None, "main")]
        while stack:
            s, parent, agent = stack.pop()
            if s.end < s.start:
                self.rep.bad_line(s.line, f"{s.where} ends before it starts")
                continue
            if not self.tree.has_genai(s):
                self._leaf(s, parent, agent, s.end)
                continue
            if s.kind == "call" and s.key not in self.tree.wraps_call:
                kids = self.tree.children[s.key]
                first = min((c.start for c in kids if c.kind != "other" or self.tree.has_genai(c)), default=s.end)
                self.holding += 1
                self._leaf(s, parent, agent, min(max(first, s.start), s.end))
                stack.extend((c, parent, agent) for c in reversed(kids))  # its tools follow it
                continue
            kids = self._container(s, parent, agent)
            stack.extend(reversed(kids))

    def _leaf(self, s: TreeSpan, parent: str | None, agent: str, end: float) -> None:
        nid = self.tree.ids[s.key]
        if s.kind == "call":
            try:
                call, added = s.usage(nid) if s.usage is not None else (None, False)
            except ValueError as exc:
                self.rep.bad_line(s.line, f"{s.where}: {exc}")
                return
            if call is None:
                return
            if call.ttft_s is not None and call.ttft_s > end - s.start:
                call.ttft_s = end - s.start  # the call was cut at its first tool
            self.cached_added += added
            self.no_usage += not call.usage_recorded
            self.session.nodes.append(Node(nid, "call", s.start, end, parent=parent, agent=agent, call=call))
        elif s.kind == "tool":
            self.session.nodes.append(
                Node(nid, "tool", s.start, s.end, parent=parent, agent=agent, name=s.tool_name or "tool")
            )
        # other spans with nothing GenAI below: their time stays as lag

    def _container(self, s: TreeSpan, parent: str | None, agent: str) -> list[tuple[TreeSpan, str, str]]:
        nid = self.tree.ids[s.key]
        if s.kind == "call":
            self.nested_calls += 1
        kind = "tool" if s.kind == "tool" else "agent"
        inner_agent = s.agent_name if s.agent_name is not None and kind == "agent" else agent
        name = s.tool_name if kind == "tool" else (s.agent_name or s.name.split(" ")[0])
        self.session.nodes.append(Node(nid, kind, s.start, s.end, parent=parent, agent=agent, name=name))
        return [(c, nid, inner_agent) for c in self.tree.children[s.key]]

    def traces(self, traces: list[list[TreeSpan]]) -> None:
        """Visit each trace's roots, in order of their first start; a gap between traces is human time."""
        prev_end: float | None = None
        human = 0
        nodes, roots_of = self.session.nodes, self.tree.roots
        for spans in sorted(traces, key=_first_start):
            roots = [s for s in spans if s.key in roots_of]
            before = len(nodes)
            for r in sorted(roots, key=_ROOT_ORDER) if len(roots) > 1 else roots:
                self.visit(r)
            first = _top_span(nodes, before)
            if first is None:
                continue
            if prev_end is not None and first[0] > prev_end:
                human += 1
                nodes.append(Node(f"h{human}", "human", prev_end, first[0], name="human"))
            prev_end = max(prev_end or first[0], first[1])


def _first_start(spans: list[TreeSpan]) -> float:
    return min(map(_START, spans))


_START = attrgetter("start")
_ROOT_ORDER = attrgetter("start", "id")


def _top_span(nodes: list[Node], since: int) -> tuple[float, float] | None:
    """The first start and the last end of the top-level nodes from ``since`` on (None: there is none)."""
    lo = hi = None
    for i in range(since, len(nodes)):
        n = nodes[i]
        if n.parent is not None:
            continue
        if lo is None:
            lo, hi = n.start, n.end
            continue
        if n.start < lo:
            lo = n.start
        if n.end > hi:
            hi = n.end
    return None if lo is None else (lo, hi)


DEFAULT_NOTES = {
    "cached_added": "{n} call spans report input tokens without the cached tokens; "
    "cache reads and writes were added back",
    "nested_calls": "{n} call spans wrap other call spans (the same request recorded twice); only the innermost "
    "are counted",
    "holding": "{n} call spans hold tool or agent spans (as Google ADK's call_llm holds execute_tool): each is "
    "counted as a call ending where the first of them starts, and what it holds is replayed after it",
    "no_usage": "{n} calls record no token usage: counted as calls with 0 tokens and NOT priced (their cost is "
    "unknown, not $0)",
}


def build_session(
    key: str, traces: list[list[TreeSpan]], rep: FileReport, source: str, notes: dict[str, str] | None = None
) -> Session | None:
    """The session of ``traces`` (None when it has no call); notes (calls whose cached tokens were added
    back, that wrapped other calls or held tools, that record no usage; parent links cut) go to ``rep``
    in the words of ``notes``."""
    spans = [s for t in traces for s in t]
    tree = _index(spans)
    project = next((s.project for s in spans if s.project), None)
    session = Session(id=key, source=source, file=rep.path, project=project)
    b = _Builder(session, tree, rep)
    b.traces(traces)
    words = {**DEFAULT_NOTES, **(notes or {})}
    for what in ("cached_added", "nested_calls", "holding", "no_usage"):
        n = getattr(b, what)
        if n:
            rep.notes.append(words[what].format(n=n))
    for line in tree.cut[:5]:
        rep.notes.append(f"{line}: the parent link was ignored, the span read as a root")
    if len(tree.cut) > 5:
        rep.notes.append(f"{len(tree.cut) - 5} more parent links ignored (cycles, spans their own parents)")
    if not any(n.kind == "call" for n in session.nodes):
        return None
    link_nodes(session.nodes)
    return session

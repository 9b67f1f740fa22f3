"""Trees of timed spans (OpenTelemetry, Langfuse, LangSmith, OpenAI Agents SDK) as recorded sessions.

Every tracing format that records *spans* — an id, a parent, a start and an end — says the same
thing in its own words. Its reader turns each record into a :class:`TreeSpan` (what kind of thing
it is: a model ``call``, a ``tool`` run, or ``other``; its usage, read lazily; its session key and
project), and this module builds the sessions, the same way for every format:

* **Which spans are kept**: calls and tools; and any other span with a call or a tool below it,
  as a **container** (``agent``; a tool with calls below it is a container too, as Claude Code's
  ``Task`` tool is). A call span with other calls below it is a container (only the innermost
  request is counted, with a note). Spans with nothing GenAI below them are left out: their time
  stays as lag. Spans whose parent links form a cycle are reachable from no root and are left out.
* **Sessions**: the traces sharing a session key form one session (else one trace is one); the gap
  between one trace and the next is **human** time. Siblings' intervals give order and parallelism
  (:func:`~agentsim.traces.sessions.link_nodes`).
* **Bad records**: a span that ends before it starts, or a call whose usage cannot be read, is
  counted as corrupt on the file's report (with its line and why) and left out.

The walk is iterative (no recursion): traces may nest deeply; how deep a session may nest is
checked when files are read (:mod:`agentsim.traces.session_files`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from agentsim.model.domain import problem
from agentsim.traces.sessions import Call, FileReport, Node, Session, link_nodes, token_count

__all__ = ["PLAIN_TIERS", "SpanSet", "TreeSpan", "build_session", "group_traces", "usage_call"]

PLAIN_TIERS = (None, "", "default", "auto", "standard", "on_demand")
MAX_TTFT_S = 86_400.0  # a first token more than a day after the request is corrupt


def usage_call(
    call_id: str,
    model: str,
    provider: str | None,
    *,
    input_tokens=None,
    cache_read=None,
    cache_write=None,
    cache_write_1h=None,
    output=None,
    reasoning=None,
    ttft=None,
    service_tier=None,
) -> tuple[Call, bool]:
    """A call from recorded usage (raw values as the file has them), and whether its input left out the
    cached tokens (then added back: the input counts every token sent, cached included).

    Raises ValueError, saying why, on a count that is negative, fractional, non-finite or implausible
    (:func:`~agentsim.traces.sessions.token_count`) or a TTFT that is not a number of seconds."""
    inp = token_count(input_tokens)
    read = token_count(cache_read)
    write_1h = token_count(cache_write_1h)
    write = token_count(cache_write)
    write_5m = max(write - write_1h, 0) if write else 0
    out = token_count(output)
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
        reasoning_tokens=min(token_count(reasoning), out),
        ttft_s=float(ttft) if ttft is not None else None,
    )
    return call, added


@dataclass
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

    @property
    def key(self) -> tuple[str, str]:
        return (self.trace, self.id)

    @property
    def where(self) -> str:
        return self.label or f"span {self.id}"


class SpanSet:
    """Spans of many files, each (trace, id) once, grouped by trace, with the report of the file that
    brought each trace."""

    def __init__(self) -> None:
        self.traces: dict[str, list[TreeSpan]] = defaultdict(list)
        self.report_of_trace: dict[str, FileReport] = {}
        self._seen: set[tuple[str, str]] = set()

    def add(self, span: TreeSpan, rep: FileReport) -> None:
        if span.key in self._seen:  # the same span again (the file twice, a copy, a re-sent batch): counted once
            rep.duplicates += 1
            return
        self._seen.add(span.key)
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
                rep.calls += len(session.calls)
        return out


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
    children: dict[tuple[str, str], list[TreeSpan]]
    genai_below: dict[tuple[str, str], bool]

    def has_genai(self, s: TreeSpan) -> bool:
        return self.genai_below[s.key]


def _index(spans: list[TreeSpan]) -> _Tree:
    ids: dict[tuple[str, str], str] = {}
    seen: set[str] = set()
    for s in spans:
        nid = s.id if s.id not in seen else f"{s.trace}:{s.id}"
        seen.add(nid)
        ids[s.key] = nid
    by_id = {s.key: s for s in spans}
    children: dict[tuple[str, str], list[TreeSpan]] = defaultdict(list)
    for s in spans:
        if s.parent and (s.trace, s.parent) in by_id:
            children[(s.trace, s.parent)].append(s)
    return _Tree(ids, by_id, children, _genai_below(spans, children))


def _genai_below(spans: list[TreeSpan], children: dict) -> dict[tuple[str, str], bool]:
    """Whether any call or tool lies strictly below each span, bottom-up without recursion.

    Spans whose parent links form a cycle are reachable from no root; they get an entry anyway (the
    walk stops where it meets a span again), and are left out later because no root leads to them."""
    below: dict[tuple[str, str], bool] = {}
    for root in spans:
        if root.key in below:
            continue
        stack: list[tuple[TreeSpan, bool]] = [(root, False)]
        opened: set[tuple[str, str]] = set()
        while stack:
            s, expanded = stack.pop()
            k = s.key
            if k in below or (k in opened and not expanded):  # done, or met again around a cycle
                continue
            opened.add(k)
            if expanded:
                below[k] = any(c.kind in ("call", "tool") or below.get(c.key, False) for c in children[k])
                continue
            stack.append((s, True))
            stack.extend((c, False) for c in children[k] if c.key not in below)
    return below


class _Builder:
    """Walks the spans of one session depth first and appends its nodes."""

    def __init__(self, session: Session, tree: _Tree, rep: FileReport):
        self.session, self.tree, self.rep = session, tree, rep
        self.cached_added = 0  # calls whose input left out the cached tokens (added back)
        self.nested_calls = 0

    def visit(self, root: TreeSpan) -> None:  # depth first, children in start order, without recursion
        stack: list[tuple[TreeSpan, str | None, str]] = [(root, None, "main")]
        while stack:
            s, parent, agent = stack.pop()
            if s.end < s.start:
                self.rep.bad_line(s.line, f"{s.where} ends before it starts")
                continue
            below = self.tree.has_genai(s)
            if not below:
                self._leaf(s, parent, agent)
                continue
            kids = self._container(s, parent, agent)
            stack.extend(reversed(kids))

    def _leaf(self, s: TreeSpan, parent: str | None, agent: str) -> None:
        nid = self.tree.ids[s.key]
        if s.kind == "call":
            try:
                call, added = s.usage(nid) if s.usage is not None else (None, False)
            except ValueError as exc:
                self.rep.bad_line(s.line, f"{s.where}: {exc}")
                return
            if call is None:
                return
            self.cached_added += added
            self.session.nodes.append(Node(nid, "call", s.start, s.end, parent=parent, agent=agent, call=call))
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
        kids = sorted(self.tree.children[s.key], key=lambda c: (c.start, c.id))
        return [(c, nid, inner_agent) for c in kids]

    def traces(self, traces: list[list[TreeSpan]]) -> None:
        """Visit each trace's roots, in order of their first start; a gap between traces is human time."""
        prev_end: float | None = None
        human = 0
        for spans in sorted(traces, key=lambda spans: min(s.start for s in spans)):
            roots = [s for s in spans if not s.parent or (s.trace, s.parent) not in self.tree.by_id]
            before = len(self.session.nodes)
            for r in sorted(roots, key=lambda r: (r.start, r.id)):
                self.visit(r)
            new = [n for n in self.session.nodes[before:] if n.parent is None]
            if not new:
                continue
            first = min(n.start for n in new)
            if prev_end is not None and first > prev_end:
                human += 1
                self.session.nodes.append(Node(f"h{human}", "human", prev_end, first, name="human"))
            prev_end = max(prev_end or first, max(n.end for n in new))


DEFAULT_NOTES = {
    "cached_added": "{n} call spans report input tokens without the cached tokens; "
    "cache reads and writes were added back",
    "nested_calls": "{n} call spans wrap other call spans; only the innermost are counted",
}


def build_session(
    key: str, traces: list[list[TreeSpan]], rep: FileReport, source: str, notes: dict[str, str] | None = None
) -> Session | None:
    """The session of ``traces`` (None when it has no call); notes (how many calls had their cached
    tokens added back, or wrapped other calls) go to ``rep`` in the words of ``notes``."""
    spans = [s for t in traces for s in t]
    tree = _index(spans)
    project = next((s.project for s in spans if s.project), None)
    session = Session(id=key, source=source, file=rep.path, project=project)
    b = _Builder(session, tree, rep)
    b.traces(traces)
    words = {**DEFAULT_NOTES, **(notes or {})}
    if b.cached_added:
        rep.notes.append(words["cached_added"].format(n=b.cached_added))
    if b.nested_calls:
        rep.notes.append(words["nested_calls"].format(n=b.nested_calls))
    if not any(n.kind == "call" for n in session.nodes):
        return None
    link_nodes(session.nodes)
    return session

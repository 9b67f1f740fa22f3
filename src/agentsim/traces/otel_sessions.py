"""OpenTelemetry GenAI traces (OTLP JSON) as recorded sessions.

Spans are read with :func:`agentsim.traces.otlp.read_otlp` and sorted into:

* **calls**: spans whose ``gen_ai.operation.name`` is a model operation (``chat``,
  ``text_completion``, ``generate_content``, ``responses``), or that carry token usage
  and a model without an operation name. Tokens follow the GenAI conventions:
  ``gen_ai.usage.input_tokens`` counts all input, cached included (when it is
  smaller than cache reads + writes, the instrumentation counted uncached input
  only, Anthropic style, and the cached tokens are added back; a note says so);
  ``gen_ai.usage.output_tokens`` includes reasoning. A recorded time to first token
  (``gen_ai.response.time_to_first_chunk``) is used for the TTFT/decode split.
* **tools**: ``execute_tool`` spans (or spans with ``gen_ai.tool.name``).
* **containers**: any other span with calls or tools below it (``invoke_agent``,
  workflow spans): its children are replayed inside it. A call span with other
  call spans below it is a container too (only the innermost request is counted).
  Spans with no GenAI span below them are left out (their time stays as lag).

A **session** is every trace sharing a ``session.id`` or ``gen_ai.conversation.id``
attribute (else one trace). Siblings' intervals give the order and the parallelism
(:func:`~agentsim.traces.sessions.link_nodes`); the gap between one trace of a
conversation and the next is human time.

Only names, timings, token counts, model and tool names are read: message content
attributes (prompts, completions, tool arguments) are never touched.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

from agentsim.traces.otlp import Span, attr, read_otlp
from agentsim.traces.sessions import Call, FileReport, Node, Session, link_nodes, token_count

__all__ = ["FORMAT", "read_otel"]

FORMAT = "otel"
CALL_OPERATIONS = ("chat", "text_completion", "generate_content", "responses", "completion")
TOOL_OPERATIONS = ("execute_tool",)
SESSION_KEYS = ("session.id", "gen_ai.conversation.id")
PLAIN_TIERS = (None, "", "default", "auto", "standard", "on_demand")
# gen_ai.provider.name / gen_ai.system values -> genai-prices provider ids
PROVIDERS = {
    "gcp.gemini": "google",
    "gcp.vertex_ai": "google",
    "gemini": "google",
    "aws.bedrock": "aws",
    "azure.ai.openai": "azure",
    "az.ai.openai": "azure",
    "x_ai": "x-ai",
    "mistral_ai": "mistral",
}


def _is_call(s: Span) -> bool:
    op = attr(s, "operation")
    if op is not None:
        return op in CALL_OPERATIONS
    return (attr(s, "input_tokens") is not None or attr(s, "output_tokens") is not None) and (
        attr(s, "request_model") is not None or attr(s, "response_model") is not None
    )


def _is_tool(s: Span) -> bool:
    return attr(s, "operation") in TOOL_OPERATIONS or (attr(s, "tool_name") is not None and not _is_call(s))


def _count(v) -> int:
    return token_count(v)


def _session_key(spans: list[Span]) -> str | None:
    for s in spans:
        for key in SESSION_KEYS:
            v = s.attributes.get(key, s.resource.get(key))
            if isinstance(v, str | int) and str(v):
                return str(v)
    return None


def read_otel(files: list[Path]) -> tuple[list[Session], list[FileReport]]:
    """Read OTLP JSON files (documents or JSON Lines) into sessions, with a report per file."""
    reports: list[FileReport] = []
    traces: dict[str, list[Span]] = defaultdict(list)
    report_of_trace: dict[str, FileReport] = {}
    seen: set[tuple[str, str]] = set()
    for f in files:
        rep = FileReport(str(f), FORMAT)
        reports.append(rep)
        try:
            spans, problems = read_otlp(f)
        except (OSError, UnicodeDecodeError) as exc:
            rep.notes.append(f"cannot read the file: {exc}")
            continue
        rep.lines = len(spans)
        for line, message in problems:
            if line is None:
                rep.notes.append(message)
            else:
                rep.bad_line(line)
        for s in spans:
            key = (s.trace_id, s.span_id)
            if key in seen:  # the same span again (the file twice, a copy, a re-sent batch): counted once
                rep.duplicates += 1
                continue
            seen.add(key)
            traces[s.trace_id].append(s)
            report_of_trace.setdefault(s.trace_id, rep)
        if rep.duplicates:
            rep.notes.append(f"{rep.duplicates} spans repeat a (traceId, spanId) already read: counted once")
    grouped: dict[str, list[str]] = defaultdict(list)
    for tid, spans in traces.items():
        grouped[_session_key(spans) or tid].append(tid)
    sessions = []
    for key, tids in grouped.items():
        rep = report_of_trace[tids[0]]
        session = _build(key, [traces[t] for t in tids], rep)
        if session is not None:
            sessions.append(session)
            rep.sessions += 1
            rep.calls += len(session.calls)
    return sessions, reports


def _build(key: str, traces: list[list[Span]], rep: FileReport) -> Session | None:
    all_spans = [s for spans in traces for s in spans]
    ids: dict[tuple[str, str], str] = {}
    seen: set[str] = set()
    for s in all_spans:
        nid = s.span_id if s.span_id not in seen else f"{s.trace_id}:{s.span_id}"
        seen.add(nid)
        ids[(s.trace_id, s.span_id)] = nid
    by_id = {(s.trace_id, s.span_id): s for s in all_spans}
    children: dict[tuple[str, str], list[Span]] = defaultdict(list)
    for s in all_spans:
        if s.parent_id and (s.trace_id, s.parent_id) in by_id:
            children[(s.trace_id, s.parent_id)].append(s)

    # Any call or tool strictly below each span, bottom-up without recursion (traces may nest deeply).
    # Spans whose parent links form a cycle are reachable from no root and are left out.
    genai_below: dict[tuple[str, str], bool] = {}
    for root in all_spans:
        if (root.trace_id, root.span_id) in genai_below:
            continue
        stack: list[tuple[Span, bool]] = [(root, False)]
        opened: set[tuple[str, str]] = set()
        while stack:
            s, expanded = stack.pop()
            k = (s.trace_id, s.span_id)
            if k in genai_below or (k in opened and not expanded):  # done, or met again around a cycle
                continue
            opened.add(k)
            if expanded:
                genai_below[k] = any(
                    _is_call(c) or _is_tool(c) or genai_below.get((c.trace_id, c.span_id), False) for c in children[k]
                )
                continue
            stack.append((s, True))
            stack.extend((c, False) for c in children[k] if (c.trace_id, c.span_id) not in genai_below)

    def has_genai(s: Span) -> bool:
        return genai_below[(s.trace_id, s.span_id)]

    project = next((str(s.resource["service.name"]) for s in all_spans if "service.name" in s.resource), None)
    session = Session(id=key, source=FORMAT, file=rep.path, project=project)
    uncached_style = 0
    nested_calls = 0

    def visit(root: Span) -> None:  # depth first, children in start order, without recursion
        nonlocal uncached_style, nested_calls
        stack: list[tuple[Span, str | None, str]] = [(root, None, "main")]
        while stack:
            s, parent, agent = stack.pop()
            nid = ids[(s.trace_id, s.span_id)]
            below = has_genai(s)
            if s.end_s < s.start_s:
                rep.bad_line(s.source_line, f"span {s.span_id} ends before it starts")
                continue
            if _is_call(s) and not below:
                try:
                    call, added_cached = _call(s, nid)
                except ValueError as exc:
                    rep.bad_line(s.source_line, f"span {s.span_id}: {exc}")
                    continue
                uncached_style += added_cached
                session.nodes.append(Node(nid, "call", s.start_s, s.end_s, parent=parent, agent=agent, call=call))
                continue
            if _is_tool(s) and not below:
                name = attr(s, "tool_name")
                session.nodes.append(
                    Node(
                        nid,
                        "tool",
                        s.start_s,
                        s.end_s,
                        parent=parent,
                        agent=agent,
                        name=str(name) if name is not None else "tool",
                    )
                )
                continue
            if not below:
                continue  # not GenAI: its time stays as lag
            if _is_call(s):
                nested_calls += 1
            kind = "tool" if _is_tool(s) else "agent"
            agent_name = attr(s, "agent_name")
            inner_agent = str(agent_name) if agent_name is not None and kind == "agent" else agent
            name = attr(s, "tool_name") if kind == "tool" else (agent_name or s.name.split(" ")[0])
            session.nodes.append(
                Node(
                    nid,
                    kind,
                    s.start_s,
                    s.end_s,
                    parent=parent,
                    agent=agent,
                    name=str(name) if name is not None else None,
                )
            )
            kids = sorted(children[(s.trace_id, s.span_id)], key=lambda c: (c.start_s, c.span_id))
            stack.extend((c, nid, inner_agent) for c in reversed(kids))

    trace_spans = sorted(traces, key=lambda spans: min(s.start_s for s in spans))
    prev_end: float | None = None
    human = 0
    for spans in trace_spans:
        roots = [s for s in spans if not s.parent_id or (s.trace_id, s.parent_id) not in by_id]
        before = len(session.nodes)
        for r in sorted(roots, key=lambda r: (r.start_s, r.span_id)):
            visit(r)
        new = [n for n in session.nodes[before:] if n.parent is None]
        if not new:
            continue
        first = min(n.start for n in new)
        if prev_end is not None and first > prev_end:
            human += 1
            session.nodes.append(Node(f"h{human}", "human", prev_end, first, name="human"))
        prev_end = max(prev_end or first, max(n.end for n in new))
    if uncached_style:
        rep.notes.append(
            f"{uncached_style} call spans report input_tokens without the cached tokens "
            "(Anthropic style); cache reads and writes were added back"
        )
    if nested_calls:
        rep.notes.append(f"{nested_calls} call spans wrap other call spans; only the innermost are counted")
    if not any(n.kind == "call" for n in session.nodes):
        return None
    link_nodes(session.nodes)
    return session


def _call(s: Span, nid: str) -> tuple[Call, bool]:
    """The call of a span, and whether its input_tokens left out the cached tokens."""
    model = attr(s, "response_model") or attr(s, "request_model") or "unknown"
    system = attr(s, "system")
    provider = PROVIDERS.get(str(system), str(system)) if system is not None else None
    inp = _count(attr(s, "input_tokens"))
    read = _count(attr(s, "cache_read_tokens"))
    write = _count(attr(s, "cache_write_tokens"))
    out = _count(attr(s, "output_tokens"))
    reasoning = min(_count(attr(s, "reasoning_tokens")), out)
    added_cached = inp < read + write
    if added_cached:
        inp += read + write
    tier_raw = attr(s, "service_tier")
    ttft = attr(s, "ttft")
    if ttft is not None and (
        isinstance(ttft, bool) or not isinstance(ttft, int | float) or not math.isfinite(ttft) or ttft < 0
    ):
        raise ValueError(f"time to first token {ttft!r} is not a non-negative number")
    call = Call(
        call_id=nid,
        model=str(model),
        provider=provider,
        tier="standard" if tier_raw in PLAIN_TIERS else str(tier_raw),
        service_tier=str(tier_raw) if tier_raw is not None else None,
        input_tokens=inp,
        cache_read_tokens=read,
        cache_write_5m_tokens=write,
        output_tokens=out,
        reasoning_tokens=reasoning,
        ttft_s=float(ttft) if ttft is not None else None,
    )
    return call, added_cached

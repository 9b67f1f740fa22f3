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

from pathlib import Path

from agentsim.traces.otlp import Span, attr, read_otlp
from agentsim.traces.sessions import Call, FileReport, Session
from agentsim.traces.span_tree import SpanSet, TreeSpan, usage_call

__all__ = ["FORMAT", "read_otel", "tree_span"]

FORMAT = "otel"
CALL_OPERATIONS = ("chat", "text_completion", "generate_content", "responses", "completion")
TOOL_OPERATIONS = ("execute_tool",)
SESSION_KEYS = ("session.id", "gen_ai.conversation.id")
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


def _session_key(spans: list[Span]) -> str | None:
    for s in spans:
        for key in SESSION_KEYS:
            v = s.attributes.get(key, s.resource.get(key))
            if isinstance(v, str | int) and str(v):
                return str(v)
    return None


NOTES = {
    "cached_added": "{n} call spans report input_tokens without the cached tokens (Anthropic style); "
    "cache reads and writes were added back",
}


def tree_span(s: Span) -> TreeSpan:
    """The span as the session builder sees it: its kind, usage (read when needed) and session key."""
    kind = "call" if _is_call(s) else "tool" if _is_tool(s) else "other"
    tool = attr(s, "tool_name")
    agent = attr(s, "agent_name")
    service = s.resource.get("service.name")
    return TreeSpan(
        trace=s.trace_id,
        id=s.span_id,
        parent=s.parent_id,
        name=s.name,
        start=s.start_s,
        end=s.end_s,
        kind=kind,
        usage=(lambda nid, s=s: _call(s, nid)) if kind == "call" else None,
        tool_name=str(tool) if tool is not None else None,
        agent_name=str(agent) if agent is not None else None,
        session=_session_key([s]),
        project=str(service) if service is not None else None,
        line=s.source_line,
    )


def read_otel(files: list[Path]) -> tuple[list[Session], list[FileReport]]:
    """Read OTLP JSON files (documents or JSON Lines) into sessions, with a report per file."""
    reports: list[FileReport] = []
    spans = SpanSet()
    for f in files:
        rep = FileReport(str(f), FORMAT)
        reports.append(rep)
        try:
            read, problems = read_otlp(f)
        except (OSError, UnicodeDecodeError) as exc:
            rep.notes.append(f"cannot read the file: {exc}")
            continue
        rep.lines = len(read)
        for line, message in problems:
            if line is None:
                rep.notes.append(message)
            else:
                rep.bad_line(line)
        for s in read:
            spans.add(tree_span(s), rep)
        if rep.duplicates:
            rep.notes.append(f"{rep.duplicates} spans repeat a (traceId, spanId) already read: counted once")
    return spans.sessions(FORMAT, NOTES), reports


def _call(s: Span, nid: str) -> tuple[Call, bool]:
    """The call of a span, and whether its input_tokens left out the cached tokens."""
    model = attr(s, "response_model") or attr(s, "request_model") or "unknown"
    system = attr(s, "system")
    return usage_call(
        nid,
        str(model),
        PROVIDERS.get(str(system), str(system)) if system is not None else None,
        input_tokens=attr(s, "input_tokens"),
        cache_read=attr(s, "cache_read_tokens"),
        cache_write=attr(s, "cache_write_tokens"),
        output=attr(s, "output_tokens"),
        reasoning=attr(s, "reasoning_tokens"),
        ttft=attr(s, "ttft"),
        service_tier=attr(s, "service_tier"),
    )

"""OpenTelemetry GenAI traces (OTLP JSON) as recorded sessions.

Spans are read with :func:`agentsim.traces.otlp.read_otlp` and sorted into:

* **calls**: spans whose ``gen_ai.operation.name`` is a model operation (``chat``,
  ``text_completion``, ``generate_content``, ``responses``), or that carry token usage
  and a model without an operation name, or Google ADK's ``call_llm`` spans (which name a
  model and, in ADK releases before mid-2025, no usage). A call span is a call whatever it
  contains: ADK nests its ``execute_tool`` spans inside ``call_llm``; the call ends where its
  first tool starts and the tools are replayed after it (:mod:`agentsim.traces.span_tree`).
  A call whose span carries no token usage is counted, flagged and noted, never priced as $0.
  Tokens follow the GenAI conventions:
  ``gen_ai.usage.input_tokens`` counts all input, cached included (when it is
  smaller than cache reads + writes, the instrumentation counted uncached input
  only, Anthropic style, and the cached tokens are added back; a note says so);
  ``gen_ai.usage.output_tokens`` includes reasoning. A recorded time to first token
  (``gen_ai.response.time_to_first_chunk``) is used for the TTFT/decode split.
* **tools**: ``execute_tool`` spans (or spans with ``gen_ai.tool.name``).
* **containers**: any other span with calls or tools below it (``invoke_agent``,
  workflow spans): its children are replayed inside it. A call span wrapping another call
  span through plain spans (the same request recorded twice) is a container too (only the
  innermost request is counted).
  Spans with no GenAI span below them are left out (their time stays as lag).

A **session** is every trace sharing a ``session.id``, ``gen_ai.conversation.id``,
``langfuse.session.id`` or ``gcp.vertex.agent.session_id`` (Google ADK) attribute (else one trace).
Siblings' intervals give the order and the parallelism
(:func:`~agentsim.traces.sessions.link_nodes`); the gap between one trace of a
conversation and the next is human time.

Only names, timings, token counts, model and tool names are read: message content
attributes (prompts, completions, tool arguments) are never touched.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from agentsim.traces.otlp import ALIASES, Span, read_otlp
from agentsim.traces.sessions import Call, FileReport, Session
from agentsim.traces.span_tree import RecordedUsage, SpanSet, TreeSpan, usage_call

__all__ = ["FORMAT", "read_otel", "tree_span"]

FORMAT = "otel"
CALL_OPERATIONS = ("chat", "text_completion", "generate_content", "responses", "completion")
TOOL_OPERATIONS = ("execute_tool",)
# where instrumentations put the conversation: the conventions, Langfuse's OTel attribute, Google ADK's
SESSION_KEYS = ("session.id", "gen_ai.conversation.id", "langfuse.session.id", "gcp.vertex.agent.session_id")
ADK_CALL = "call_llm"  # Google ADK's model-call span (before ADK wrote gen_ai.operation.name on it)
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


(_OPERATION,), (_TOOL_NAME,), (_AGENT_NAME,) = ALIASES["operation"], ALIASES["tool_name"], ALIASES["agent_name"]


def _pick(a: dict, quantity: str):
    """:func:`~agentsim.traces.otlp.attr` on a span's attributes."""
    for name in ALIASES[quantity]:
        if name in a:
            return a[name]
    return None


def _call_kind(a: dict, name: str, op) -> bool:
    """Whether a span (its attributes, name and operation) is a model call."""
    if op is not None:
        return op in CALL_OPERATIONS
    model = _pick(a, "request_model") is not None or _pick(a, "response_model") is not None
    if name == ADK_CALL:
        return model
    return (_pick(a, "input_tokens") is not None or _pick(a, "output_tokens") is not None) and model


def _span_session(a: dict, resource: dict) -> str | None:
    for key in SESSION_KEYS:
        v = a[key] if key in a else resource.get(key)
        if isinstance(v, str | int) and str(v):
            return str(v)
    return None


NOTES = {
    "cached_added": "{n} call spans report input_tokens without the cached tokens (Anthropic style); "
    "cache reads and writes were added back",
}


def tree_span(s: Span) -> TreeSpan:
    """The span as the session builder sees it: its kind, usage (read when needed) and session key."""
    fields = (s.trace_id, s.span_id, s.parent_id, s.name, s.start_s, s.end_s, s.attributes, s.resource)
    return _tree_span((*fields, s.status, s.source_line))


def _tree_span(fields: tuple) -> TreeSpan:
    """:func:`tree_span` of a span's fields (:func:`~agentsim.traces.otlp.read_otlp` makes no Span for it)."""
    trace, sid, parent, name, start, end, a, resource, _, line = fields
    op = a.get(_OPERATION)  # (_pick of a quantity with one name)
    tool = a.get(_TOOL_NAME)
    if _call_kind(a, name, op):
        kind = "call"
    else:  # a tool: an execute_tool operation, or a tool name on a span that is no call
        kind = "tool" if op in TOOL_OPERATIONS or tool is not None else "other"
    agent = a.get(_AGENT_NAME)
    service = resource.get("service.name")
    return TreeSpan(
        trace=trace,
        id=sid,
        parent=parent,
        name=name,
        start=start,
        end=end,
        kind=kind,
        usage=partial(_call, a) if kind == "call" else None,
        tool_name=str(tool) if tool is not None else None,
        agent_name=str(agent) if agent is not None else None,
        session=_span_session(a, resource),
        project=str(service) if service is not None else None,
        line=line,
    )


def read_otel(files: list[Path]) -> tuple[list[Session], list[FileReport]]:
    """Read OTLP JSON files (documents or JSON Lines) into sessions, with a report per file."""
    reports: list[FileReport] = []
    spans = SpanSet()
    for f in files:
        rep = FileReport(str(f), FORMAT)
        reports.append(rep)
        try:
            read, problems = read_otlp(f, rep.notes, make=_tree_span)
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
            spans.add(s, rep)
        if rep.duplicates or rep.repeated:
            rep.notes.append(
                f"{rep.duplicates + rep.repeated} spans repeat a (traceId, spanId) already read: counted once"
            )
    return spans.sessions(FORMAT, NOTES), reports


_CALL_QUANTITIES = (
    "response_model",
    "request_model",
    "system",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
    "ttft",
    "service_tier",
)
_CALL_NAMES = tuple(ALIASES[q] for q in _CALL_QUANTITIES)


def _call(a: dict, nid: str) -> tuple[Call, bool]:
    """The call of a span (its attributes), and whether its input_tokens left out the cached tokens."""
    got = []
    for names in _CALL_NAMES:  # _pick of each quantity, in one loop (a million calls)
        for name in names:
            if name in a:
                got.append(a[name])
                break
        else:
            got.append(None)
    response_model, request_model, system, inp, read, write, out, reasoning, ttft, tier = got
    model = response_model or request_model or "unknown"
    usage = RecordedUsage(
        input_tokens=inp,
        cache_read=read,
        cache_write=write,
        output=out,
        reasoning=reasoning,
        ttft=ttft,
        service_tier=tier,
    )
    return usage_call(nid, str(model), PROVIDERS.get(str(system), str(system)) if system is not None else None, usage)

"""Reading OpenTelemetry traces in OTLP JSON, and the GenAI attributes agentsim uses.

Accepts the OTLP/HTTP JSON encoding (``{"resourceSpans": [...]}``) as one
document, or JSON Lines of such documents (the collector's file exporter), and
returns flat :class:`Span` records: ids, parent, name, start and end in Unix
seconds, attributes as plain Python values (resource attributes separately),
and status. A line or document that cannot be parsed is reported as a problem
``(line, message)`` and skipped; the caller decides whether what is left is
enough.

GenAI semantic conventions renamed several attributes over time; :data:`ALIASES`
lists, for each quantity, the names to try, newest first, and :func:`attr`
returns the first one present.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentsim.model.input_files import read_bounded

__all__ = ["ALIASES", "Span", "attr", "read_otlp", "spans_from_document"]

# quantity -> attribute names, newest convention first
ALIASES: dict[str, tuple[str, ...]] = {
    "operation": ("gen_ai.operation.name",),
    "system": ("gen_ai.provider.name", "gen_ai.system"),
    "request_model": ("gen_ai.request.model",),
    "response_model": ("gen_ai.response.model",),
    "input_tokens": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens"),
    "output_tokens": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens"),
    "cache_read_tokens": (
        "gen_ai.usage.cache_read.input_tokens",
        "gen_ai.usage.cache_read_input_tokens",
        "gen_ai.usage.cached_tokens",
        "gen_ai.usage.input_tokens.cached",
    ),
    "cache_write_tokens": (
        "gen_ai.usage.cache_creation.input_tokens",
        "gen_ai.usage.cache_creation_input_tokens",
        "gen_ai.usage.cache_write.input_tokens",
        "gen_ai.usage.cache_write_input_tokens",
    ),
    "reasoning_tokens": (
        "gen_ai.usage.reasoning.output_tokens",
        "gen_ai.usage.reasoning_tokens",
        "gen_ai.usage.output_tokens.reasoning",
    ),
    "ttft": ("gen_ai.response.time_to_first_chunk", "gen_ai.server.time_to_first_token"),
    "tool_name": ("gen_ai.tool.name",),
    "agent_name": ("gen_ai.agent.name",),
    "service_tier": (
        "gen_ai.request.service_tier",
        "gen_ai.openai.request.service_tier",
        "gen_ai.response.service_tier",
    ),
}


@dataclass(frozen=True)
class Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_s: float
    end_s: float
    attributes: dict[str, Any] = field(default_factory=dict)
    resource: dict[str, Any] = field(default_factory=dict)
    status: str = "unset"  # unset | ok | error
    source_line: int | None = None

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s


def attr(span: Span, quantity: str, default: Any = None) -> Any:
    """The first attribute present among :data:`ALIASES` ``[quantity]`` (or ``quantity`` itself)."""
    for name in ALIASES.get(quantity, (quantity,)):
        if name in span.attributes:
            return span.attributes[name]
    return default


def _value(v: dict) -> Any:
    if not isinstance(v, dict):
        return v
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        return int(v["intValue"])  # OTLP JSON encodes 64-bit ints as strings
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    if "kvlistValue" in v:
        return {kv["key"]: _value(kv.get("value", {})) for kv in v["kvlistValue"].get("values", [])}
    return None


def _attrs(items: list | None) -> dict[str, Any]:
    return {kv["key"]: _value(kv.get("value", {})) for kv in (items or []) if "key" in kv}


_STATUS = {
    0: "unset",
    1: "ok",
    2: "error",
    "STATUS_CODE_UNSET": "unset",
    "STATUS_CODE_OK": "ok",
    "STATUS_CODE_ERROR": "error",
}


def _id(sp: dict, key: str) -> str:
    v = sp[key]
    if not isinstance(v, str):
        raise TypeError(f"{key} is {type(v).__name__}, not a string")
    return v


MAX_UNIX_NS = 253_402_300_799 * 10**9  # 9999-12-31T23:59:59Z: the last instant a date can name


def _time(sp: dict, key: str) -> float:
    ns = int(sp[key])
    if not 0 <= ns <= MAX_UNIX_NS:
        raise ValueError(f"{key} {sp[key]} is not a time between 1970 and 9999 in nanoseconds since 1970")
    return ns / 1e9


def _span(sp: dict, resource: dict, line: int | None) -> Span:
    parent = sp.get("parentSpanId") or None
    return Span(
        trace_id=_id(sp, "traceId"),
        span_id=_id(sp, "spanId"),
        parent_id=_id(sp, "parentSpanId") if parent is not None else None,
        name=str(sp.get("name", "")),
        start_s=_time(sp, "startTimeUnixNano"),
        end_s=_time(sp, "endTimeUnixNano"),
        attributes=_attrs(sp.get("attributes")),
        resource=resource,
        status=_STATUS.get(sp.get("status", {}).get("code", 0), "unset"),
        source_line=line,
    )


def spans_from_document(doc: dict, line: int | None = None) -> list[Span]:
    """Spans of one OTLP JSON document; raises ValueError naming the place (``resourceSpans[0]...``) on a
    malformed one."""
    out = []
    where = "resourceSpans"
    try:
        for i, rs in enumerate(doc["resourceSpans"]):
            where = f"resourceSpans[{i}]"
            resource = _attrs(rs.get("resource", {}).get("attributes"))
            for j, ss in enumerate(rs.get("scopeSpans", rs.get("instrumentationLibrarySpans", []))):
                where = f"resourceSpans[{i}].scopeSpans[{j}]"
                for k, sp in enumerate(ss.get("spans", [])):
                    where = f"resourceSpans[{i}].scopeSpans[{j}].spans[{k}]"
                    out.append(_span(sp, resource, line))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"{where}: {type(exc).__name__}: {exc}") from None
    return out


def read_otlp(path: str | Path) -> tuple[list[Span], list[tuple[int | None, str]]]:
    """Read an OTLP JSON file (one document, or JSON Lines); return spans and problems found."""
    text = read_bounded(path, "session")
    problems: list[tuple[int | None, str]] = []
    spans: list[Span] = []
    stripped = text.strip()
    if not stripped:
        return [], [(None, "the file is empty")]
    try:
        doc = json.loads(stripped)
    except (json.JSONDecodeError, RecursionError):
        doc = None
    if isinstance(doc, dict):
        try:
            return spans_from_document(doc), problems
        except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
            return [], [(None, f"not an OTLP JSON document ({exc})")]
    for i, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            spans.extend(spans_from_document(json.loads(raw), line=i))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
            problems.append((i, f"{type(exc).__name__}: {exc}"))
    return spans, problems

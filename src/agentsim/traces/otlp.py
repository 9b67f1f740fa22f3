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

import codecs
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentsim.model.input_files import MAX_BYTES, InputError, input_problem, read_bounded

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


@dataclass(frozen=True, slots=True)
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
    out: dict[str, Any] = {}
    for kv in items or []:
        if "key" in kv:
            key = kv["key"]
            v = kv.get("value", {})
            # the usual value, a string or an int alone, without a call (what _value does with it)
            if type(v) is dict and len(v) == 1:
                if "stringValue" in v:
                    out[key] = v["stringValue"]
                    continue
                if "intValue" in v:
                    out[key] = int(v["intValue"])
                    continue
            out[key] = _value(v)
    return out


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
ERA_S = (946_684_800, 4_102_444_800)  # 2000-01-01 .. 2100-01-01: when a recorded trace can have been taken
UNITS = ((1, "nanoseconds"), (10**3, "microseconds"), (10**6, "milliseconds"), (10**9, "seconds"))
_ERA_NS = (ERA_S[0] * 10**9, ERA_S[1] * 10**9)


def _time(sp: dict, key: str, units: dict | None) -> float:
    """A ``*TimeUnixNano`` as Unix seconds. OTLP says nanoseconds; a value that names a moment between
    2000 and 2100 only when read as micro-, milli- or plain seconds (an exporter that wrote the wrong
    unit) is converted and counted in ``units``; a value plausible in no unit is refused."""
    raw = sp[key]
    if isinstance(raw, bool) or not isinstance(raw, int | str):
        raise TypeError(f"{key} is {type(raw).__name__}, not an integer")
    n = int(raw)
    if _ERA_NS[0] <= n < _ERA_NS[1]:  # nanoseconds, as OTLP says (the loop's first unit, without the loop)
        return n / 10**9
    lo, hi = ERA_S
    for per_ns, unit in UNITS:
        scale = 10**9 // per_ns  # units per second
        if lo * scale <= n < hi * scale:
            if per_ns != 1 and units is not None:
                units[unit] = units.get(unit, 0) + 1
            return n / scale
    raise ValueError(
        f"{key} {raw} is not a time: it names no moment between 2000 and 2100 in nanoseconds since 1970 (nor in "
        "micro-, milli- or seconds)"
    )


def _span(sp: dict, resource: dict, line: int | None, units: dict | None = None, make: Callable | None = None):
    """The span (or ``make`` of its fields: a tuple in the order of :class:`Span`'s)."""
    parent = sp.get("parentSpanId") or None
    # the usual span (string ids and times, as OTLP JSON writes them) without a call per check; any other
    # is read by _checked_span, whose first failing check says what is wrong
    trace, sid = sp.get("traceId"), sp.get("spanId")
    start, end = sp.get("startTimeUnixNano"), sp.get("endTimeUnixNano")
    if type(trace) is not str or type(sid) is not str or type(start) is not str or type(end) is not str:
        return _checked_span(sp, resource, line, units, make)
    if parent is not None and type(parent) is not str:
        return _checked_span(sp, resource, line, units, make)
    name = str(sp.get("name", ""))
    lo, hi = _ERA_NS
    n = int(start)
    start_s = n / 10**9 if lo <= n < hi else _time(sp, "startTimeUnixNano", units)
    n = int(end)
    end_s = n / 10**9 if lo <= n < hi else _time(sp, "endTimeUnixNano", units)
    fields = (trace, sid, parent, name, start_s, end_s, _attrs(sp.get("attributes")), resource)
    fields += (_STATUS.get(sp.get("status", {}).get("code", 0), "unset"), line)
    return Span(*fields) if make is None else make(fields)


def _checked_span(sp: dict, resource: dict, line: int | None, units: dict | None, make: Callable | None):
    """:func:`_span`, each field checked in turn (the first wrong one raises, naming itself)."""
    parent = sp.get("parentSpanId") or None
    fields = (
        _id(sp, "traceId"),
        _id(sp, "spanId"),
        _id(sp, "parentSpanId") if parent is not None else None,
        str(sp.get("name", "")),
        _time(sp, "startTimeUnixNano", units),
        _time(sp, "endTimeUnixNano", units),
        _attrs(sp.get("attributes")),
        resource,
        _STATUS.get(sp.get("status", {}).get("code", 0), "unset"),
        line,
    )
    return Span(*fields) if make is None else make(fields)


def spans_from_document(
    doc: dict, line: int | None = None, units: dict | None = None, make: Callable | None = None
) -> list:
    """Spans of one OTLP JSON document; raises ValueError naming the place (``resourceSpans[0]...``) on a
    malformed one. Timestamps converted from another unit than nanoseconds are counted in ``units``. With
    ``make``, each span is ``make(fields)`` instead (the tuple of a :class:`Span`'s fields, in order)."""
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
                    out.append(_span(sp, resource, line, units, make))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ValueError(f"{where}: {type(exc).__name__}: {exc}") from None
    return out


def read_otlp(
    path: str | Path, notes: list[str] | None = None, make: Callable[[tuple], Any] | None = None
) -> tuple[list, list[tuple[int | None, str]]]:
    """Read an OTLP JSON file (one document, or JSON Lines); return spans and problems found. A note
    per timestamp unit other than nanoseconds that had to be converted goes to ``notes``. With ``make``,
    the list holds ``make(fields)`` for every span instead (:func:`spans_from_document`): a reader that
    keeps spans of its own makes no :class:`Span` at all.

    JSON Lines are read block by block (memory bounded by the longest line, not the file); a file whose
    first line is not a JSON value alone (one document written over many lines), or that is not UTF-8,
    is read whole, as :func:`~agentsim.model.input_files.read_bounded` reads it."""
    units: dict[str, int] = {}
    try:
        spans, problems = _read_lines(path, units, make)
    except _Whole:
        units.clear()
        spans, problems = _read_text(read_bounded(path, "session"), units, make)
    if notes is not None:
        notes.extend(
            f"{n} timestamps (*TimeUnixNano) were written in {unit}, not nanoseconds as OTLP says: read as {unit}"
            for unit, n in sorted(units.items())
        )
    return spans, problems


class _Whole(Exception):
    """The file is to be read whole (see :func:`read_otlp`)."""


BLOCK_BYTES = 8 << 20
_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # where str.splitlines splits


def _lines(path: str | Path) -> Iterator[str]:
    """The lines of a session file, exactly as ``text.splitlines()`` of its whole text gives them, read
    block by block. Raises :class:`_Whole` where the file is not UTF-8 or holds more than a session file
    may (then :func:`read_bounded` says so in its words)."""
    found = input_problem(path, "session")
    if found is not None:
        raise InputError(*found)
    decoder = codecs.getincrementaldecoder("utf-8")()
    limit, total, carry = MAX_BYTES["session"], 0, ""
    with Path(path).open("rb") as fh:
        while True:
            data = fh.read(BLOCK_BYTES)
            total += len(data)
            if total > limit:
                raise _Whole
            try:
                text = carry + decoder.decode(data, final=not data)
            except UnicodeDecodeError:
                raise _Whole from None
            lines = text.splitlines()
            if not data:
                yield from lines
                return
            carry = ""
            if lines and not (text[-1] in _BREAKS and text[-1] != "\r"):
                # the last line goes on in the next block (a "\r" may be the first half of "\r\n")
                carry = lines.pop() + ("\r" if text[-1] == "\r" else "")
            yield from lines


_LINE_ERRORS = (json.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError, RecursionError)


def _read_lines(path: str | Path, units: dict, make) -> tuple[list, list[tuple[int | None, str]]]:
    """Spans and problems of a file read line by line; raises :class:`_Whole` where its first line that
    is not blank is not a JSON value (it may begin one document written over many lines)."""
    lines = enumerate(_lines(path), start=1)
    first = next(((i, raw) for i, raw in lines if raw.strip()), None)
    if first is None:
        return [], [(None, "the file is empty")]
    try:
        doc = json.loads(first[1])
    except (json.JSONDecodeError, RecursionError):
        raise _Whole from None
    second = next(((i, raw) for i, raw in lines if raw.strip()), None)
    if second is None and isinstance(doc, dict):  # the file's only value: one document
        return _one_document(doc, units, make)
    spans: list = []
    problems: list[tuple[int | None, str]] = []
    _add_line(first[0], doc, spans, problems, units, make)
    for i, raw in [second] if second else ():
        _add_line(i, raw, spans, problems, units, make)
    for i, raw in lines:
        if raw.strip():
            _add_line(i, raw, spans, problems, units, make)
    return spans, problems


def _add_line(i: int, raw, spans: list, problems: list, units: dict, make) -> None:
    """The spans of line ``i`` (its text, or the document already parsed from it) onto ``spans``, or its problem."""
    try:
        got = spans_from_document(json.loads(raw) if isinstance(raw, str) else raw, i, units, make)
    except _LINE_ERRORS as exc:
        problems.append((i, f"{type(exc).__name__}: {exc}"))
        return
    spans.extend(got)


def _one_document(doc: dict, units: dict, make) -> tuple[list, list[tuple[int | None, str]]]:
    try:
        spans = spans_from_document(doc, units=units, make=make)
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        units.clear()  # nothing read: no note on its timestamps
        return [], [(None, f"not an OTLP JSON document ({exc})")]
    return spans, []


def _read_text(text: str, units: dict, make) -> tuple[list, list[tuple[int | None, str]]]:
    """Spans and problems of a file's whole text: one document, or JSON Lines."""
    stripped = text.strip()
    if not stripped:
        return [], [(None, "the file is empty")]
    try:
        doc = json.loads(stripped)
    except (json.JSONDecodeError, RecursionError):
        doc = None
    if isinstance(doc, dict):
        return _one_document(doc, units, make)
    spans: list = []
    problems: list[tuple[int | None, str]] = []
    for i, raw in enumerate(text.splitlines(), start=1):
        if raw.strip():
            _add_line(i, raw, spans, problems, units, make)
    return spans, problems

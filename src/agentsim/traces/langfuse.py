"""Langfuse observation exports as recorded sessions.

A Langfuse *observation* (the public API's ``GET /api/public/observations``, or the UI's export) is
one timed record of a trace::

    {"id": "obs-2", "traceId": "t-1", "type": "GENERATION", "name": "chat", "parentObservationId": "obs-1",
     "startTime": "2026-11-02T09:00:01.000Z", "endTime": "2026-11-02T09:00:04.200Z",
     "completionStartTime": "2026-11-02T09:00:01.900Z", "model": "claude-sonnet-4-5",
     "usageDetails": {"input": 1200, "cache_read_input_tokens": 8000, "output": 350},
     "costDetails": {"input": 0.0036, "output": 0.00525, "total": 0.00885}, "level": "DEFAULT", ...}

A file holds an array of observations, an API page (``{"data": [...], "meta": {...}}``), JSON Lines of
either, or trace objects carrying their ``observations``: the API's trace (``GET
/api/public/traces/{id}``: ``{"id", "sessionId", ..., "observations": [...]}``) or the UI's trace
download (``{"trace": {"id", "sessionId", ...}, "observations": [...]}``); the trace's ``sessionId``,
wherever it stands, groups its observations into a session.

* **Calls** are ``GENERATION`` observations; **tools** are ``TOOL`` observations (Langfuse's typed
  observations); every other type (``SPAN``, ``AGENT``, ``CHAIN``, ``EVENT``, ...) with calls or
  tools below it is a container (:mod:`agentsim.traces.span_tree`). The tree comes from
  ``parentObservationId``.
* **Usage**: Langfuse's usage types are disjoint parts that add up, and any type whose name contains
  ``input`` counts as input (so does the UI): the call's input is the sum of every input-like type
  (``input``, ``input_cached_tokens``, ``cache_read_input_tokens``, ``cache_creation_input_tokens``...),
  its cache reads the types naming ``cache_read`` or ``cached``, its cache writes those naming
  ``cache_creation`` or ``cache_write``; output is every ``output``-like type, reasoning the types
  naming ``reasoning`` (part of the output). ``total`` is not read. The deprecated ``usage`` object
  (``{input, output}``) is read when ``usageDetails`` is absent.
* **TTFT** = ``completionStartTime - startTime`` (Langfuse's definition).
* ``costDetails`` (what Langfuse priced) is not read: replay prices the usage itself.
* **Sessions**: observations carrying a ``sessionId`` (trace exports) form sessions; otherwise one
  trace is one session.

``input``, ``output``, ``metadata``, ``statusMessage`` and every other content field are never
read into a record.
"""

from __future__ import annotations

from pathlib import Path

from agentsim.traces.record_files import records, when
from agentsim.traces.record_files import text_field as _text
from agentsim.traces.sessions import Call, FileReport, Session
from agentsim.traces.span_tree import RecordedUsage, SpanSet, TreeSpan, usage_call

__all__ = ["FORMAT", "looks_like", "read_langfuse"]

FORMAT = "langfuse"
TYPES = (
    "GENERATION",
    "SPAN",
    "EVENT",
    "TOOL",
    "AGENT",
    "CHAIN",
    "RETRIEVER",
    "EVALUATOR",
    "EMBEDDING",
    "GUARDRAIL",
)


USAGE_KEYS = ("model", "completionStartTime", "usageDetails", "usage")


def looks_like(obj: dict) -> bool:
    """An observation (or a trace holding observations)."""
    if not isinstance(obj, dict):
        return False
    if isinstance(obj.get("observations"), list):
        return True
    return obj.get("type") in TYPES and "startTime" in obj and ("traceId" in obj or "parentObservationId" in obj)


def _classify(key: str) -> str | None:
    k = key.lower()
    if k == "total" or k.startswith("total"):
        return None
    if "reasoning" in k:
        return "reasoning"
    if "cache_read" in k or "cached" in k:
        return "read"
    if "cache_creation" in k or "cache_write" in k:
        return "write_1h" if "1h" in k else "write"
    if "input" in k or "prompt" in k:
        return "input"
    if "output" in k or "completion" in k:
        return "output"
    return None


def usage_parts(details: dict) -> dict[str, float]:
    """Langfuse usage types summed into input, cache reads, cache writes (5 minutes and 1 hour), output and
    reasoning; raises ValueError on a value that is not a number."""
    parts = dict.fromkeys(("input", "read", "write", "write_1h", "output", "reasoning"), 0)
    for key, value in details.items():
        kind = _classify(str(key))
        if kind is None or value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"usage {key!r} is not a number")
        parts[kind] += value
    return {
        "input_tokens": parts["input"] + parts["read"] + parts["write"] + parts["write_1h"],
        "cache_read": parts["read"],
        "cache_write": parts["write"] + parts["write_1h"],
        "cache_write_1h": parts["write_1h"],
        "output": parts["output"] + parts["reasoning"],
        "reasoning": parts["reasoning"],
    }


def _usage(obs: dict) -> tuple[dict, bool]:
    """The usage parts of an observation, and whether it records any usage at all."""
    details = obs.get("usageDetails")
    if details is None:
        old = obs.get("usage")
        details = {k: old.get(k) for k in ("input", "output")} if isinstance(old, dict) else {}
    if not isinstance(details, dict):
        raise ValueError("usageDetails is not an object")
    recorded = any(v is not None and _classify(str(k)) is not None for k, v in details.items())
    return usage_parts(details), recorded


def _call(obs: dict, start: float, end: float, nid: str) -> tuple[Call, bool]:
    model = obs.get("model") if isinstance(obs.get("model"), str) and obs.get("model") else "unknown"
    ttft = None
    if obs.get("completionStartTime") is not None:
        first = when(obs["completionStartTime"], "completionStartTime")
        if first < start or first > end + 1e-3:
            raise ValueError("completionStartTime lies outside the observation's start and end")
        ttft = min(first, end) - start
    parts, recorded = _usage(obs)
    return usage_call(nid, model, None, RecordedUsage(**parts, ttft=ttft, recorded=recorded))


def tree_span(
    obs: dict,
    line: int | None,
    session: str | None = None,
    trace: str | None = None,
    label: str | None = None,
    environment: str | None = None,
) -> TreeSpan:
    """The observation as the session builder sees it; raises ValueError on a malformed one."""
    oid, tid = _text(obs, "id"), _text(obs, "traceId") or trace
    if oid is None or tid is None:
        raise ValueError("an observation needs an id and a traceId")
    kind_raw = obs.get("type")
    start = when(obs.get("startTime"), "startTime")
    end = when(obs["endTime"], "endTime") if obs.get("endTime") is not None else None
    kind = {"GENERATION": "call", "TOOL": "tool"}.get(kind_raw, "other")
    if end is None:
        if kind != "other":
            raise ValueError(f"{kind_raw} observation {oid} has no endTime (it never finished)")
        end = start
    name = _text(obs, "name")
    slim = {k: obs.get(k) for k in USAGE_KEYS}  # numbers and the model only: no content is kept
    return TreeSpan(
        trace=tid,
        id=oid,
        parent=_text(obs, "parentObservationId"),
        name=name or str(kind_raw),
        start=start,
        end=end,
        kind=kind,
        usage=(lambda nid: _call(slim, start, end, nid)) if kind == "call" else None,
        tool_name=name if kind == "tool" else None,
        agent_name=name if kind_raw == "AGENT" else None,
        session=_text(obs, "sessionId") or session,
        project=_text(obs, "environment") or environment,
        line=line,
        label=label,
    )


def _trace_keys(rec: dict) -> tuple[str | None, str | None, str | None]:
    """(session id, trace id, environment) of a trace holding its observations: the API's trace
    (``{"id", "sessionId", ..., "observations": [...]}``) or the UI's download
    (``{"trace": {"id", "sessionId", ...}, "observations": [...]}``)."""
    head = rec.get("trace") if isinstance(rec.get("trace"), dict) else rec
    return (
        _text(head, "sessionId") or _text(rec, "sessionId"),
        _text(head, "id") or _text(rec, "id"),
        _text(head, "environment"),
    )


def _which(obs, index: int, k: int, group) -> str:
    """Which record went wrong: its id, and its place in the file."""
    oid = obs.get("id") if isinstance(obs, dict) else None
    where = f"record {index}" + (f", observation {k} of its trace" if isinstance(group, list) else "")
    return where + (f" (id {oid!r})" if isinstance(oid, str) else "")


def read_langfuse(files: list[Path]) -> tuple[list[Session], list[FileReport]]:
    """Read Langfuse exports into sessions, with a report per file."""
    reports: list[FileReport] = []
    spans = SpanSet()
    for f in files:
        rep = FileReport(str(f), FORMAT)
        reports.append(rep)
        for line, index, rec in records(f, rep):
            group = rec.get("observations")
            items = group if isinstance(group, list) else [rec]
            session, trace, env = _trace_keys(rec) if isinstance(group, list) else (None, None, None)
            for k, obs in enumerate(items):
                try:
                    if not isinstance(obs, dict):
                        raise ValueError("not an object")
                    spans.add(tree_span(obs, line, session, trace, _which(obs, index, k, group), env), rep)
                except (ValueError, TypeError) as exc:
                    rep.bad_line(line, f"{_which(obs, index, k, group)}: {exc}")
        if rep.duplicates or rep.repeated:
            rep.notes.append(
                f"{rep.duplicates + rep.repeated} observations repeat an (traceId, id) already read: counted once"
            )
    return spans.sessions(FORMAT), reports

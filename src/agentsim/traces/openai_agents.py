"""OpenAI Agents SDK traces (exported traces and spans) as recorded sessions.

The Agents SDK exports a trace and its spans as JSON objects (what its ``BackendSpanExporter``
sends, or what a custom ``TracingProcessor`` writes with ``trace.export()`` / ``span.export()``)::

    {"object": "trace", "id": "trace_1", "workflow_name": "support", "group_id": "conv_7", "metadata": {}}
    {"object": "trace.span", "id": "span_2", "trace_id": "trace_1", "parent_id": "span_1",
     "started_at": "2026-11-02T09:00:01.000000+00:00", "ended_at": "2026-11-02T09:00:04.200000+00:00",
     "span_data": {"type": "generation", "model": "gpt-5",
                   "usage": {"input_tokens": 9200, "output_tokens": 350,
                             "input_tokens_details": {"cached_tokens": 8000},
                             "output_tokens_details": {"reasoning_tokens": 120}}},
     "error": null}

A file holds JSON Lines of these, an array, or a batch (``{"data": [...]}``).

* **Calls** are ``generation`` spans (Chat Completions models) and ``response`` spans (the Responses
  API); **tools** are ``function`` spans (named by ``span_data.name``); ``agent`` spans are the
  containers of an agent's calls and tools (``span_data.name`` is the agent); ``handoff``,
  ``guardrail``, ``custom`` and the other types are kept only as containers of calls
  (:mod:`agentsim.traces.span_tree`).
* **Usage** follows OpenAI's: ``input_tokens`` includes ``input_tokens_details.cached_tokens``;
  ``output_tokens`` includes ``output_tokens_details.reasoning_tokens`` (the details may also be
  lists of such objects, as the SDK's aggregate usage writes them: they are summed). Chat
  Completions names (``prompt_tokens``, ``completion_tokens``) are read too.
* **Model**: ``span_data.model`` (generation spans), else ``span_data.response.model`` or
  ``span_data.metadata.model``; a response span that names none counts as ``unknown`` (with a note:
  give the model with the replay config's ``*`` entry).
* **Sessions**: traces sharing a ``group_id`` (the SDK's conversation id) form one session; the
  project is the trace's ``workflow_name``.

``input``, ``output``, ``instructions`` and every other content field are never read into a record.
"""

from __future__ import annotations

from pathlib import Path

from agentsim.traces.record_files import records, when
from agentsim.traces.record_files import text_field as _text
from agentsim.traces.sessions import Call, FileReport, Session
from agentsim.traces.span_tree import RecordedUsage, SpanSet, TreeSpan, usage_call

__all__ = ["FORMAT", "looks_like", "read_openai_agents"]

FORMAT = "openai-agents"
CALL_TYPES = ("generation", "response")


def looks_like(obj: dict) -> bool:
    return isinstance(obj, dict) and (obj.get("object") in ("trace", "trace.span") or "span_data" in obj)


def _detail(details, key: str):
    """A count inside ``*_tokens_details``: an object, or a list of objects (summed)."""
    if details is None:
        return None
    if isinstance(details, dict):
        return details.get(key)
    if isinstance(details, list):
        values = [d.get(key) for d in details if isinstance(d, dict) and d.get(key) is not None]
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
            raise ValueError(f"{key} is not a number")
        return sum(values) if values else None
    raise ValueError("token details are neither an object nor a list")


def _model(data: dict) -> str | None:
    response = data.get("response") if isinstance(data.get("response"), dict) else {}
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    return _text(data, "model") or _text(response, "model") or _text(meta, "model")


def _call(data: dict, nid: str) -> tuple[Call, bool]:
    usage = data.get("usage")
    if usage is None:
        usage = {}
    if not isinstance(usage, dict):
        raise ValueError("usage is not an object")
    inp = usage.get("input_tokens", usage.get("prompt_tokens"))
    out = usage.get("output_tokens", usage.get("completion_tokens"))
    inp_d = usage.get("input_tokens_details", usage.get("prompt_tokens_details"))
    out_d = usage.get("output_tokens_details", usage.get("completion_tokens_details"))
    usage = RecordedUsage(
        input_tokens=inp,
        cache_read=_detail(inp_d, "cached_tokens"),
        cache_write=_detail(inp_d, "cache_write_tokens"),
        output=out,
        reasoning=_detail(out_d, "reasoning_tokens"),
    )
    return usage_call(nid, _model(data) or "unknown", "openai", usage)


def tree_span(span: dict, line: int | None, traces: dict[str, dict], label: str | None = None) -> TreeSpan:
    """The span as the session builder sees it; raises ValueError on a malformed one."""
    sid, tid = _text(span, "id"), _text(span, "trace_id")
    if sid is None or tid is None:
        raise ValueError("a span needs an id and a trace_id")
    data = span.get("span_data")
    if not isinstance(data, dict):
        raise ValueError("span_data is not an object")
    stype = data.get("type")
    kind = "call" if stype in CALL_TYPES else "tool" if stype == "function" else "other"
    start = when(span.get("started_at"), "started_at")
    if span.get("ended_at") is None:
        if kind != "other":
            raise ValueError(f"{stype} span {sid} has no ended_at (it never finished)")
        end = start
    else:
        end = when(span["ended_at"], "ended_at")
    trace = traces.get(tid, {})
    name = _text(data, "name")
    slim = {k: data.get(k) for k in ("usage", "model", "metadata")}
    if isinstance(data.get("response"), dict):
        slim["response"] = {"model": data["response"].get("model")}
    return TreeSpan(
        trace=tid,
        id=sid,
        parent=_text(span, "parent_id"),
        name=name or str(stype),
        start=start,
        end=end,
        kind=kind,
        usage=(lambda nid: _call(slim, nid)) if kind == "call" else None,
        tool_name=name if kind == "tool" else None,
        agent_name=name if stype == "agent" else None,
        session=_text(trace, "group_id"),
        project=_text(trace, "workflow_name"),
        line=line,
        label=label,
    )


def read_openai_agents(files: list[Path]) -> tuple[list[Session], list[FileReport]]:
    """Read Agents SDK exports (traces and spans, any order) into sessions, with a report per file."""
    reports: list[FileReport] = []
    traces: dict[str, dict] = {}
    pending: list[tuple[FileReport, int | None, int, dict]] = []
    for f in files:
        rep = FileReport(str(f), FORMAT)
        reports.append(rep)
        for line, index, obj in records(f, rep):
            if obj.get("object") == "trace":
                if isinstance(obj.get("id"), str):
                    traces.setdefault(obj["id"], {k: obj.get(k) for k in ("group_id", "workflow_name")})
                continue
            pending.append((rep, line, index, obj))
    spans = SpanSet()
    unknown: dict[str, int] = {}
    for rep, line, index, obj in pending:
        sid = obj.get("id")
        label = f"record {index}" + (f" (span {sid!r})" if isinstance(sid, str) else "")
        try:
            ts = tree_span(obj, line, traces, label)
        except (ValueError, TypeError) as exc:
            rep.bad_line(line, f"{label}: {exc}")
            continue
        if ts.kind == "call" and _model(obj.get("span_data") or {}) is None:
            unknown[rep.path] = unknown.get(rep.path, 0) + 1
        spans.add(ts, rep)
    for rep in reports:
        if rep.path in unknown:
            rep.notes.append(
                f"{unknown[rep.path]} call spans name no model (counted as 'unknown'); give it with the replay "
                "config's models.'*' entry or --speed-profile"
            )
        if rep.duplicates or rep.repeated:
            rep.notes.append(
                f"{rep.duplicates + rep.repeated} spans repeat a (trace_id, id) already read: counted once"
            )
    return spans.sessions(FORMAT), reports

"""LangSmith run exports as recorded sessions.

A LangSmith *run* (``Client.list_runs``, the runs API, or an export) is one timed step of a trace::

    {"id": "r-2", "trace_id": "r-1", "parent_run_id": "r-1", "name": "ChatAnthropic", "run_type": "llm",
     "dotted_order": "20261102T090000000000Zr-1.20261102T090001000000Zr-2",
     "start_time": "2026-11-02T09:00:01.000000", "end_time": "2026-11-02T09:00:04.200000",
     "first_token_time": "2026-11-02T09:00:01.900000",
     "prompt_tokens": 9200, "completion_tokens": 350, "total_tokens": 9550,
     "prompt_token_details": {"cache_read": 8000, "cache_creation": 0},
     "completion_token_details": {"reasoning": 0},
     "extra": {"metadata": {"ls_provider": "anthropic", "ls_model_name": "claude-sonnet-4-5",
                            "thread_id": "conversation-7"}}, "status": "success", ...}

A file holds an array of runs, a page (``{"runs": [...]}``), or JSON Lines of either.

* **Calls** are ``llm`` runs; **tools** are ``tool`` runs; ``chain``, ``retriever``, ``prompt``,
  ``parser`` and ``embedding`` runs with calls or tools below them are containers
  (:mod:`agentsim.traces.span_tree`). The tree comes from ``parent_run_id`` (or the last
  ``parent_run_ids`` entry), else from ``dotted_order`` (``<start>Z<id>.<start>Z<id>...``: the
  segment before the run's own names its parent, the first the trace).
* **Usage** follows LangChain's ``usage_metadata``: ``prompt_tokens`` counts every input token,
  cached included (when it is smaller than the cache reads and writes, they are added back, with a
  note); ``prompt_token_details.cache_read`` / ``cache_creation`` (and ``ephemeral_1h_input_tokens``)
  are cache reads and writes; ``completion_tokens`` includes ``completion_token_details.reasoning``.
  A run the server has not summed (a merged create + update, a client-side export) has no
  ``prompt_tokens``: its ``outputs.usage_metadata`` (or ``extra.metadata.usage_metadata``:
  ``input_tokens``, ``output_tokens``, ``input_token_details.cache_read``...) is read instead; a call
  with neither is counted, flagged and noted, never priced as $0.
* **TTFT** = ``first_token_time - start_time`` (recorded for streamed calls).
* **Model and provider**: ``extra.metadata.ls_model_name`` (else ``extra.invocation_params.model``)
  and ``ls_provider``.
* **Sessions** are LangSmith *threads*: runs sharing ``extra.metadata.thread_id`` (or ``session_id``,
  ``conversation_id``) form one session; otherwise one trace is one. The project is the run's
  ``session_name`` when the export has it.

``inputs``, ``outputs``, ``events``, ``error`` and every other content field are never read into a
record. Times without a zone (LangSmith writes UTC) are UTC.
"""

from __future__ import annotations

from pathlib import Path

from agentsim.traces.record_files import records, when
from agentsim.traces.record_files import text_field as _text
from agentsim.traces.sessions import Call, FileReport, Session
from agentsim.traces.span_tree import RecordedUsage, SpanSet, TreeSpan, usage_call

__all__ = ["FORMAT", "looks_like", "read_langsmith"]

FORMAT = "langsmith"
RUN_TYPES = ("llm", "chain", "tool", "retriever", "prompt", "parser", "embedding")
THREAD_KEYS = ("thread_id", "session_id", "conversation_id")
USAGE_KEYS = ("prompt_tokens", "completion_tokens", "prompt_token_details", "completion_token_details")
DETAIL_KEYS = ("input_token_details", "output_token_details")
DETAILS = ("cache_read", "cache_creation", "ephemeral_1h_input_tokens", "reasoning")


def looks_like(obj: dict) -> bool:
    return isinstance(obj, dict) and "run_type" in obj and "start_time" in obj


def _dict(d: dict, key: str, where: str) -> dict:
    v = d.get(key)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise ValueError(f"{where}{key} is not an object")
    return v


def _dotted(order: str | None) -> tuple[str | None, str | None]:
    """(trace id, parent id) named by a dotted_order: each segment is ``<time>Z<run id>``."""
    if not order:
        return None, None
    ids = [seg.partition("Z")[2] or None for seg in order.split(".")]
    return ids[0], (ids[-2] if len(ids) >= 2 else None)


def _usage_metadata(run: dict) -> dict | None:
    """The numbers of a LangChain/LangSmith ``usage_metadata`` (``input_tokens``, ``output_tokens``,
    ``input_token_details``, ``output_token_details``) where a run that the server has not summed
    (a merged create + update, a client-side export) carries it: ``outputs.usage_metadata`` or
    ``extra.metadata.usage_metadata``; None when neither holds one."""
    outputs = run.get("outputs") if isinstance(run.get("outputs"), dict) else {}
    meta = _dict(_dict(run, "extra", ""), "metadata", "extra.")
    for um in (outputs.get("usage_metadata"), meta.get("usage_metadata")):
        if isinstance(um, dict) and (um.get("input_tokens") is not None or um.get("output_tokens") is not None):
            keep = ("input_tokens", "output_tokens")
            details = {k: um.get(k) if isinstance(um.get(k), dict) else {} for k in DETAIL_KEYS}
            return {**{k: um.get(k) for k in keep}, **{k: {n: d.get(n) for n in DETAILS} for k, d in details.items()}}
    return None


def _call(run: dict, start: float, end: float, nid: str) -> tuple[Call, bool]:
    extra = _dict(run, "extra", "")
    meta = _dict(extra, "metadata", "extra.")
    params = _dict(extra, "invocation_params", "extra.")
    model = _text(meta, "ls_model_name") or _text(params, "model") or _text(params, "model_name") or "unknown"
    um = run.get("usage_metadata")
    if run.get("prompt_tokens") is None and run.get("completion_tokens") is None and isinstance(um, dict):
        run = {
            **run,
            "prompt_tokens": um.get("input_tokens"),
            "completion_tokens": um.get("output_tokens"),
            "prompt_token_details": um.get("input_token_details"),
            "completion_token_details": um.get("output_token_details"),
        }
    prompt = _dict(run, "prompt_token_details", "")
    completion = _dict(run, "completion_token_details", "")
    ttft = None
    if run.get("first_token_time") is not None:
        first = when(run["first_token_time"], "first_token_time")
        if first < start or first > end + 1e-3:
            raise ValueError("first_token_time lies outside the run's start and end")
        ttft = min(first, end) - start
    write_1h = prompt.get("ephemeral_1h_input_tokens")
    usage = RecordedUsage(
        input_tokens=run.get("prompt_tokens"),
        cache_read=prompt.get("cache_read"),
        cache_write=prompt.get("cache_creation"),
        cache_write_1h=write_1h,
        output=run.get("completion_tokens"),
        reasoning=completion.get("reasoning"),
        ttft=ttft,
    )
    return usage_call(nid, model, _text(meta, "ls_provider"), usage)


def tree_span(run: dict, line: int | None, label: str | None = None) -> TreeSpan:
    """The run as the session builder sees it; raises ValueError on a malformed one."""
    rid = _text(run, "id")
    if rid is None:
        raise ValueError("a run needs an id")
    dotted_trace, dotted_parent = _dotted(_text(run, "dotted_order"))
    parents = run.get("parent_run_ids")
    parent = _text(run, "parent_run_id") or (
        parents[-1] if isinstance(parents, list) and parents and isinstance(parents[-1], str) else dotted_parent
    )
    trace = _text(run, "trace_id") or dotted_trace or (rid if parent is None else None)
    if trace is None:
        raise ValueError("a child run needs a trace_id or a dotted_order to name its trace")
    run_type = run.get("run_type")
    start = when(run.get("start_time"), "start_time")
    kind = {"llm": "call", "tool": "tool"}.get(run_type, "other")
    if run.get("end_time") is None:
        if kind != "other":
            raise ValueError(f"{run_type} run {rid} has no end_time (it never finished)")
        end = start
    else:
        end = when(run["end_time"], "end_time")
    meta = _dict(_dict(run, "extra", ""), "metadata", "extra.")
    name = _text(run, "name")
    slim = {k: run.get(k) for k in (*USAGE_KEYS, "first_token_time")}
    slim["usage_metadata"] = _usage_metadata(run) if kind == "call" else None
    slim["extra"] = {
        "metadata": {k: meta.get(k) for k in ("ls_model_name", "ls_provider")},
        "invocation_params": _model_params(run),
    }
    return TreeSpan(
        trace=trace,
        id=rid,
        parent=parent,
        name=name or str(run_type),
        start=start,
        end=end,
        kind=kind,
        usage=(lambda nid: _call(slim, start, end, nid)) if kind == "call" else None,
        tool_name=name if kind == "tool" else None,
        agent_name=None,
        session=next((str(meta[k]) for k in THREAD_KEYS if isinstance(meta.get(k), str | int) and meta.get(k)), None),
        project=_text(run, "session_name"),
        line=line,
        label=label,
    )


def _model_params(run: dict) -> dict:
    params = _dict(_dict(run, "extra", ""), "invocation_params", "extra.")
    return {k: params.get(k) for k in ("model", "model_name")}


def read_langsmith(files: list[Path]) -> tuple[list[Session], list[FileReport]]:
    """Read LangSmith run exports into sessions, with a report per file."""
    reports: list[FileReport] = []
    spans = SpanSet()
    for f in files:
        rep = FileReport(str(f), FORMAT)
        reports.append(rep)
        for line, index, run in records(f, rep):
            rid = run.get("id")
            label = f"record {index}" + (f" (run {rid!r})" if isinstance(rid, str) else "")
            try:
                spans.add(tree_span(run, line, label), rep)
            except (ValueError, TypeError) as exc:
                rep.bad_line(line, f"{label}: {exc}")
        if rep.duplicates or rep.repeated:
            rep.notes.append(f"{rep.duplicates + rep.repeated} runs repeat a (trace_id, id) already read: counted once")
    return spans.sessions(FORMAT), reports

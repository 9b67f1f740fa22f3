"""Per-request measurements from OpenTelemetry GenAI spans (OTLP JSON).

A model call traced with the GenAI semantic conventions is a span whose
attributes give the model (``gen_ai.request.model`` / ``gen_ai.response.model``),
the tokens (``gen_ai.usage.input_tokens``, which *includes* cached tokens,
``gen_ai.usage.cache_read.input_tokens``, ``gen_ai.usage.output_tokens``) and the
time to the first streamed chunk (``gen_ai.response.time_to_first_chunk``,
seconds). The span's start and end give the end-to-end latency. Older and newer
attribute names are both accepted (see :data:`agentsim.traces.otlp.ALIASES`).

Spans that are not model calls (tools, agents, HTTP) are skipped: a span counts
as a model call when its operation is a chat/completion/generation, or when it
reports output tokens. A span with error status (or an ``error.type``
attribute) is a failed request.
"""

from __future__ import annotations

from pathlib import Path

from agentsim.traces.measurements import Rows, epoch_date, fail, read_text, require_somewhere
from agentsim.traces.otlp import attr, read_otlp

__all__ = ["MODEL_CALL_OPERATIONS", "read_genai_spans"]

MODEL_CALL_OPERATIONS = ("chat", "text_completion", "generate_content", "completion")


def _num(v):
    if v is None or isinstance(v, bool):
        return None
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def read_genai_spans(path: Path) -> Rows:
    file = str(path)
    if not Path(path).exists():
        raise fail(file, "no such file", "check the path")
    read_text(path)  # not UTF-8, a folder, unreadable: the same message as every other format
    unit_notes: list[str] = []
    spans, problems = read_otlp(path, unit_notes)
    if problems:
        line, message = problems[0]
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise fail(file, f"not OTLP JSON: {message}{more}", "the file looks truncated or is not OTLP JSON", line=line)
    rows = []
    for sp in spans:
        op = attr(sp, "operation")
        if op not in MODEL_CALL_OPERATIONS and attr(sp, "output_tokens") is None:
            continue
        failed = sp.status == "error" or "error.type" in sp.attributes
        ttft = _num(attr(sp, "ttft"))
        rows.append(
            {
                "ttft_s": ttft,
                "latency_s": sp.duration_s,
                "input_tokens": _num(attr(sp, "input_tokens")),
                "cached_input_tokens": _num(attr(sp, "cache_read_tokens")),
                "output_tokens": _num(attr(sp, "output_tokens")),
                "start_s": sp.start_s,
                "ok": not failed,
                "error": (str(sp.attributes.get("error.type") or "span status error")) if failed else None,
                "model": attr(sp, "response_model") or attr(sp, "request_model"),
                "place": f"span {sp.span_id}" + (f" (line {sp.source_line})" if sp.source_line else ""),
            }
        )
    if not rows:
        raise fail(
            file,
            f"none of the {len(spans)} spans is a GenAI model call",
            "expected spans with gen_ai.operation.name = chat (or gen_ai.usage.output_tokens)",
        )
    ok_rows = [r for r in rows if r["ok"]]
    require_somewhere(
        ok_rows,
        "ttft_s",
        file,
        "gen_ai.response.time_to_first_chunk",
        "TTFT is only recorded for streamed calls by instrumentations that support it",
    )
    require_somewhere(ok_rows, "output_tokens", file, "gen_ai.usage.output_tokens")
    date = epoch_date(r["start_s"] for r in rows)
    return Rows(
        rows,
        "otel",
        file,
        date=date,
        date_note="span start times" if date else None,
        notes=("gen_ai.usage.input_tokens includes cached tokens; uncached = input - cache_read", *unit_notes),
    )

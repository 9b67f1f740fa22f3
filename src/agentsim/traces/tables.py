"""Two plain formats: a CSV with documented columns, and the JSONL of ``agentsim measure``.

**CSV** (one row per request, a header line naming the columns; the unit is
part of the name, so ``ttft_ms`` and ``ttft_s`` are both understood):

==============================  ==================================================================
``ttft_s`` | ``ttft_ms``        time to first token (required)
``output_tokens``               generated tokens (required)
``latency_s`` | ``latency_ms``  end-to-end latency; or give one of the next three instead
``decode_s`` | ``decode_ms``    time from the first to the last token
``itl_s`` | ``itl_ms``          mean inter-token latency, first token *excluded*
``tps``                         output tokens / decode time
``input_tokens``                prompt tokens, cached ones included (needed for the prefill fit)
``cached_input_tokens``         prompt tokens read from a prompt cache
``ok``                          true/false (1/0, yes/no); default: true unless ``error``/``status`` say otherwise
``error``                       error text; a non-empty value marks a failed request
``status``                      HTTP status; 400 and above marks a failed request
``start_s``                     when the request was sent, Unix seconds
``model``                       model name
==============================  ==================================================================

Other columns are ignored. A time column without a unit (``ttft``, ``latency``)
is an error rather than a guess.

**agentsim measure JSONL**: a first line ``{"agentsim_measure": 1, "kind":
"run", ...}`` with the settings, then one line per finished request
``{"agentsim_measure": 1, "kind": "request", "ttft_s", "latency_s", "gaps_s",
"input_tokens", "cached_input_tokens", "output_tokens", "status", "ok",
"error", "start_s", "model", ...}`` (see :mod:`agentsim.measure.probe`); files written since
issue 28 add ``events_s`` (each output event's arrival) and, when the server counted them,
``event_tokens`` (tokens per event), which is read too. Older files read as before.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from agentsim.traces.measurements import (
    Rows,
    epoch_date,
    fail,
    number,
    parse_json_lines,
    read_text,
    require_somewhere,
)

__all__ = ["CSV_COLUMNS", "read_csv", "read_measure_jsonl"]

# column -> (field in the common table, factor to seconds or None for plain numbers)
CSV_COLUMNS: dict[str, tuple[str, float | None]] = {
    "ttft_s": ("ttft_s", 1.0),
    "ttft_ms": ("ttft_s", 1e-3),
    "latency_s": ("latency_s", 1.0),
    "latency_ms": ("latency_s", 1e-3),
    "decode_s": ("decode_s", 1.0),
    "decode_ms": ("decode_s", 1e-3),
    "itl_s": ("itl_s", 1.0),
    "itl_ms": ("itl_s", 1e-3),
    "tps": ("tps", None),
    "input_tokens": ("input_tokens", None),
    "cached_input_tokens": ("cached_input_tokens", None),
    "output_tokens": ("output_tokens", None),
    "start_s": ("start_s", 1.0),
}
_UNITLESS = ("ttft", "latency", "e2e_latency", "end_to_end_latency", "decode", "itl", "tpot", "start")
_CSV_HINT = (
    "a field over 128 KB or a stray quote usually means this is not a measurements table, or a quote is "
    "never closed: check the file at that line"
)
_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f"}


def read_csv(path: Path) -> Rows:
    file = str(path)
    text = read_text(path)
    if "\0" in text:
        raise fail(file, "the file holds NUL bytes: it is not a text CSV", "give the CSV export, not a binary file")
    reader = csv.DictReader(io.StringIO(text))
    lower, fields = _csv_columns(file, reader)
    factor = {CSV_COLUMNS[c][0]: CSV_COLUMNS[c][1] for c in CSV_COLUMNS if c in lower}
    rows = []
    records = iter(reader)
    while True:
        try:
            rec = next(records)
        except StopIteration:
            break
        except csv.Error as exc:
            raise fail(file, f"not a readable CSV: {exc}", _CSV_HINT, line=reader.line_num + 1) from None
        rows.append(_csv_row(file, rec, reader.line_num, lower, fields, factor))
    if not rows:
        raise fail(file, "the CSV has a header but no rows")
    date = epoch_date(r.get("start_s") for r in rows)
    return Rows(rows, "csv", file, date=date, date_note="start_s" if date else None)


def _csv_columns(file: str, reader: csv.DictReader) -> tuple[dict[str, str], dict[str, str]]:
    """The header: lower-cased name -> column, and common-table field -> column; errors name line 1."""
    try:
        header = [h.strip() for h in (reader.fieldnames or [])]
    except csv.Error as exc:
        raise fail(file, f"not a readable CSV: {exc}", _CSV_HINT, line=reader.line_num or 1) from None
    if not header:
        raise fail(file, "the CSV has no header line", "the first line names the columns, e.g. ttft_s,output_tokens")
    reader.fieldnames = header
    lower: dict[str, str] = {}
    for i, h in enumerate(header, start=1):
        if h.lower() in lower and h.lower():
            first = [k.lower() for k in header].index(h.lower()) + 1
            raise fail(file, f"column '{h}' appears twice (columns {first} and {i})", "keep one of them", line=1)
        lower[h.lower()] = h
    for name in _UNITLESS:
        if name in lower:
            raise fail(file, f"column '{lower[name]}' has no unit", f"rename it {name}_s or {name}_ms", line=1)
    fields: dict[str, str] = {}
    for col, (field, _) in CSV_COLUMNS.items():
        if col in lower:
            if field in fields:
                raise fail(
                    file,
                    f"columns '{fields[field]}' and '{lower[col]}' give the same quantity",
                    "keep one of them",
                    line=1,
                )
            fields[field] = lower[col]
    for need, options in (("ttft_s", "ttft_s or ttft_ms"), ("output_tokens", "output_tokens")):
        if need not in fields:
            raise fail(file, f"missing column {options}", "see docs/measure.md for the column names", line=1)
    if not {"latency_s", "decode_s", "itl_s", "tps"} & set(fields):
        raise fail(
            file,
            "no column gives the time after the first token",
            "add latency_s/latency_ms, decode_s/decode_ms, itl_s/itl_ms or tps",
            line=1,
        )
    return lower, fields


def _csv_row(file: str, rec: dict, line: int, lower: dict, fields: dict, factor: dict) -> dict:
    """One record as a raw row: numbers in seconds, ok and error from the error, status and ok columns."""
    row: dict = {"place": f"line {line}"}
    for field, col in fields.items():
        raw = (rec.get(col) or "").strip()
        if raw == "":
            row[field] = None
            continue
        try:
            x = float(raw)
        except ValueError:
            raise fail(file, f"column {col}: expected a number, got {raw!r}", line=line) from None
        f = factor[field]
        row[field] = x * f if f is not None else x
    error = (rec.get(lower["error"]) or "").strip() if "error" in lower else ""
    status = (rec.get(lower["status"]) or "").strip() if "status" in lower else ""
    ok = not error
    if status:
        try:
            if float(status) >= 400:
                ok, error = False, error or f"HTTP {status}"
        except ValueError:
            raise fail(file, f"column status: expected an HTTP status, got {status!r}", line=line) from None
    if "ok" in lower:
        flag = (rec.get(lower["ok"]) or "").strip().lower()
        if flag in _FALSE:
            ok, error = False, error or "failed"
        elif flag not in _TRUE and flag != "":
            raise fail(file, f"column ok: expected true or false, got {flag!r}", line=line)
    row.update(ok=ok, error=error or None)
    if "model" in lower:
        row["model"] = (rec.get(lower["model"]) or "").strip() or None
    return row


def read_measure_jsonl(path: Path) -> Rows:
    file = str(path)
    rows = []
    run: dict = {}
    for line, rec in parse_json_lines(path, read_text(path)):
        if not isinstance(rec, dict) or "agentsim_measure" not in rec:
            raise fail(file, "not a line written by agentsim measure", line=line)
        if rec.get("kind") == "run":
            run = rec
            continue
        where = lambda key, line=line: (line, (key,))  # noqa: E731
        gaps, counts = rec.get("gaps_s"), rec.get("event_tokens")
        for key, value in (("gaps_s", gaps), ("event_tokens", counts)):
            if value is not None and not isinstance(value, list):
                raise fail(file, f"{key} must be a list", line=line, path=(key,))
        rows.append(
            {
                "ttft_s": number(rec.get("ttft_s"), file, *where("ttft_s")),
                "latency_s": number(rec.get("latency_s"), file, *where("latency_s")),
                "gaps_s": [number(g, file, *where("gaps_s")) for g in gaps] if gaps else None,
                "input_tokens": number(rec.get("input_tokens"), file, *where("input_tokens")),
                "cached_input_tokens": number(rec.get("cached_input_tokens"), file, *where("cached_input_tokens")),
                "output_tokens": number(rec.get("output_tokens"), file, *where("output_tokens")),
                "start_s": number(rec.get("start_s"), file, *where("start_s")),
                "headers_s": number(rec.get("headers_s"), file, *where("headers_s")),
                "event_tokens": [number(c, file, *where("event_tokens")) for c in counts] if counts else None,
                "ok": bool(rec.get("ok")),
                "error": rec.get("error"),
                "model": rec.get("model") or run.get("model"),
                "place": f"line {line}",
            }
        )
    if not rows:
        raise fail(file, "no measured requests in the file", "was `agentsim measure` interrupted before any finished?")
    require_somewhere([r for r in rows if r["ok"]], "ttft_s", file, "ttft_s")
    date = epoch_date(r["start_s"] for r in rows)
    return Rows(rows, "measure", file, date=date, date_note="request start times" if date else None)

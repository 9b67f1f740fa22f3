"""Per-request speed measurements in one table, whatever tool recorded them.

Benchmark tools disagree on units (seconds or milliseconds) and on definitions
(does "inter-token latency" include the time to the first token?). Every
importer in this package turns its file into *rows* of raw, unit-normalised
fields, and :func:`measurement_table` turns rows into the common table, one row
per request, with these columns (:mod:`agentsim.traces.measurement_files` tells a file's format
and reads it with its importer):

============================  ================================================================
``ttft_s``                    seconds from sending the request to the first output token
``input_tokens``              prompt tokens (cached ones included)
``cached_input_tokens``       prompt tokens read from a prompt cache (NaN when unknown)
``uncached_input_tokens``     ``input_tokens - cached_input_tokens`` (all of them when unknown)
``output_tokens``             generated tokens (usage block, or the tool's own count)
``latency_s``                 end-to-end seconds, request sent to response complete
``decode_s``                  ``latency_s - ttft_s``: time spent after the first token
``tps``                       ``output_tokens / decode_s``
``itl_s``                     ``decode_s / (output_tokens - 1)``: mean gap between tokens, first excluded
``ok``                        the request completed without an error
``error``                     the error (text), or None
``usable``                    ok, and every quantity the fits need is present and positive
``reason``                    why a row is not usable (None when it is)
``start_s``                   when the request was sent (Unix seconds, or the tool's own clock)
``model``                     model name, when the file says
``source_format``             which importer read it
``source_file``, ``place``    where the row came from (for messages)
``gaps_s``                    every inter-token gap (list), when the file has them
``headers_s``                 seconds from sending the request to the response headers (NaN when unknown)
``event_tokens``              tokens in each delivery (list, one per gap + 1), when the file records them
============================  ================================================================

**Why ``tps = output_tokens / decode_s``.** agentsim simulates a call as
``ttft + output / output_tps``; with this definition the simulated duration of
a measured request equals its measured end-to-end latency. The per-gap rate
after the first token is ``(output_tokens - 1) / decode_s = 1 / itl_s``; the two
differ by the factor ``n / (n - 1)`` only.

A file that cannot be read (not the format, truncated JSON, a field that no
record has, an unknown unit) raises :class:`~agentsim.model.loading.ScenarioError`
naming the file and the place. A record that lacks a value, or failed, is kept
as a row with ``ok``/``usable`` false and a ``reason``: errors and incomplete
requests are counted, and excluded from fits.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from agentsim.model import domain
from agentsim.model.input_files import InputError, read_bounded
from agentsim.model.loading import ErrorItem, ScenarioError

__all__ = [
    "COLUMNS",
    "FORMATS",
    "Rows",
    "measurement_table",
    "rows_summary",
]

COLUMNS = (
    "ttft_s",
    "input_tokens",
    "cached_input_tokens",
    "uncached_input_tokens",
    "output_tokens",
    "latency_s",
    "decode_s",
    "tps",
    "itl_s",
    "ok",
    "error",
    "usable",
    "reason",
    "start_s",
    "model",
    "source_format",
    "source_file",
    "place",
    "gaps_s",
    "headers_s",
    "event_tokens",
)

#: the formats ``--format`` accepts (``auto`` detects one of these from the content)
FORMATS = ("llmperf", "vllm", "guidellm", "aiperf", "otel", "csv", "measure")

# Seconds per unit, for the unit names the tools write.
TIME_UNITS = {
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0, "seconds": 1.0,
    "ms": 1e-3, "msec": 1e-3, "millisecond": 1e-3, "milliseconds": 1e-3,
    "us": 1e-6, "µs": 1e-6, "usec": 1e-6, "microsecond": 1e-6, "microseconds": 1e-6,
    "ns": 1e-9, "nsec": 1e-9, "nanosecond": 1e-9, "nanoseconds": 1e-9,
}  # fmt: skip

# A TTFT whose median is above this many seconds is almost surely in another unit.
TTFT_IMPLAUSIBLE_S = 120.0


@dataclass
class Rows:
    """What an importer found in one file: raw rows, plus file-level facts."""

    rows: list[dict[str, Any]]
    source_format: str
    file: str
    date: dt.date | None = None  # measurement date, when the file says
    date_note: str | None = None  # where that date comes from
    notes: tuple[str, ...] = ()  # definitions reconciled, fields substituted


def fail(file: str | Path, message: str, hint: str = "", line: int | None = None, path: tuple = ()) -> ScenarioError:
    """The error to raise for a file that cannot be read as measurements."""
    return ScenarioError([ErrorItem(str(file), line, tuple(path), message, hint)])


def read_text(path: str | Path, kind: str = "measurement") -> str:
    """The text of a measurement file, bounded in size (:mod:`agentsim.model.input_files`)."""
    try:
        return read_bounded(path, kind)
    except InputError as exc:
        raise fail(path, exc.message, exc.hint) from None
    except FileNotFoundError:
        raise fail(path, "no such file", "check the path") from None
    except UnicodeDecodeError as exc:
        raise fail(
            path,
            f"not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})",
            "give the measurement tool's JSON, JSON Lines or CSV output, not a binary or compressed file",
        ) from None
    except (IsADirectoryError, PermissionError, OSError) as exc:
        raise fail(path, f"cannot read the file: {exc}") from None


def parse_json(path: str | Path, text: str) -> Any:
    """The JSON document of a file, or an error naming the line and column where it breaks."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        last_line = len(text.rstrip().splitlines())
        at_end = exc.pos >= len(text.rstrip()) or exc.lineno >= last_line
        hint = "the file looks truncated" if at_end else "fix the JSON at that place"
        raise fail(path, f"not valid JSON at column {exc.colno}: {exc.msg}", hint, line=exc.lineno) from None
    except RecursionError:
        raise fail(path, "JSON nested too deeply to read", _DEEP_HINT) from None


_DEEP_HINT = "no measurement tool writes arrays or objects nested this deep: the file is corrupt"


def parse_json_lines(path: str | Path, text: str) -> list[tuple[int, Any]]:
    """``(line number, document)`` for every non-empty line of a JSON Lines file."""
    out = []
    lines = text.splitlines()
    for i, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            out.append((i, json.loads(raw)))
        except json.JSONDecodeError as exc:
            last = all(not rest.strip() for rest in lines[i:])
            hint = "the last line looks truncated" if last else "every line must be one JSON document"
            raise fail(path, f"not valid JSON at column {exc.colno}: {exc.msg}", hint, line=i) from None
        except RecursionError:
            raise fail(path, "JSON nested too deeply to read", _DEEP_HINT, line=i) from None
    return out


def seconds(value: Any, unit: str, file: str | Path, line: int | None, path: tuple) -> float | None:
    """``value`` in ``unit`` converted to seconds (None stays None); unknown units are an error."""
    if value is None:
        return None
    factor = TIME_UNITS.get(str(unit).strip().lower())
    if factor is None:
        raise fail(
            file,
            f"unknown time unit '{unit}'",
            "expected one of " + ", ".join(sorted({"s", "ms", "us", "ns"})),
            line=line,
            path=path,
        )
    return number(value, file, line, path) * factor


def number(value: Any, file: str | Path, line: int | None, path: tuple) -> float | None:
    """A finite float from a JSON value (None stays None); text or booleans are an error."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(file, f"expected a number, got {value!r}", line=line, path=path)
    return float(value)


def epoch_date(start_s: Iterable[float | None]) -> dt.date | None:
    """The UTC date of the earliest start time, when the times are Unix seconds (after 2001)."""
    vals = [s for s in start_s if s is not None and domain.problem("timestamp", s) is None and s > 1e9]
    if not vals:
        return None
    return dt.datetime.fromtimestamp(min(vals), tz=dt.UTC).date()


def require_somewhere(rows: list[dict], key: str, file: str | Path, what: str, hint: str = "") -> None:
    """Error when no record of the file has ``key`` (a field missing everywhere is a format problem)."""
    if rows and all(r.get(key) is None for r in rows):
        raise fail(file, f"no record has {what}", hint)


# --------------------------------------------------------------------------- the common table


# The quantity kind of every raw number (agentsim.model.domain): a value outside its kind's range is corrupt,
# or in the wrong unit, and is refused at its place.
FIELD_KINDS = {
    "ttft_s": "duration",
    "latency_s": "duration",
    "decode_s": "duration",
    "itl_s": "duration",
    "gaps_s": "duration",
    "headers_s": "duration",
    "event_tokens": "tokens",
    "tps": "speed",
    "input_tokens": "tokens",
    "cached_input_tokens": "tokens",
    "output_tokens": "tokens",
    "start_s": "timestamp",
}


def check_plausible(found: Rows) -> None:
    """Every number within its kind's range (no 1e308 tokens, no infinite seconds, no start time in year
    11476); else an error at its place. NaN is how some tools write "not measured": it stays missing."""
    for raw in found.rows:
        for key, kind in FIELD_KINDS.items():
            v = raw.get(key)
            for x in v if isinstance(v, list) else [v]:
                if x is None or (isinstance(x, float) and math.isnan(x)):
                    continue
                msg = domain.problem(kind, x)
                if msg is None or (kind == "tokens" and x >= 0 and domain.problem(kind, round(x)) is None):
                    continue  # a tool's averaged count (12.5 tokens) is kept: it is measured, not declared
                place = str(raw.get("place") or "")
                line = int(place[5:]) if place.startswith("line ") and place[5:].isdigit() else None
                where = "" if line is not None else f"{place}: " if place else ""
                raise fail(
                    found.file,
                    f"{where}{key}: {msg}",
                    "the file is corrupt there, or the value is in another unit: fix or remove that record",
                    line=line,
                )


def measurement_table(found: Rows) -> pd.DataFrame:
    """The common table (see the module docstring) of one file's rows."""
    check_plausible(found)
    df = pd.DataFrame.from_records([_finish_row(raw) for raw in found.rows], columns=list(COLUMNS))
    df["source_format"] = found.source_format
    df["source_file"] = found.file
    for col in (
        "ttft_s",
        "input_tokens",
        "cached_input_tokens",
        "uncached_input_tokens",
        "output_tokens",
        "latency_s",
        "decode_s",
        "tps",
        "itl_s",
        "start_s",
        "headers_s",
    ):
        df[col] = pd.to_numeric(df[col], errors="coerce").astype("float64")
    df["ok"] = df["ok"].astype(bool)
    df["usable"] = df["usable"].astype(bool)
    _check_units(df, found.file)
    return df


def _finish_row(raw: dict) -> dict:
    """Derive the missing quantities of one row from the ones it has, and decide whether it is usable."""
    r = {c: raw.get(c) for c in COLUMNS}
    ttft, latency, decode, itl = r["ttft_s"], r["latency_s"], r["decode_s"], r["itl_s"]
    n_out = r["output_tokens"]
    gaps = r["gaps_s"]
    if decode is None and latency is not None and ttft is not None:
        decode = latency - ttft
    if decode is None and gaps:
        decode = float(math.fsum(gaps))
    if decode is None and itl is not None and n_out is not None:
        decode = itl * (n_out - 1)
    if decode is None and raw.get("tps") is not None and n_out is not None and raw["tps"] > 0:
        decode = n_out / raw["tps"]
    if latency is None and ttft is not None and decode is not None:
        latency = ttft + decode
    if decode is not None and n_out is not None and n_out >= 2:
        itl = decode / (n_out - 1)
    tps = n_out / decode if decode is not None and n_out is not None and decode > 0 else None
    inp, cached = r["input_tokens"], r["cached_input_tokens"]
    uncached = inp - (cached or 0) if inp is not None else None
    r.update(latency_s=latency, decode_s=decode, itl_s=itl, tps=tps, uncached_input_tokens=uncached)
    r["ok"] = bool(raw.get("ok", raw.get("error") in (None, "")))
    if r["error"] == "":
        r["error"] = None
    r["reason"] = _unusable_reason(r)
    r["usable"] = r["reason"] is None
    return r


def _unusable_reason(r: dict) -> str | None:
    if not r["ok"]:
        return "error: " + str(r["error"] or "failed")
    if r["ttft_s"] is None or not math.isfinite(r["ttft_s"]) or r["ttft_s"] <= 0:
        return "incomplete: no time to first token"
    if r["output_tokens"] is None or math.isnan(r["output_tokens"]):  # NaN: a tool's "not measured"
        return "incomplete: no output token count"
    if r["output_tokens"] < 2:
        return "incomplete: fewer than 2 output tokens (no decode time)"
    if r["decode_s"] is None:
        return "incomplete: no end-to-end latency or inter-token latency"
    if not r["decode_s"] > 0:
        return "incomplete: no time between first and last token"
    if r["input_tokens"] is not None and r["input_tokens"] < 0:
        return "incomplete: negative input token count"
    return None


def _check_units(df: pd.DataFrame, file: str) -> None:
    """Catch values in the wrong unit: a TTFT of minutes, or TTFT above the end-to-end latency."""
    ok = df[df["ok"] & df["ttft_s"].notna()]
    if ok.empty:
        return
    med = float(ok["ttft_s"].median())
    if med > TTFT_IMPLAUSIBLE_S:
        raise fail(
            file,
            f"the median time to first token is {med:,.0f} s, which is implausible",
            "the values look like milliseconds where seconds are expected (in a CSV, name the column ttft_ms)",
        )
    both = ok[ok["latency_s"].notna()]
    if len(both):
        bad = int((both["ttft_s"] > both["latency_s"] * (1 + 1e-6) + 1e-9).sum())
        if bad > len(both) / 2:
            raise fail(
                file,
                f"the time to first token exceeds the end-to-end latency in {bad} of {len(both)} requests",
                "the two are probably in different units (seconds vs milliseconds)",
            )


def rows_summary(df: pd.DataFrame) -> dict[str, Any]:
    """Counts of requests: total, failed, incomplete, usable, and the reasons rows were left out."""
    reasons = df.loc[~df["usable"], "reason"].fillna("unknown")
    reasons = reasons.str.replace(r"^error: .*", "error", regex=True)
    return {
        "requests": len(df),
        "failed": int((~df["ok"]).sum()),
        "incomplete": int((df["ok"] & ~df["usable"]).sum()),
        "usable": int(df["usable"].sum()),
        "excluded_because": {k: int(v) for k, v in sorted(reasons.value_counts().items())},
    }

"""Files of JSON records (observations, runs, spans) as exported by tracing tools.

Langfuse, LangSmith and the OpenAI Agents SDK export the same kind of file in a few shapes; every
reader accepts all of them:

* one JSON document: an array of records, or an object holding the array under one of a few keys
  (``data``, ``runs``, ``spans``, ``items``: an API page such as ``{"data": [...],
  "meta": {...}}``), or a single record;
* JSON Lines: one record per line, or one such page per line (a batch exporter's output).

:func:`records` yields ``(line, index, record)`` (``line`` is None in a single document; ``index`` is
the record's place in its array, 0 for a record alone) and counts what is not an object as corrupt
on the file's :class:`~agentsim.traces.sessions.FileReport`.
:func:`when` reads a timestamp (ISO 8601, or epoch seconds or milliseconds) and refuses times that
name no date between 1970 and 9999.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentsim.traces.sessions import FileReport, json_lines, parse_timestamp

__all__ = ["LIST_KEYS", "MAX_UNIX_S", "records", "text_field", "when"]

LIST_KEYS = ("data", "runs", "spans", "items")  # not "observations": a Langfuse trace holds those itself
MAX_UNIX_S = 253_402_300_799.0  # 9999-12-31T23:59:59Z: the last instant a date can name


def _items(doc: Any) -> list | None:
    """The records of a page (``{"data": [...]}``) or array, or None when ``doc`` is one record."""
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        for key in LIST_KEYS:
            if isinstance(doc.get(key), list):
                return doc[key]
    return None


def records(path: Path, report: FileReport) -> Iterator[tuple[int | None, int, dict]]:
    """Every record of a file in any of the shapes above (non-objects are counted as corrupt)."""
    text = Path(path).read_text(encoding="utf-8", errors="replace")
    stripped = text.strip()
    if not stripped:
        report.notes.append("the file is empty")
        return
    try:
        doc = json.loads(stripped)
    except (ValueError, RecursionError):
        doc = None
    if doc is not None:
        report.lines = text.count("\n") + 1
        yield from _each(_items(doc) if _items(doc) is not None else [doc], None, report)
        return
    for no, obj in json_lines(
        path, report, say_why=True
    ):  # a line that is not a JSON object is counted as corrupt there
        items = _items(obj)
        yield from _each(items if items is not None else [obj], no, report)


def _each(items: list, line: int | None, report: FileReport) -> Iterator[tuple[int | None, int, dict]]:
    for k, item in enumerate(items):
        if isinstance(item, dict):
            yield line, k, item
        else:
            report.bad_line(line, f"record {k} is not an object")


def text_field(d: dict, key: str) -> str | None:
    """``d[key]`` when it is a non-empty string, else None."""
    v = d.get(key)
    return v if isinstance(v, str) and v else None


def when(value: Any, what: str) -> float:
    """A timestamp as unix seconds: ISO 8601 text, or a number of epoch seconds (10^9..10^11) or
    milliseconds (10^12..10^14). Raises ValueError naming ``what``."""
    # domain: a moment between 1970 and 9999
    if isinstance(value, str):
        try:
            t = parse_timestamp(value)
        except (ValueError, TypeError):
            raise ValueError(f"{what} {value!r} is not an ISO 8601 time") from None
    elif isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        if 1e9 <= value < 1e11:
            t = float(value)
        elif 1e12 <= value < 1e14:
            t = value / 1000.0
        else:
            raise ValueError(f"{what} {value!r} is neither epoch seconds nor epoch milliseconds")
    else:
        raise ValueError(f"{what} {value!r} is not a time")
    if not 0.0 <= t <= MAX_UNIX_S:
        raise ValueError(f"{what} {value!r} is not a time between 1970 and 9999")
    return t

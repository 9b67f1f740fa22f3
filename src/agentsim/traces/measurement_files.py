"""Reading benchmark-result files: tell the format from the content, then use its importer.

:func:`read_file` reads one file (``fmt="auto"``: :func:`detect_format` judges from the content)
with the importer of its format (:mod:`~agentsim.traces.benchmarks` for llmperf, vLLM, GuideLLM and
AIPerf, :mod:`~agentsim.traces.genai_spans` for OpenTelemetry GenAI spans,
:mod:`~agentsim.traces.tables` for CSV and ``agentsim measure`` JSON Lines) and returns the common
per-request table of :mod:`agentsim.traces.measurements`; :func:`read_measurements` reads many.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from agentsim.traces import benchmarks, genai_spans, tables
from agentsim.traces.measurements import COLUMNS, FORMATS, Rows, fail, measurement_table, parse_json, read_text

__all__ = ["FORMATS", "detect_format", "read_file", "read_measurements"]


def _readers() -> dict[str, Callable[[Path], Rows]]:
    return {
        "llmperf": benchmarks.read_llmperf,
        "vllm": benchmarks.read_vllm,
        "guidellm": benchmarks.read_guidellm,
        "aiperf": benchmarks.read_aiperf,
        "otel": genai_spans.read_genai_spans,
        "csv": tables.read_csv,
        "measure": tables.read_measure_jsonl,
    }


def detect_format(path: str | Path) -> str:
    """Which of :data:`FORMATS` a file is, judged from its content."""
    text = read_text(path)
    stripped = text.lstrip()
    if not stripped:
        raise fail(path, "the file is empty")
    first = stripped.splitlines()[0].strip()
    doc = None
    if stripped[0] in "[{":
        try:
            doc = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            doc = None
        if doc is None:  # JSON Lines: judge by the first line
            try:
                doc = json.loads(first)
            except (json.JSONDecodeError, RecursionError):
                parse_json(path, text)  # raises with the place where the JSON breaks
        kind = _kind_of(doc)
        if kind:
            return kind
        raise fail(
            path,
            "cannot tell which benchmark tool wrote this JSON",
            "pass --format (one of " + ", ".join(FORMATS) + ")",
        )
    if "," in first and any(c.strip().lower().startswith("ttft") for c in first.split(",")):
        return "csv"
    raise fail(path, "cannot tell the format of this file", "pass --format (one of " + ", ".join(FORMATS) + ")")


def _kind_of(doc: Any) -> str | None:
    if (
        isinstance(doc, list)
        and doc
        and isinstance(doc[0], dict)
        and "ttft_s" in doc[0]
        and ("end_to_end_latency_s" in doc[0] or "number_output_tokens" in doc[0])
    ):
        return "llmperf"
    if isinstance(doc, dict):
        if "resourceSpans" in doc:
            return "otel"
        if "ttfts" in doc and ("itls" in doc or "output_lens" in doc):
            return "vllm"
        if isinstance(doc.get("benchmarks"), list):
            return "guidellm"
        if "agentsim_measure" in doc:
            return "measure"
        if isinstance(doc.get("metrics"), dict) and ("metadata" in doc or "error" in doc):
            return "aiperf"
    return None


def read_file(path: str | Path, fmt: str = "auto") -> tuple[pd.DataFrame, Rows]:
    """One file as the common table, with what its importer found (date, notes)."""
    path = Path(path)
    if fmt == "auto":
        fmt = detect_format(path)
    readers = _readers()
    if fmt not in readers:
        raise fail(path, f"unknown format '{fmt}'", "one of auto, " + ", ".join(FORMATS))
    found = readers[fmt](path)
    return measurement_table(found), found


def read_measurements(paths: Iterable[str | Path], fmt: str = "auto") -> pd.DataFrame:
    """All files as one common table (rows in file order, then record order)."""
    tables = [read_file(p, fmt)[0] for p in paths]
    if not tables:
        return pd.DataFrame(columns=list(COLUMNS))
    return pd.concat(tables, ignore_index=True)

"""Importers for the per-request files of four LLM serving benchmarks.

Each reader returns :class:`~agentsim.traces.measurements.Rows` in seconds and
tokens, with the tool's definitions reconciled to agentsim's (see
:mod:`agentsim.traces.measurements`):

* **llmperf** (``*_individual_responses.json``, a JSON list): ``ttft_s``,
  ``end_to_end_latency_s``, ``number_input_tokens``, ``number_output_tokens``,
  ``error_code``/``error_msg``. Its ``inter_token_latency_s`` is the sum of *all*
  token gaps, the first (= TTFT) included, divided by the output tokens, i.e.
  about end-to-end latency / output tokens: used only when the end-to-end
  latency is missing, as ``latency = inter_token_latency_s x output_tokens``.
* **vLLM** ``vllm bench serve --save-detailed`` (one JSON object of parallel
  arrays): ``input_lens``, ``output_lens``, ``ttfts`` and ``itls`` (a list of gaps
  per request, first token excluded; seconds), ``start_times``, ``errors``, and
  ``latencies``/``e2els`` where present (otherwise latency = TTFT + sum of gaps).
  Its TPOT excludes the first token, as agentsim's ``itl_s`` does.
* **GuideLLM** benchmark JSON (``{"benchmarks": [{"requests": {"successful":
  [...], "incomplete": [...], "errored": [...]}}]}``): per request
  ``time_to_first_token_ms``, ``inter_token_latency_ms`` (first token excluded),
  ``request_latency`` (seconds), ``prompt_tokens``/``output_tokens`` (or
  ``prompt_token_count``/``output_token_count``). Its ``time_per_output_token_ms``
  includes the first token and is not used.
* **AIPerf** ``profile_export.jsonl`` (one record per line): ``metrics.*`` each
  ``{value, unit}`` (``time_to_first_token``, ``request_latency``,
  ``inter_token_latency`` (first token excluded), ``input_sequence_length``,
  ``output_sequence_length``, ``inter_chunk_latency`` (a list)), ``metadata.
  request_start_ns`` (or ``timestamp_ns``), ``error``. AIPerf's first per-request exports
  (October 2025, between v0.1.1 and v0.2) name the TTFT ``ttft``: read as well.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

from agentsim.traces.measurements import (
    Rows,
    epoch_date,
    fail,
    number,
    parse_json,
    parse_json_lines,
    read_text,
    require_somewhere,
    seconds,
)

__all__ = ["read_aiperf", "read_guidellm", "read_llmperf", "read_vllm"]


def _tokens(v: Any, file, line, path) -> float | None:
    x = number(v, file, line, path)
    if x is not None and x < 0:
        raise fail(file, f"a token count cannot be negative ({v})", line=line, path=path)
    return x


# --------------------------------------------------------------------------- llmperf


def read_llmperf(path: Path) -> Rows:
    file = str(path)
    doc = parse_json(path, read_text(path))
    if not isinstance(doc, list):
        raise fail(
            file,
            "an llmperf individual-responses file is a JSON list of requests",
            "use the *_individual_responses.json file, not the summary",
        )
    rows = []
    for i, rec in enumerate(doc):
        if not isinstance(rec, dict):
            raise fail(file, "each request must be a JSON object", path=(i,))
        n_out = _tokens(rec.get("number_output_tokens"), file, None, (i, "number_output_tokens"))
        ttft = number(rec.get("ttft_s"), file, None, (i, "ttft_s"))
        e2e = number(rec.get("end_to_end_latency_s"), file, None, (i, "end_to_end_latency_s"))
        itl_incl = number(rec.get("inter_token_latency_s"), file, None, (i, "inter_token_latency_s"))
        if e2e is None and itl_incl is not None and n_out:
            e2e = itl_incl * n_out  # llmperf: sum of every gap, TTFT included, / output tokens
        code = rec.get("error_code")
        failed = code is not None and code != ""
        error = (f"{code}: {rec.get('error_msg') or ''}".strip(": ")) if failed else None
        rows.append(
            {
                "ttft_s": ttft or None,  # llmperf writes 0 when no token came
                "latency_s": e2e,
                "input_tokens": _tokens(rec.get("number_input_tokens"), file, None, (i, "number_input_tokens")),
                "output_tokens": n_out,
                "ok": not failed,
                "error": error,
                "model": rec.get("model"),
                "place": f"[{i}]",
            }
        )
    require_somewhere(rows, "ttft_s", file, "ttft_s", "is this an llmperf individual-responses file?")
    require_somewhere(rows, "output_tokens", file, "number_output_tokens")
    require_somewhere(rows, "latency_s", file, "end_to_end_latency_s or inter_token_latency_s")
    return Rows(
        rows,
        "llmperf",
        file,
        notes=(
            "llmperf inter_token_latency_s includes the TTFT (end-to-end / output tokens); "
            "decode time taken as end_to_end_latency_s - ttft_s",
        ),
    )


# --------------------------------------------------------------------------- vLLM bench serve


def read_vllm(path: Path) -> Rows:
    file = str(path)
    doc = parse_json(path, read_text(path))
    n, latency_key = _vllm_arrays(doc, file)
    model = doc.get("model_id")
    rows = [_vllm_row(doc, i, latency_key, model, file) for i in range(n)]
    date = _vllm_date(doc)
    return Rows(
        rows,
        "vllm",
        file,
        date=date,
        date_note="the result's 'date'" if date else None,
        notes=("vLLM itls exclude the first token; latency = ttft + sum(itls) where no per-request latency is given",),
    )


def _vllm_arrays(doc: Any, file: str) -> tuple[int, str | None]:
    """Check a vLLM result's per-request arrays are there and parallel: ``(requests, its latency key or None)``."""
    if not isinstance(doc, dict):
        raise fail(file, "a vLLM bench serve result is one JSON object")
    for key in ("ttfts", "output_lens", "input_lens"):
        if key not in doc:
            raise fail(
                file, f"missing '{key}'", "run `vllm bench serve` with --save-result --save-detailed", path=(key,)
            )
    latency_key = next((k for k in ("latencies", "e2els") if k in doc), None)
    if "itls" not in doc and latency_key is None:
        raise fail(
            file, "missing 'itls' (and no 'latencies')", "run `vllm bench serve` with --save-detailed", path=("itls",)
        )
    n = len(doc["ttfts"])
    arrays = ["ttfts", "output_lens", "input_lens"] + [
        k for k in ("itls", latency_key, "start_times", "errors") if k and k in doc
    ]
    for key in arrays:
        if not isinstance(doc[key], list) or len(doc[key]) != n:
            got = len(doc[key]) if isinstance(doc[key], list) else type(doc[key]).__name__
            raise fail(
                file, f"'{key}' has {got} entries but 'ttfts' has {n}", "the arrays must be parallel", path=(key,)
            )
    return n, latency_key


def _vllm_row(doc: dict, i: int, latency_key: str | None, model: Any, file: str) -> dict:
    """Request ``i`` of a vLLM result as a row."""
    err = doc["errors"][i] if "errors" in doc else ""
    gaps = doc["itls"][i] if "itls" in doc else None
    if gaps is not None:
        if not isinstance(gaps, list):
            raise fail(file, "each entry of 'itls' is a list of gaps", path=("itls", i))
        gaps = [number(g, file, None, ("itls", i, j)) for j, g in enumerate(gaps)]
    ttft = number(doc["ttfts"][i], file, None, ("ttfts", i))
    latency = number(doc[latency_key][i], file, None, (latency_key, i)) if latency_key else None
    return {
        "ttft_s": ttft or None,  # vLLM writes 0.0 for a request that produced nothing
        "latency_s": latency or None,
        "gaps_s": gaps or None,
        "input_tokens": _tokens(doc["input_lens"][i], file, None, ("input_lens", i)),
        "output_tokens": _tokens(doc["output_lens"][i], file, None, ("output_lens", i)),
        "start_s": number(doc["start_times"][i], file, None, ("start_times", i)) if "start_times" in doc else None,
        "ok": not err,
        "error": err or None,
        "model": model,
        "place": f"[{i}]",
    }


def _vllm_date(doc: dict) -> dt.date | None:
    """The day of a vLLM result, from its 'date' (``%Y%m%d-%H%M%S``), if readable."""
    if isinstance(doc.get("date"), str):
        try:
            return dt.datetime.strptime(doc["date"], "%Y%m%d-%H%M%S").date()
        except ValueError:
            return None
    return None


# --------------------------------------------------------------------------- GuideLLM


def _first(rec: dict, *keys: str) -> Any:
    for k in keys:
        if rec.get(k) is not None:
            return rec[k]
    return None


def _guidellm_model(bench: dict, doc: dict) -> str | None:
    for getter in (
        lambda: bench["worker"]["backend_model"],
        lambda: bench["config"]["requests"]["model"],
        lambda: doc["args"]["model"],
        lambda: bench["args"]["model"],
    ):
        try:
            v = getter()
        except (KeyError, TypeError):
            continue
        if isinstance(v, str):
            return v
    return None


def read_guidellm(path: Path) -> Rows:
    file = str(path)
    doc = parse_json(path, read_text(path))
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list):
        raise fail(
            file,
            "a GuideLLM report is a JSON object with a 'benchmarks' list",
            "use the file written by `guidellm benchmark --output-path x.json`",
        )
    rows = []
    for b, bench in enumerate(doc["benchmarks"]):
        reqs = bench.get("requests") if isinstance(bench, dict) else None
        if not isinstance(reqs, dict):
            raise fail(
                file,
                "a benchmark has no 'requests' breakdown",
                "GuideLLM writes requests: {successful, incomplete, errored}",
                path=("benchmarks", b, "requests"),
            )
        model = _guidellm_model(bench, doc)
        for status in ("successful", "incomplete", "errored"):
            for i, rec in enumerate(reqs.get(status) or []):
                rows.append(_guidellm_row(rec, ("benchmarks", b, "requests", status, i), model, file))
    ok_rows = [r for r in rows if r["ok"]]
    require_somewhere(ok_rows, "ttft_s", file, "time_to_first_token_ms", "was the benchmark run with streaming?")
    require_somewhere(ok_rows, "output_tokens", file, "output_tokens (or output_token_count)")
    date = epoch_date(r["start_s"] for r in rows)
    return Rows(
        rows,
        "guidellm",
        file,
        date=date,
        date_note="request start times" if date else None,
        notes=(
            "GuideLLM time_per_output_token_ms includes the first token and is not used; "
            "inter_token_latency_ms excludes it",
        ),
    )


def _guidellm_row(rec: Any, where: tuple, model: str | None, file: str) -> dict:
    """One GuideLLM request at ``where`` (``benchmarks, b, requests, status, i``) as a row."""
    _, b, _, status, i = where
    if not isinstance(rec, dict):
        raise fail(file, "each request must be a JSON object", path=where)
    ttft_ms = number(rec.get("time_to_first_token_ms"), file, None, (*where, "time_to_first_token_ms"))
    itl_ms = number(rec.get("inter_token_latency_ms"), file, None, (*where, "inter_token_latency_ms"))
    start = _first(rec, "start_time", "request_start_time")
    timings = (rec.get("info") or {}).get("timings") if isinstance(rec.get("info"), dict) else None
    if start is None and isinstance(timings, dict):
        start = timings.get("request_start")
    error = None
    if status != "successful":
        error = rec.get("error") or status
    return {
        "ttft_s": ttft_ms / 1000 if ttft_ms is not None else None,
        "itl_s": itl_ms / 1000 if itl_ms is not None else None,
        "latency_s": number(rec.get("request_latency"), file, None, (*where, "request_latency")),
        "input_tokens": _tokens(
            _first(rec, "prompt_tokens", "prompt_token_count"), file, None, (*where, "prompt_tokens")
        ),
        "output_tokens": _tokens(
            _first(rec, "output_tokens", "output_token_count"), file, None, (*where, "output_tokens")
        ),
        "start_s": number(start, file, None, (*where, "start_time")),
        "ok": status == "successful",
        "error": str(error) if error is not None else None,
        "model": model,
        "place": f"benchmarks[{b}].requests.{status}[{i}]",
    }


# --------------------------------------------------------------------------- AIPerf


# metric -> its names, newest first: AIPerf's first per-request exports (Oct 2025, between v0.1.1 and v0.2)
# wrote ``ttft``; it was renamed ``time_to_first_token`` the next day (ai-dynamo/aiperf #343)
AIPERF_NAMES = {"time_to_first_token": ("time_to_first_token", "ttft")}


def _metric(rec: dict, name: str, kind: str, file: str, line: int) -> Any:
    m = rec.get("metrics") or {}
    name = next((n for n in AIPERF_NAMES.get(name, (name,)) if m.get(n) is not None), name)
    if name not in m or m[name] is None:
        return None
    entry = m[name]
    where = ("metrics", name)
    if not isinstance(entry, dict) or "value" not in entry:
        raise fail(file, "a metric is {value, unit}", path=where, line=line)
    value, unit = entry["value"], entry.get("unit")
    if kind == "time":
        if unit is None:
            raise fail(
                file, "a time metric without a unit", "AIPerf writes e.g. {value: 250, unit: ms}", path=where, line=line
            )
        if isinstance(value, list):
            return [seconds(v, unit, file, line, where) for v in value]
        return seconds(value, unit, file, line, where)
    if unit is not None and str(unit).lower() not in ("tokens", "token", "count"):
        raise fail(file, f"unexpected unit '{unit}' for a token count", "expected 'tokens'", path=where, line=line)
    return _tokens(value, file, line, where)


def read_aiperf(path: Path) -> Rows:
    file = str(path)
    rows = []
    for line, rec in parse_json_lines(path, read_text(path)):
        if not isinstance(rec, dict) or not ("metrics" in rec or "error" in rec):
            raise fail(file, "not an AIPerf record (expected metadata, metrics and error)", line=line)
        err = rec.get("error")
        meta = rec.get("metadata") or {}
        start_ns = meta.get("request_start_ns", meta.get("timestamp_ns"))
        gaps = _metric(rec, "inter_chunk_latency", "time", file, line)
        rows.append(
            {
                "ttft_s": _metric(rec, "time_to_first_token", "time", file, line),
                "latency_s": _metric(rec, "request_latency", "time", file, line),
                "itl_s": _metric(rec, "inter_token_latency", "time", file, line),
                "input_tokens": _metric(rec, "input_sequence_length", "tokens", file, line),
                "output_tokens": _first(
                    {
                        "osl": _metric(rec, "output_sequence_length", "tokens", file, line),
                        "otc": _metric(rec, "output_token_count", "tokens", file, line),
                    },
                    "osl",
                    "otc",
                ),
                "gaps_s": gaps if isinstance(gaps, list) and gaps else None,
                "start_s": start_ns / 1e9 if isinstance(start_ns, int | float) else None,
                "ok": err is None and not meta.get("was_cancelled", False),
                "error": (
                    f"{err.get('code')} {err.get('type')}: {err.get('message')}"
                    if isinstance(err, dict)
                    else (str(err) if err is not None else ("cancelled" if meta.get("was_cancelled") else None))
                ),
                "model": meta.get("model_name"),
                "place": f"line {line}",
            }
        )
    if not rows:
        raise fail(file, "the file has no records")
    ok_rows = [r for r in rows if r["ok"]]
    require_somewhere(
        ok_rows,
        "ttft_s",
        file,
        "metrics.time_to_first_token (or metrics.ttft, its name in AIPerf's first per-request exports)",
        "AIPerf records it for streamed requests: was it run with --streaming?",
    )
    require_somewhere(ok_rows, "output_tokens", file, "metrics.output_sequence_length")
    date = epoch_date(r["start_s"] for r in rows)
    return Rows(
        rows,
        "aiperf",
        file,
        date=date,
        date_note="request start times" if date else None,
        notes=(
            "AIPerf inter_token_latency excludes the first token; decode time = request_latency - time_to_first_token",
        ),
    )

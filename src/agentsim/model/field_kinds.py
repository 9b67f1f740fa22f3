"""Which quantity kind (agentsim.model.domain) every numeric field of the vocabulary is.

:data:`FIELD_KINDS` maps a field, written as the end of its dotted path (``*`` matches any one key
or index), to its kind: ``("call", "output")`` is every call's output wherever the call is nested;
``("models", "*", "ttft")`` every model's TTFT. A field whose value may be a distribution is checked
as one (:func:`agentsim.model.domain.check_dist`: every location, clip and spread is of the kind);
a model-dependent value (``{by: CALL, MODEL: value, ...}``) is checked value by value.

:func:`kind_problems` walks plain data (a scenario or a profile, as read from its file) once, in
time linear in its size, and returns every value outside its kind's range with its path, so the
caller can point at the line. Profiles use it for their speed fields; scenarios use it until the
scenario's own field types carry the kinds (the table is the mapping those types follow).
"""

from __future__ import annotations

import functools
import math
from typing import Any

from agentsim.model.domain import check_dist, is_denormal, problem

__all__ = ["FIELD_KINDS", "PROFILE_ROOTS", "kind_problems"]

# (path suffix, kind, positive). Durations written in minutes/hours/days are scaled by _SCALE first.
FIELD_KINDS: tuple[tuple[tuple[str, ...], str, bool], ...] = (
    (("seed",), "seed", False),
    (("runs",), "count", True),
    # models (and profiles: the same keys at the top level of the profile)
    (("models", "*", "ttft"), "duration", False),
    (("models", "*", "output_tps"), "speed", True),
    (("models", "*", "prefill_tps"), "speed", True),
    (("models", "*", "error_rate"), "prob", False),
    (("models", "*", "timeout"), "duration", True),
    (("price", "input_mtok"), "price", False),
    (("price", "output_mtok"), "price", False),
    (("price", "cache_read_mtok"), "price", False),
    (("price", "cache_write_mtok"), "price", False),
    (("price", "cache_write_1h_mtok"), "price", False),
    (("price", "output_reasoning_mtok"), "price", False),
    (("price", "requests_kcount"), "price", False),
    (("*", "base"), "price", False),  # a tiered price's base (only under *_mtok keys: see _TIERED)
    (("tiers", "*", "start"), "tokens", False),
    (("tiers", "*", "price"), "price", False),
    (("speeds", "*", "output_tps_x"), "factor", False),
    (("speeds", "*", "ttft_x"), "factor", False),
    (("speeds", "*", "price_x"), "factor", False),
    (("stream", "chunk_tokens"), "tokens", False),
    (("stream", "jitter_cv"), "cv", False),
    (("stall", "p"), "prob", False),
    (("stall", "per_chunk"), "prob", False),
    (("stall", "per_token"), "prob", False),
    (("at_chunks", "*"), "tokens", True),
    (("stall", "seconds"), "duration", False),
    (("conditions", "ttft_x"), "factor", False),
    (("conditions", "output_tps_x"), "factor", False),
    (("hourly", "*"), "factor", False),
    (("context_speed", "tokens", "*"), "tokens", False),
    (("context_speed", "output_tps_x", "*"), "factor", False),
    (("context_speed", "ttft_x", "*"), "factor", False),
    (("uncertainty", "ttft_x"), "factor", False),
    (("uncertainty", "output_tps_x"), "factor", False),
    (("uncertainty", "prefill_tps_x"), "factor", False),
    (("retry", "max_attempts"), "count", True),
    (("retry", "backoff_base"), "duration", False),
    (("retry", "backoff_cap"), "duration", False),
    (("fallback", "after"), "count", True),
    # context, steps and consumers (wherever they are nested)
    (("context", "system"), "tokens", False),
    (("call", "input"), "tokens", False),
    (("call", "output"), "tokens", False),
    (("call", "reasoning"), "tokens", False),
    (("reader", "tokens_per_s"), "speed", True),
    (("reader", "words_per_min"), "words_per_min", True),
    (("speech", "first_audio"), "duration", False),
    (("speech", "tokens_per_s"), "speed", True),
    (("speech", "sentence_tokens"), "tokens", False),
    (("render", "tokens"), "tokens", True),
    (("qoe", "expected_ttft"), "duration", False),
    (("qoe", "tokens_per_s"), "speed", True),
    (("interrupt", "p"), "prob", False),
    (("interrupt", "after_first_token"), "duration", False),
    (("interrupt", "after_first_word"), "duration", False),
    (("interrupt", "after_first_audio"), "duration", False),
    (("tool", "latency"), "duration", False),
    (("tool", "output"), "tokens", False),
    (("wait", "latency"), "duration", False),
    (("listen", "end_of_speech"), "duration", False),
    (("listen", "stt"), "duration", False),
    (("join", "k"), "count", True),
    (("fanout", "n"), "count", False),
    (("repeat", "times"), "count", False),
    (("repeat", "continue_p"), "prob", False),
    (("repeat", "max"), "count", True),
    (("options", "*", "p"), "prob", False),
    (("after", "tokens"), "tokens", True),
    (("pipeline", "sentence_tokens"), "tokens", False),
    (("fail", "p"), "prob", False),
    (("subagent", "output"), "tokens", False),
    # scenario-wide
    (("value_of_time", "usd_per_hour"), "usd", False),
    (("limits", "*", "concurrency"), "count", True),
    (("limits", "*", "rpm"), "rate", False),
    (("limits", "*", "input_tpm"), "rate", False),
    (("limits", "*", "output_tpm"), "rate", False),
    (("arrivals", "per_hour"), "rate", False),
    (("workload", "concurrent"), "count", True),
    (("workload", "think_time"), "duration", False),
    (("duration", "seconds"), "duration", False),
    (("duration", "minutes"), "duration", False),
    (("duration", "hours"), "duration", False),
    (("duration", "days"), "duration", False),
    (("warmup", "seconds"), "duration", False),
    (("warmup", "minutes"), "duration", False),
    (("warmup", "hours"), "duration", False),
    (("warmup", "days"), "duration", False),
    (("volume", "runs_per_month"), "rate", False),
    (("volume", "runs_per_day"), "rate", False),
    (("volume", "seats"), "rate", False),
    (("volume", "runs_per_seat_per_day"), "rate", False),
    (("volume", "working_days"), "days_per_month", False),
    (("range", "start"), "number", False),
    (("range", "stop"), "number", False),
    (("range", "step"), "number", False),
)

# A profile's speed fields sit at its top level; checked as the fields of a model named "profile".
PROFILE_ROOTS = ("ttft", "output_tps", "prefill_tps", "speeds", "stream", "conditions", "uncertainty", "context_speed")

_SCALE = {"minutes": 60.0, "hours": 3600.0, "days": 86400.0}
_TIERED = {"input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok", "cache_write_1h_mtok",
           "output_reasoning_mtok", "requests_kcount"}  # fmt: skip
_BY_LAST: dict[str, list[tuple[tuple[str, ...], str, bool]]] = {}
for _entry in FIELD_KINDS:
    _BY_LAST.setdefault(_entry[0][-1], []).append(_entry)
_ANY_LAST = _BY_LAST.pop("*", [])  # patterns ending in an index: hourly factors, tiers


def _matches(pattern: tuple[str, ...], path: tuple[str | int, ...]) -> bool:
    if len(pattern) > len(path):
        return False
    tail = path[len(path) - len(pattern) :]
    return all(p == "*" or p == t for p, t in zip(pattern, tail, strict=True))


def _kind_of(path: tuple[str | int, ...]) -> tuple[str, bool] | None:
    if path and not isinstance(path[-1], str):  # an item of a list: its kind is its list's (looked up once)
        return _kind_of_item(path[:-1])
    return _kind_of_field(path)


@functools.lru_cache(maxsize=1024)
def _kind_of_item(parent: tuple[str | int, ...]) -> tuple[str, bool] | None:
    """The kind of every item of the list at ``parent`` (patterns ending in ``*`` do not read the index)."""
    return _kind_of_field((*parent, 0))


def _kind_of_field(path: tuple[str | int, ...]) -> tuple[str, bool] | None:
    last = path[-1] if path else None
    candidates = _BY_LAST.get(last, []) if isinstance(last, str) else _ANY_LAST
    for pattern, kind, positive in candidates:
        if pattern == ("*", "base") and (len(path) < 2 or path[-2] not in _TIERED):
            continue
        if _matches(pattern, path):
            return kind, positive
    return None


def kind_problems(data: Any, root: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], str]]:
    """Every value of ``data`` outside its field's kind, as ``(path, message)``, in one walk."""
    out: list[tuple[tuple[str | int, ...], str]] = []
    stack: list[tuple[tuple[str | int, ...], Any]] = [(root, data)]
    while stack:
        path, value = stack.pop()
        found = _kind_of(path) if path else None
        if found is not None and not isinstance(value, list):
            out.extend(_check_value(path, value, *found))
            if not (isinstance(value, dict) and {"base", "tiers"} & set(value)):
                continue  # a number, a distribution or a by-model table of the kind: done
        if isinstance(value, dict):
            stack.extend(((*path, k), v) for k, v in value.items() if isinstance(k, str))
        elif isinstance(value, list):
            stack.extend(((*path, i), v) for i, v in enumerate(value))
    out.sort(key=lambda item: tuple(str(p) for p in item[0]))
    return out


def _check_value(path, value, kind: str, positive: bool) -> list[tuple[tuple[str | int, ...], str]]:
    scale = _SCALE.get(str(path[-1]), 1.0)
    if scale != 1.0 and isinstance(value, int | float) and not isinstance(value, bool):  # minutes, hours, days
        finite = math.isfinite(value) and not is_denormal(value)
        seconds = min(value * scale, 1e308) if finite else value  # 1e308 days: no overflow to inf
        msg = problem(kind, seconds, positive=positive)
        return [(path, f"{value:g} {path[-1]} = {seconds:g} s: {msg}" if finite else msg)] if msg else []
    if isinstance(value, dict) and "by" in value:  # {by: CALL, MODEL: value, ...}
        out = []
        for key, v in value.items():
            if key != "by":
                out.extend(((*path, key, *sub), msg) for sub, msg in check_dist(kind, v, positive=positive))
        return out
    if isinstance(value, dict) and {"base", "tiers"} & set(value):
        return []  # a tiered price: its base and tiers are fields of their own
    return [((*path, *sub), msg) for sub, msg in check_dist(kind, value, positive=positive)]

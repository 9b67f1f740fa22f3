"""Which quantity kind (agentsim.model.domain) every numeric field of the vocabulary is.

A field is written as the end of its dotted path (``*`` matches any one key or index) and mapped to its
kind: ``("call", "output")`` is every call's output wherever the call is nested; ``("models", "*",
"ttft")`` every model's TTFT. :data:`FIELD_KINDS` holds the vocabulary's shared parts (models, prices,
limits, workload...); each step kind's and consumer kind's own fields say their kind in their annotation
(``latency: Annotated[Dist, Of("duration")]``, :class:`~agentsim.model.domain.Of`) and are read from the
registered kinds (:func:`kind_entries`), so a kind defined anywhere is checked by its fields' kinds, with
no entry here. A field whose value may be a distribution is checked
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
import typing
from typing import Any

from pydantic import BaseModel

from agentsim.model import registry
from agentsim.model.domain import Of, check_dist, is_denormal, problem

__all__ = ["FIELD_KINDS", "PROFILE_ROOTS", "field_kinds", "kind_entries", "kind_problems", "models_in"]

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
    # the context, joins and the QoE expectation (wherever they are nested); each step kind's and consumer
    # kind's own fields: their annotations (domain.Of), read by kind_entries()
    (("context", "system"), "tokens", False),
    (("qoe", "expected_ttft"), "duration", False),
    (("qoe", "tokens_per_s"), "speed", True),
    (("join", "k"), "count", True),
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
Entry = tuple[tuple[str, ...], str, bool]


def field_kinds() -> tuple[Entry, ...]:
    """Every field's kind: :data:`FIELD_KINDS` (the vocabulary's shared parts), then each registered step
    kind's and consumer kind's own fields (:func:`kind_entries`)."""
    return (*FIELD_KINDS, *kind_entries())


def kind_entries() -> tuple[Entry, ...]:
    """The fields of the registered step and consumer kinds that their annotations give a quantity kind
    (:class:`~agentsim.model.domain.Of`), under the kind's key: ``("wait", "latency")``, nested models too
    (``("call", "interrupt", "p")``, ``("choose", "options", "*", "p")``)."""
    return _tables(registry.version())[0]


@functools.lru_cache(maxsize=4)
def _tables(version: int) -> tuple[tuple[Entry, ...], dict[str, list[Entry]], list[Entry]]:
    """(the kinds' entries, every entry by its pattern's last key, the patterns ending in ``*``), once per set
    of registered kinds."""
    entries: list[Entry] = []
    for name, kind in registry.step_kinds().items():
        entries += _declared(kind.step.model_fields[name].annotation, (name,), set())
    for name, consumer in registry.consumer_kinds().items():
        entries += _declared(consumer.spec, (name,), set())
    by_last: dict[str, list[Entry]] = {}
    for entry in (*FIELD_KINDS, *entries):
        by_last.setdefault(entry[0][-1], []).append(entry)
    return tuple(entries), by_last, by_last.pop("*", [])


def _declared(annotation: Any, prefix: tuple[str, ...], seen: set) -> list[Entry]:
    """The entries of the models in ``annotation`` (a model, a union or list of them), under ``prefix``."""
    out: list[Entry] = []
    for model, many in models_in(annotation, False):
        if model in seen:
            continue
        seen = seen | {model}
        here = (*prefix, "*") if many else prefix
        for name, f in model.model_fields.items():
            key = (*here, f.alias or name)
            out += [(key, m.kind, m.positive) for m in f.metadata if isinstance(m, Of)]
            out += _declared(f.annotation, key, seen)
    return out


def models_in(annotation: Any, many: bool = False):
    """The pydantic models an annotation holds, each with whether it is inside a list (``*`` in its paths)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation, many
        return
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        args = args[:1]
    for arg in args:
        yield from models_in(arg, many or origin in (list, tuple))


def _matches(pattern: tuple[str, ...], path: tuple[str | int, ...]) -> bool:
    if len(pattern) > len(path):
        return False
    tail = path[len(path) - len(pattern) :]
    return all(p == "*" or p == t for p, t in zip(pattern, tail, strict=True))


def _kind_of(path: tuple[str | int, ...]) -> tuple[str, bool] | None:
    version = registry.version()
    if path and not isinstance(path[-1], str):  # an item of a list: its kind is its list's (looked up once)
        return _kind_of_item(path[:-1], version)
    return _kind_of_field(path, version)


@functools.lru_cache(maxsize=1024)
def _kind_of_item(parent: tuple[str | int, ...], version: int) -> tuple[str, bool] | None:
    """The kind of every item of the list at ``parent`` (patterns ending in ``*`` do not read the index)."""
    return _kind_of_field((*parent, 0), version)


def _kind_of_field(path: tuple[str | int, ...], version: int) -> tuple[str, bool] | None:
    _, by_last, any_last = _tables(version)
    last = path[-1] if path else None
    candidates = by_last.get(last, []) if isinstance(last, str) else any_last
    for pattern, kind, positive in candidates:
        if pattern == ("*", "base") and (len(path) < 2 or path[-2] not in _TIERED):
            continue
        if _matches(pattern, path):
            return kind, positive
    return None


def kind_problems(data: Any, root: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], str]]:
    """Every value of ``data`` outside its field's kind, as ``(path, message)``, in one walk.

    A field's kind depends on the last :data:`_TAIL` keys of its path alone (no pattern is longer), with list
    indices as ``0`` (a pattern matches an index only with ``*``): the walk carries each value's tail beside
    its path, and looks each tail's kind up once (:func:`_tail_kinds`)."""
    out: list[tuple[tuple[str | int, ...], str]] = []
    kinds = _tail_kinds(registry.version())
    stack: list[tuple[tuple[str | int, ...], tuple, Any]] = [(root, _tail_of(root), data)]
    pop, push = stack.pop, stack.append
    while stack:
        path, tail, value = pop()
        found = _kind_of_tail(kinds, tail) if path else None
        if found is not None and type(value) is not list:
            if (type(value) is int or type(value) is float) and tail[-1] not in _SCALE:  # a plain number
                msg = problem(found[0], value, positive=found[1])
                if msg is not None:
                    out.append((path, msg))
                continue
            out.extend(_check_value(path, value, *found))
            if not (type(value) is dict and ("base" in value or "tiers" in value)):
                continue  # a number, a distribution or a by-model table of the kind: done
        if type(value) is dict:
            short = tail[1 - _TAIL :]
            for k, v in value.items():
                if type(k) is str:
                    push(((*path, k), (*short, k), v))
        elif type(value) is list:
            short = (*tail[1 - _TAIL :], 0)
            for i, v in enumerate(value):
                push(((*path, i), short, v))
    out.sort(key=lambda item: tuple(str(p) for p in item[0]))
    return out


_TAIL = 4  # keys of the longest pattern (("choose", "options", "*", "p")); checked by _tail_kinds
_UNSEEN = object()


def _tail_of(path: tuple[str | int, ...]) -> tuple:
    return tuple(k if isinstance(k, str) else 0 for k in path[-_TAIL:])


def _kind_of_tail(kinds: dict, tail: tuple) -> tuple[str, bool] | None:
    """The kind of a path ending in ``tail`` (:func:`_kind_of`), looked up once per tail."""
    found = kinds.get(tail, _UNSEEN)
    if found is _UNSEEN:
        found = kinds[tail] = _kind_of(tail)
    return found


@functools.lru_cache(maxsize=4)
def _tail_kinds(version: int) -> dict:
    """The kinds found so far by path tail, for one set of registered kinds (filled by :func:`_kind_of_tail`)."""
    longest = max(len(pattern) for pattern, _, _ in (*FIELD_KINDS, *_tables(version)[0]))
    if longest > _TAIL:  # pragma: no cover - a kind with a longer pattern must raise _TAIL
        raise AssertionError(f"a field pattern of {longest} keys: raise field_kinds._TAIL")
    return {}


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

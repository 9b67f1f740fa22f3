"""The domain limits of every number agentsim reads: one table, used by every reader.

A number in a scenario, a profile, a measurement file, a recorded session, a replay config or on
the command line is a *quantity of a kind*: a duration, a speed, a token count, a price, a
probability, a factor, a count, a rate, a timestamp. Each kind has one finite allowed range, and
the reason for it (:data:`KINDS`). Whoever reads a number checks it against its kind, here, so that
the same value gets the same answer from every command, and every formula downstream stays finite:

* NaN and ±inf are refused everywhere (they are what the JSON writer and the statistics cannot hold);
* denormal (subnormal) numbers, ``0 < |x| < 2.2e-308``, are refused everywhere: they are the
  remains of a division or a typo, and their reciprocal is infinite;
* each kind has a smallest non-zero magnitude (``tiny``): below it a value is a unit slip (a
  duration of 1e-300 s), and a positive kind (a speed, a factor) is bounded away from 0;
* integer kinds (token counts, counts, seeds) take whole numbers only: ``2.5`` is refused,
  ``200.0`` is read as ``200``;
* no coercion: the text ``"200"`` and the booleans ``true``/``false`` are not numbers.

**Why the token bound is 10⁹.** Token counts live in int64 arrays (largest value
2⁶³ − 1 ≈ 9.22·10¹⁸). The largest sums agentsim forms are the token totals of a whole simulation:
a call adds at most four counts (input, cache read, output, reasoning), and the size guard
(``--max-calls``, default 2·10⁹ simulated calls) bounds the calls, so a total is at most
4 · 2·10⁹ · T. For that to stay below 2⁶³ − 1, T ≤ 9.22·10¹⁸ / 8·10⁹ ≈ 1.15·10⁹; the bound
T = 10⁹ is the round number below (a thousand times the longest context window sold in 2026).
Multiplied by a price (at most 10⁶ USD per million tokens, so at most 10⁹ USD for one count) and by
a count of runs, the cost stays a float64 far from overflow (≤ 10²⁰ ≪ 10³⁰⁸).

Two faces of the same table:

* pydantic types (:data:`Duration`, :data:`Tokens`, :data:`Speed`, :data:`Price`, :data:`Prob`,
  :data:`Factor`, :data:`Count`, ...), strict, whose ``Field(ge, le)`` puts the range in the JSON
  Schema;
* plain checks for readers that are not pydantic models (:func:`check`, :func:`problem`).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field
from pydantic_core import PydanticCustomError

from agentsim.model.safe_text import value_text

__all__ = [
    "CV",
    "KINDS",
    "TOKENS_MAX",
    "YEAR_S",
    "Count",
    "CountRate",
    "DaysPerMonth",
    "DomainError",
    "Duration",
    "Factor",
    "Kind",
    "Number",
    "Of",
    "PosCount",
    "PosDuration",
    "PosTokens",
    "Price",
    "Prob",
    "Seed",
    "Speed",
    "Timestamp",
    "Tokens",
    "Usd",
    "WordsPerMin",
    "check",
    "check_dist",
    "is_denormal",
    "problem",
    "quantity",
    "quantity_or",
]

YEAR_S = 365.25 * 86400.0
TOKENS_MAX = 10**9
INT64_MAX = 2**63 - 1
_NORMAL_MIN = sys.float_info.min  # 2.2250738585072014e-308: below it (and above 0), a float is denormal


@dataclass(frozen=True)
class Kind:
    """One kind of quantity: its unit, its finite range ``[lo, hi]`` and why."""

    name: str
    unit: str
    lo: float
    hi: float
    reason: str
    integer: bool = False
    tiny: float = _NORMAL_MIN  # smallest non-zero magnitude accepted

    def range_text(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        years = f" ({self.hi / YEAR_S:g} years)" if self.name == "duration" else ""
        return f"{_num(self.lo)} to {_num(self.hi)}{unit}{years}"


KINDS: dict[str, Kind] = {
    k.name: k
    for k in (
        Kind(
            "duration",
            "s",
            0.0,
            10 * YEAR_S,
            "a simulated span of more than 10 years is a typo, not a plan; under a nanosecond no clock measures",
            tiny=1e-9,
        ),
        Kind(
            "speed",
            "tokens/s",
            1e-3,
            1e8,
            "from one token every 17 minutes to 100 times the fastest published prefill; outside it is a "
            "unit slip, and a decode time would overflow",
            tiny=1e-3,
        ),
        Kind(
            "words_per_min",
            "words/min",
            0.05,
            1e9,
            "a reading or speaking pace: the speed range in words (1 token = 0.75 words)",
            tiny=0.05,
        ),
        Kind(
            "tokens",
            "tokens",
            0,
            TOKENS_MAX,
            "an integer; 10^9 keeps every token total of a simulation inside int64 (docs/limits-of-input.md)",
            integer=True,
        ),
        Kind(
            "price",
            "USD per million tokens",
            0.0,
            1e6,
            "a dollar per token is a thousand times any list price; costs stay far from float overflow",
            tiny=1e-12,
        ),
        Kind("usd", "USD", 0.0, 1e12, "an amount of money: a trillion dollars bounds any budget", tiny=1e-12),
        Kind("prob", "", 0.0, 1.0, "a probability"),
        Kind("percentile", "%", 0.0, 100.0, "a percentile of a distribution, 0 to 100", tiny=1e-6),
        Kind(
            "factor",
            "×",
            1e-3,
            1e3,
            "a multiplier of a speed, a time or a price, bounded away from 0 and infinity: a thousand times "
            "faster or slower is another model, not a condition of this one",
            tiny=1e-3,
        ),
        Kind(
            "cv",
            "",
            0.0,
            10.0,
            "a coefficient of variation; above 10 nearly all the weight sits in one gap",
            tiny=1e-9,
        ),
        Kind(
            "count",
            "",
            0,
            TOKENS_MAX,
            "an integer number of things (runs, copies, iterations, requests); 10^9 is beyond any size guard",
            integer=True,
        ),
        Kind(
            "rate",
            "",
            1e-6,
            1e12,
            "arrivals, requests or tokens per hour or minute, runs per month: bounded away from 0 (the time "
            "between two would be infinite) and from infinity",
            tiny=1e-6,
        ),
        Kind(
            "seed",
            "",
            0,
            INT64_MAX,
            "a random seed: a whole number that fits in int64",
            integer=True,
        ),
        Kind(
            "timestamp",
            "Unix s",
            -62135596800.0,
            253402300799.0,
            "seconds since 1970-01-01 UTC, from year 1 to year 9999 (what a date can hold)",
            tiny=1e-9,
        ),
        Kind("workers", "processes", 1, 4096, "processes on one machine or cluster", integer=True),
        Kind("days_per_month", "days", 1e-3, 31.0, "days of use in a month", tiny=1e-3),
        Kind(
            "number",
            "",
            -1e15,
            1e15,
            "a finite number of a plausible size (any option without a kind of its own)",
            tiny=1e-12,
        ),
    )
}


_NOUNS = {
    "tokens": "a token count",
    "usd": "an amount",
    "prob": "a probability",
    "cv": "a coefficient of variation",
    "words_per_min": "a pace",
    "workers": "a number of workers",
    "days_per_month": "a number of days",
    "rate": "a rate (per hour, minute, day or month)",
}


class DomainError(ValueError):
    """A number outside its kind's range (or not a number): the message says what and the range."""


def _num(x: float) -> str:
    if float(x).is_integer() and abs(x) < 1e13:
        return f"{int(x):,}"
    return f"{x:g}"


def is_denormal(x: float) -> bool:
    """A subnormal float: non-zero and smaller in magnitude than the smallest normal float."""
    return isinstance(x, float) and x != 0.0 and abs(x) < _NORMAL_MIN


def problem(kind: str | Kind, value: Any, *, positive: bool = False) -> str | None:
    """Why ``value`` is not a valid quantity of ``kind`` (one sentence), or None when it is.

    ``positive``: 0 is refused too (a timeout, a pace).
    """
    k = KINDS[kind] if isinstance(kind, str) else kind
    plain = (type(value) is int or (type(value) is float and not k.integer)) and not positive and k.lo <= value <= k.hi
    if plain and (value == 0.0 or abs(value) >= max(k.tiny, _NORMAL_MIN)):  # quickly: a file can hold 10^5 of them
        return None
    what = _NOUNS.get(k.name, "a " + k.name) + (f" in {k.unit}" if k.unit and k.unit not in ("×", "tokens") else "")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"expected {what} (a number), got {value_text(value)}"
    if isinstance(value, float) and math.isnan(value):
        return f"expected {what}, got NaN (allowed: {k.range_text()})"
    if isinstance(value, float) and math.isinf(value):
        return f"expected {what}, got {value!r} (allowed: {k.range_text()})"
    if is_denormal(value):
        return f"{value!r} is a denormal number, not {what} (allowed: {k.range_text()})"
    if k.integer and isinstance(value, float) and not value.is_integer():
        return f"expected {what} as a whole number, got {value!r}"
    lo = k.lo if not positive or k.lo > 0 else (1 if k.integer else k.tiny)
    if positive and value <= 0:
        return f"{_shown(value)}: expected {what} above zero: at least {_num(lo)}, at most {_num(k.hi)}"
    if value < lo:
        return f"{_shown(value)} is outside the range of {what}: must be at least {_num(lo)} ({_why(k)})"
    if value > k.hi:
        return f"{_shown(value)} is outside the range of {what}: must be at most {_num(k.hi)} ({_why(k)})"
    if value != 0 and abs(value) < k.tiny:
        return f"{_shown(value)} is too small for {what} (allowed: 0 or {_num(k.tiny)} to {_num(k.hi)})"
    return None


@dataclass(frozen=True)
class Of:
    """A field of a scenario model is a quantity of ``kind`` (``positive``: 0 refused too), written in its
    annotation: ``latency: Annotated[Dist, Of("duration")] = Field(...)``. The checks of plain data
    (:mod:`agentsim.model.field_kinds`) read it from a step or consumer kind's model, so a kind's fields pass
    this table by their own kind wherever the kind is defined; pydantic ignores it."""

    kind: str
    positive: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown quantity kind {self.kind!r}; the kinds are {', '.join(KINDS)}")


def _why(k: Kind) -> str:
    return f"the range is {k.range_text()}: {k.reason}"


def _shown(value: float | int) -> str:
    if isinstance(value, int) and abs(value) >= 10**15:
        return f"{float(value):.3g}"
    return repr(value)


def check(kind: str | Kind, value: Any, *, positive: bool = False) -> float | int:
    """``value`` as a quantity of ``kind`` (an int for integer kinds), or :class:`DomainError`."""
    msg = problem(kind, value, positive=positive)
    if msg is not None:
        raise DomainError(msg)
    k = KINDS[kind] if isinstance(kind, str) else kind
    return int(value) if k.integer else float(value)


def _validator(kind: str, positive: bool):
    def validate(value: Any) -> Any:
        msg = problem(kind, value, positive=positive)
        if msg is not None:
            raise PydanticCustomError(f"domain_{kind}", msg.replace("{", "{{").replace("}", "}}"))
        return int(value) if KINDS[kind].integer else float(value)

    return validate


def quantity(kind: str, *, positive: bool = False):
    """The strict pydantic type of a quantity of ``kind``: its range in the JSON Schema (minimum, maximum)."""
    k = KINDS[kind]
    core = int if k.integer else float
    lo = k.lo if not positive or k.lo > 0 else (1 if k.integer else k.tiny)
    bound = Field(ge=int(lo), le=int(k.hi)) if k.integer else Field(ge=lo, le=k.hi)
    # the bounds before the validator: pydantic then writes them as the schema's minimum and maximum
    return Annotated[core, bound, BeforeValidator(_validator(kind, positive))]


def quantity_or(kind: str, *words: str, positive: bool = False):
    """A quantity of ``kind`` or one of ``words`` (``render: {tokens: all}``): strict like :func:`quantity` (no text
    but the words, no booleans), with one message when it is neither."""
    k = KINDS[kind]
    core = int if k.integer else float
    lo = k.lo if not positive or k.lo > 0 else (1 if k.integer else k.tiny)
    bound = Field(ge=int(lo), le=int(k.hi)) if k.integer else Field(ge=lo, le=k.hi)
    either = " or ".join(words)

    def validate(value: Any) -> Any:
        if isinstance(value, str) and value in words:
            return value
        msg = problem(kind, value, positive=positive)
        if msg is not None:
            raise PydanticCustomError(f"domain_{kind}", f"{msg} (or {either})".replace("{", "{{").replace("}", "}}"))
        return int(value) if k.integer else float(value)

    return Annotated[Annotated[core, bound] | Literal[words], BeforeValidator(validate)]


Duration = quantity("duration")
PosDuration = quantity("duration", positive=True)
Speed = quantity("speed")
WordsPerMin = quantity("words_per_min")
Tokens = quantity("tokens")
PosTokens = quantity("tokens", positive=True)
PosTokens = quantity("tokens", positive=True)
Price = quantity("price")
Usd = quantity("usd")
Prob = quantity("prob")
Factor = quantity("factor")
CV = quantity("cv")
Count = quantity("count")
PosCount = quantity("count", positive=True)
CountRate = quantity("rate")
Seed = quantity("seed")
Timestamp = quantity("timestamp")
Number = quantity("number")
DaysPerMonth = quantity("days_per_month")

# --------------------------------------------------------------------------- distributions of a kind

_DIST_NUMBERS = {
    "constant": ("constant",),
    "uniform": ("low", "high"),
    "normal": ("mean",),
    "lognormal": ("median", "p90", "mean"),
    "gamma": ("mean",),
    "exponential": ("mean",),
}
_DIST_SPREADS = {"normal": ("sd",), "lognormal": ("sd",), "gamma": ("sd",)}


def check_dist(kind: str, value: Any, *, positive: bool = False) -> list[tuple[tuple[str | int, ...], str]]:
    """The problems of a number-or-distribution (plain data, as written in a file) of ``kind``.

    Every location (a constant, ``low``/``high``, a mean, a median, a p90, each value of ``choice`` or
    ``empirical``, the ``min``/``max`` clips) is a quantity of the kind; a spread (``sd``) is bounded by
    the kind's upper end. Returns ``(subpath, message)`` pairs; an empty list when all is well. Shapes
    that are not distributions are left to the scenario's own validation.
    """
    out: list[tuple[tuple[str | int, ...], str]] = []
    if isinstance(value, int | float) and not isinstance(value, bool):
        msg = problem(kind, value, positive=positive)
        return [((), msg)] if msg else []
    if not isinstance(value, dict):
        return out
    for clip in ("min", "max"):
        if clip in value and isinstance(value[clip], int | float):
            msg = problem(kind, value[clip])
            if msg:
                out.append(((clip,), msg))
    for fam, params in value.items():
        if not isinstance(params, dict) and fam not in ("choice", "empirical"):
            if fam == "constant":
                msg = problem(kind, params, positive=positive)
                if msg:
                    out.append(((fam,), msg))
            continue
        if isinstance(params, dict):  # clips may also sit inside the family's mapping ({normal: {..., min: 10}})
            for clip in ("min", "max"):
                msg = problem(kind, params[clip]) if clip in params else None
                if msg:
                    out.append(((fam, clip), msg))
        if fam in ("choice", "empirical") and isinstance(params, dict):
            for i, v in enumerate(params.get("values") or []):
                msg = problem(kind, v, positive=positive)
                if msg:
                    out.append(((fam, "values", i), msg))
            continue
        if not isinstance(params, dict):
            continue
        for key in _DIST_NUMBERS.get(fam, ()):
            if key in params:
                msg = problem(kind, params[key], positive=positive and fam != "normal")
                if msg:
                    out.append(((fam, key), msg))
        for key in _DIST_SPREADS.get(fam, ()):
            if key in params:
                spread = Kind(f"{kind} spread", KINDS[kind].unit, 0.0, float(KINDS[kind].hi), KINDS[kind].reason)
                msg = problem(spread, params[key])
                if msg:
                    out.append(((fam, key), msg))
    return out

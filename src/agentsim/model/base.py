"""The building blocks every scenario model uses: strict models, numbers, hints, problems.

Every model of the vocabulary derives from :class:`StrictModel`: frozen, unknown keys refused with a
``did you mean`` suggestion (:func:`suggest`), and its validator built on first use (so commands that
read no scenario build none). Numbers are read strictly: :func:`number` and :func:`integer` refuse
YAML booleans and strings, NaN and infinities; ``Num``/``PosNum``/``NonNegNum``/``Prob`` are the
annotated float types fields use. A :class:`Problem` is a bad value found after parsing, with the
dotted path :mod:`agentsim.model.loading` turns into a file and line.
"""

from __future__ import annotations

import datetime as dt
import difflib
import math
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from agentsim.model.heap import gc_paused
from agentsim.model.safe_text import is_plain_name, value_text

__all__ = [
    "INT64_MAX",
    "MAX_SECONDS",
    "Memo",
    "NonNegNum",
    "Num",
    "PosNum",
    "PriceDate",
    "Prob",
    "Problem",
    "StrictModel",
    "gc_paused",
    "integer",
    "number",
    "suggest",
]


class Memo:
    """Something worked out from a frozen model and kept on it for reuse (a scenario's compiled plan), which
    is not part of the model's value: it compares equal to anything (pydantic compares private attributes),
    is dropped when the model is pickled or deep-copied, and holds only for the model it was made from
    (:meth:`of`): a ``model_copy`` shares the private attributes but is another object, whose fields may
    differ."""

    __slots__ = ("owner", "value")

    def __init__(self, owner: object = None, value: Any = None):
        self.owner, self.value = owner, value

    def of(self, owner: object) -> Any:
        """The value kept for ``owner``, or None."""
        return self.value if self.owner is owner else None

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self):
        return (Memo, ())


_ALLOWED: dict[type, frozenset[str]] = {}  # model class -> the keys it takes (its fields and their aliases)


def suggest(word: str, options: list[str] | set[str] | tuple[str, ...]) -> str:
    """A ``did you mean 'x'?`` hint for a misspelt name, or an empty string. Only plain names are offered
    (:func:`agentsim.model.safe_text.is_plain_name`): a suggestion never repeats a line of a file."""
    close = difflib.get_close_matches(
        str(word), sorted(o for o in map(str, options) if is_plain_name(o)), n=3, cutoff=0.6
    )
    if not close:
        return ""
    return "did you mean " + " or ".join(f"'{c}'" for c in close) + "?"


class StrictModel(BaseModel):
    """Base of every scenario model (public name: ``StrictModel``): frozen, unknown keys rejected with a
    suggestion."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _reject_unknown_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            allowed = _ALLOWED.get(cls)
            if allowed is None:  # once per class: this runs for every mapping of a scenario
                allowed = _ALLOWED[cls] = frozenset(
                    {*cls.model_fields, *(f.alias for f in cls.model_fields.values() if f.alias)}
                )
            for key in data:
                if key not in allowed:
                    hint = suggest(key, allowed) or "allowed keys: " + ", ".join(sorted(allowed))
                    raise PydanticCustomError(
                        "unknown_key",
                        "unknown key {shown} ({hint})",
                        {"key": str(key), "shown": _key_shown(key), "hint": hint},
                    )
        return data


def _key_shown(key: Any) -> str:
    """How ``unknown key …`` names a key: itself when it is a plain name, else only that it is not one."""
    text = str(key)
    return f"'{text}'" if is_plain_name(text) else "(not a plain name: not shown)"


def number(value: Any) -> Any:
    """Accept ints and floats only (YAML ``true`` or ``"5"`` are errors, not numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("not_a_number", "expected a number, got {got}", {"got": value_text(value)})
    if isinstance(value, float) and not math.isfinite(value):
        raise PydanticCustomError("not_finite", "expected a finite number, got {got}", {"got": value_text(value)})
    return float(value)


INT64_MAX = 2**63 - 1


def integer(value: Any) -> Any:
    """Accept whole numbers only (YAML ``true`` or ``"5"`` are errors), within int64 (the arrays' type)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("not_a_number", "expected a whole number, got {got}", {"got": value_text(value)})
    if isinstance(value, float) and not math.isfinite(value):
        raise PydanticCustomError("not_finite", "expected a finite number, got {got}", {"got": value_text(value)})
    if abs(value) > INT64_MAX:
        raise PydanticCustomError("too_large", "{got} is too large (the limit is 2^63 - 1)", {"got": repr(value)})
    return value


def _plausible_date(value: dt.date) -> dt.date:
    """A price date between 2020 (before any LLM price list) and ten years from now."""
    latest = dt.date.today().replace(day=1) + dt.timedelta(days=3653)
    if not dt.date(2020, 1, 1) <= value <= latest:
        raise PydanticCustomError(
            "implausible_date",
            "{got} is not a plausible date for LLM prices (expected 2020-01-01 to {latest}); check the year",
            {"got": value.isoformat(), "latest": latest.isoformat()},
        )
    return value


PriceDate = Annotated[dt.date, AfterValidator(_plausible_date)]

Num = Annotated[float, BeforeValidator(number)]
PosNum = Annotated[float, BeforeValidator(number), Field(gt=0)]
NonNegNum = Annotated[float, BeforeValidator(number), Field(ge=0)]
Prob = Annotated[float, BeforeValidator(number), Field(ge=0, le=1)]

MAX_SECONDS = 10 * 365.25 * 86400.0  # durations beyond 10 years are a typo, not a plan


@dataclass(frozen=True)
class Problem:
    """A bad value found after parsing: where it is, what is wrong, how to fix it."""

    path: tuple[str | int, ...]
    message: str
    hint: str = ""

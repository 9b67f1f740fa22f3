"""The scenario: what a user writes, as validated, frozen pydantic models.

A scenario describes one agent (its steps), the models it calls (their speed and
prices), the variants to compare (speed tiers or model swaps), and how many
Monte-Carlo runs to do. Units everywhere: seconds, tokens, tokens per second and
USD per million tokens (``*_mtok``, as genai-prices names them).

This module holds the *shape* of the vocabulary (contract v1 of DESIGN.md §3) and
the rules a single field can check. Rules that need the whole scenario (a call
naming an undefined model, a variant naming an unknown step) live in
:func:`check_references`, which returns :class:`Problem` objects carrying the
dotted path of the offending value so that :mod:`agentsim.model.loading` can point at
the file and line.

Two spellings are accepted wherever a distribution is expected: a plain number
(a constant) or a mapping with exactly one family key plus optional ``min`` /
``max`` clip bounds, e.g. ``{lognormal: {median: 2, p90: 4.5}, max: 30}``.
"""

from __future__ import annotations

import datetime as dt
import difflib
import math
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    PrivateAttr,
    Tag,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

__all__ = [
    "DIST_FAMILIES",
    "STEP_KINDS",
    "Agent",
    "ContextSpec",
    "Dist",
    "ModelSpec",
    "PriceSpec",
    "Problem",
    "Scenario",
    "Step",
    "check_references",
    "suggest",
]


def suggest(word: str, options: list[str] | set[str] | tuple[str, ...]) -> str:
    """A ``did you mean 'x'?`` hint for a misspelt name, or an empty string."""
    close = difflib.get_close_matches(str(word), sorted(map(str, options)), n=3, cutoff=0.6)
    if not close:
        return ""
    return "did you mean " + " or ".join(f"'{c}'" for c in close) + "?"


class _Model(BaseModel):
    """Base of every scenario model (public name: ``StrictModel``): frozen, unknown keys rejected with a
    suggestion."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _reject_unknown_keys(cls, data: Any) -> Any:
        if isinstance(data, dict):
            allowed = set(cls.model_fields)
            allowed |= {f.alias for f in cls.model_fields.values() if f.alias}
            for key in data:
                if key not in allowed:
                    hint = suggest(key, allowed) or "allowed keys: " + ", ".join(sorted(allowed))
                    raise PydanticCustomError(
                        "unknown_key",
                        "unknown key '{key}' ({hint})",
                        {"key": str(key), "hint": hint},
                    )
        return data


StrictModel = _Model  # the public name, for models of other files (profiles, replay configs)


def _number(value: Any) -> Any:
    """Accept ints and floats only (YAML ``true`` or ``"5"`` are errors, not numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("not_a_number", "expected a number, got {got}", {"got": repr(value)})
    if isinstance(value, float) and not math.isfinite(value):
        raise PydanticCustomError("not_finite", "expected a finite number, got {got}", {"got": repr(value)})
    return float(value)


INT64_MAX = 2**63 - 1


def _integer(value: Any) -> Any:
    """Accept whole numbers only (YAML ``true`` or ``"5"`` are errors), within int64 (the arrays' type)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("not_a_number", "expected a whole number, got {got}", {"got": repr(value)})
    if isinstance(value, float) and not math.isfinite(value):
        raise PydanticCustomError("not_finite", "expected a finite number, got {got}", {"got": repr(value)})
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

Num = Annotated[float, BeforeValidator(_number)]
PosNum = Annotated[float, BeforeValidator(_number), Field(gt=0)]
NonNegNum = Annotated[float, BeforeValidator(_number), Field(ge=0)]
Prob = Annotated[float, BeforeValidator(_number), Field(ge=0, le=1)]


class ByModel(BaseModel):
    """A probability that depends on the model a named call runs on in each variant (contract v1.1).

    ``{by: act, opus: 0.7, haiku: 0.82, default: 0.75}``: in a variant where the call named ``act``
    runs on ``haiku`` the probability is 0.82. A ``MODEL@TIER`` key (``opus@fast``) takes precedence
    over ``MODEL``; ``default`` covers models not listed.
    """

    model_config = ConfigDict(
        extra="allow",
        frozen=True,
        defer_build=True,  # built with the scenario's schema, not at import (`agentsim prices` needs neither)
        json_schema_extra={
            "additionalProperties": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "description": "MODEL or MODEL@TIER: the probability when the named call runs on it.",
            }
        },
    )

    by: str = Field(description="Name of the call whose model (in each variant) decides the value.")
    default: Prob | None = Field(None, description="Value for models not listed.")

    @model_validator(mode="before")
    @classmethod
    def _values_are_probabilities(cls, data: Any) -> Any:
        if isinstance(data, dict):
            if "by" not in data:
                raise PydanticCustomError(
                    "by_model",
                    "a model-dependent probability needs 'by: CALL_NAME' beside its MODEL: p entries, e.g. {example}",
                    {"example": "{by: act, opus: 0.7, haiku: 0.82}"},
                )
            for key, value in data.items():
                if key in ("by", "default"):
                    continue
                value = _number(value)
                if not 0 <= value <= 1:
                    raise PydanticCustomError(
                        "by_model_p",
                        "'{key}': {value} is not a probability (0 to 1)",
                        {"key": str(key), "value": value},
                    )
        return data

    @property
    def table(self) -> dict[str, float]:
        """MODEL or MODEL@TIER -> probability (without ``by`` and ``default``)."""
        return {k: float(v) for k, v in (self.model_extra or {}).items()}

    def all_values(self) -> list[float]:
        return [*self.table.values(), *([self.default] if self.default is not None else [])]


def _p_tag(value: Any) -> str:
    return "by_model" if isinstance(value, dict | ByModel) else "number"


ModelProb = Annotated[Annotated[Prob, Tag("number")] | Annotated[ByModel, Tag("by_model")], Discriminator(_p_tag)]
"""A probability, or ``{by: CALL_NAME, MODEL: p, ...}`` (see :class:`ByModel`)."""


def max_p(p: float | ByModel) -> float:
    """The largest value a (possibly model-dependent) probability can take."""
    return max(p.all_values()) if isinstance(p, ByModel) else p


# --------------------------------------------------------------------------- distributions


class _DistBase(_Model):
    min: Num | None = Field(None, description="Clip draws below this value.")
    max: Num | None = Field(None, description="Clip draws above this value.")

    @model_validator(mode="after")
    def _min_le_max(self) -> _DistBase:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise PydanticCustomError("min_gt_max", "min ({lo}) is above max ({hi})", {"lo": self.min, "hi": self.max})
        return self


class ConstantDist(_DistBase):
    constant: Num = Field(description="The value.")


class UniformParams(_Model):
    low: Num = Field(description="Smallest value.")
    high: Num = Field(description="Largest value.")

    @model_validator(mode="after")
    def _ordered(self) -> UniformParams:
        if self.low > self.high:
            raise PydanticCustomError(
                "low_gt_high", "low ({lo}) is above high ({hi})", {"lo": self.low, "hi": self.high}
            )
        return self


class UniformDist(_DistBase):
    uniform: UniformParams


class NormalParams(_Model):
    mean: Num = Field(description="Mean.")
    sd: NonNegNum = Field(description="Standard deviation.")


class NormalDist(_DistBase):
    normal: NormalParams


class LognormalParams(_Model):
    """Either ``{median, p90}`` (how people quote latencies) or ``{mean, sd}``."""

    median: PosNum | None = Field(None, description="Median (50th percentile); give it with p90.")
    p90: PosNum | None = Field(None, description="90th percentile, above the median.")
    mean: PosNum | None = Field(None, description="Mean; give it with sd.")
    sd: PosNum | None = Field(None, description="Standard deviation.")

    @model_validator(mode="after")
    def _one_pair(self) -> LognormalParams:
        by_quantiles = self.median is not None and self.p90 is not None
        by_moments = self.mean is not None and self.sd is not None
        given = [k for k in ("median", "p90", "mean", "sd") if getattr(self, k) is not None]
        if by_quantiles == by_moments or len(given) != 2:
            raise PydanticCustomError(
                "lognormal_params",
                "lognormal needs exactly median and p90, or mean and sd; got: {given}",
                {"given": ", ".join(given) or "nothing"},
            )
        if by_quantiles and not self.p90 > self.median:  # type: ignore[operator]
            raise PydanticCustomError(
                "lognormal_p90",
                "lognormal p90 ({p90}) must be above its median ({median})",
                {"p90": self.p90, "median": self.median},
            )
        return self


class LognormalDist(_DistBase):
    lognormal: LognormalParams


class GammaParams(_Model):
    mean: PosNum = Field(description="Mean.")
    sd: PosNum = Field(description="Standard deviation.")


class GammaDist(_DistBase):
    gamma: GammaParams


class ExponentialParams(_Model):
    mean: PosNum = Field(description="Mean.")


class ExponentialDist(_DistBase):
    exponential: ExponentialParams


class ChoiceParams(_Model):
    values: list[Num] = Field(min_length=1, description="The values to draw from.")
    p: list[Prob] | None = Field(None, description="Probabilities, one per value, summing to 1.")

    @model_validator(mode="after")
    def _p_matches(self) -> ChoiceParams:
        if self.p is not None:
            if len(self.p) != len(self.values):
                raise PydanticCustomError(
                    "choice_p_len",
                    "choice has {nv} values but {np} probabilities",
                    {"nv": len(self.values), "np": len(self.p)},
                )
            total = math.fsum(self.p)
            if abs(total - 1.0) > 1e-9:
                raise PydanticCustomError("p_sum", "probabilities sum to {total}, not 1", {"total": f"{total:.6g}"})
        return self


class ChoiceDist(_DistBase):
    choice: ChoiceParams


class EmpiricalParams(_Model):
    """Resample observed values: inline ``values`` or a CSV ``file`` and its ``column``."""

    values: list[Num] | None = Field(None, min_length=1, description="Observed values, drawn with equal probability.")
    file: str | None = Field(None, description="CSV file, relative to the scenario file.")
    column: str | None = Field(None, description="Column of the CSV file holding the values.")

    @model_validator(mode="after")
    def _one_source(self) -> EmpiricalParams:
        if (self.values is None) == (self.file is None):
            raise PydanticCustomError("empirical_source", "empirical needs either values or file (with column)", {})
        if self.file is not None and self.column is None:
            raise PydanticCustomError("empirical_column", "empirical file needs a column name", {})
        return self


class EmpiricalDist(_DistBase):
    empirical: EmpiricalParams


DIST_FAMILIES = ("constant", "uniform", "normal", "lognormal", "gamma", "exponential", "choice", "empirical")


def _dist_tag(value: Any) -> str | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "number"
    if isinstance(value, dict):
        fam = [k for k in value if k in DIST_FAMILIES]
        return fam[0] if len(fam) == 1 else None
    if isinstance(value, _DistBase):
        return next(f for f in DIST_FAMILIES if hasattr(value, f))
    return None


def _check_dist_shape(value: Any) -> Any:
    if isinstance(value, dict):
        value = _hoist_clip(value)
    if isinstance(value, bool | str | list) or value is None:
        raise PydanticCustomError(
            "bad_distribution",
            "expected a number or a distribution such as {example}, got {got}",
            {"got": repr(value), "example": "{lognormal: {median: 2, p90: 5}}"},
        )
    if isinstance(value, dict):
        fams = [k for k in value if k in DIST_FAMILIES]
        others = [k for k in value if k not in DIST_FAMILIES and k not in ("min", "max")]
        if len(fams) > 1:
            raise PydanticCustomError(
                "bad_distribution",
                "a distribution has one family key, got {fams}",
                {"fams": ", ".join(fams)},
            )
        if not fams:
            bad = others[0] if others else ""
            hint = suggest(bad, DIST_FAMILIES) if bad else ""
            raise PydanticCustomError(
                "bad_distribution",
                "unknown distribution family '{bad}' ({hint})",
                {"bad": bad, "hint": hint or "families: " + ", ".join(DIST_FAMILIES)},
            )
    return value


def _hoist_clip(value: dict) -> dict:
    """Accept ``{normal: {mean: 60, sd: 10, min: 10}}`` as well as ``{normal: {...}, min: 10}``."""
    fams = [k for k in value if k in DIST_FAMILIES]
    if len(fams) != 1 or not isinstance(value[fams[0]], dict):
        return value
    inner = dict(value[fams[0]])
    out = dict(value)
    for bound in ("min", "max"):
        if bound in inner:
            if bound in out:
                raise PydanticCustomError(
                    "clip_twice", "{bound} is given twice (inside and beside {fam})", {"bound": bound, "fam": fams[0]}
                )
            out[bound] = inner.pop(bound)
    out[fams[0]] = inner
    return out


Dist = Annotated[
    Annotated[Num, Tag("number")]
    | Annotated[ConstantDist, Tag("constant")]
    | Annotated[UniformDist, Tag("uniform")]
    | Annotated[NormalDist, Tag("normal")]
    | Annotated[LognormalDist, Tag("lognormal")]
    | Annotated[GammaDist, Tag("gamma")]
    | Annotated[ExponentialDist, Tag("exponential")]
    | Annotated[ChoiceDist, Tag("choice")]
    | Annotated[EmpiricalDist, Tag("empirical")],
    Discriminator(_dist_tag),
    BeforeValidator(_check_dist_shape),
]
"""A number (constant) or a distribution mapping with one family key."""


class ByModelCount(BaseModel):
    """A repeat count that depends on the model a named call runs on in each variant.

    ``{by: act, opus: 30, haiku: {uniform: {low: 35, high: 45}}, default: 40}``: each value is a number or
    a distribution; keys as for a model-dependent probability (``MODEL@TIER`` before ``MODEL``, then
    ``default``). Every variant transforms the same draws (common random numbers).
    """

    model_config = ConfigDict(
        extra="allow",
        frozen=True,
        defer_build=True,  # built with the scenario's schema, not at import (`agentsim prices` needs neither)
        json_schema_extra={
            "additionalProperties": {
                "x-distribution": True,  # agentsim.docs_gen makes this a reference to its Distribution
                "description": "MODEL or MODEL@TIER: the count when the named call runs on it.",
            }
        },
    )

    by: str = Field(description="Name of the call whose model (in each variant) decides the count.")
    default: Dist | None = Field(None, description="Count for models not listed.")

    @model_validator(mode="before")
    @classmethod
    def _values_are_distributions(cls, data: Any) -> Any:
        from pydantic import TypeAdapter, ValidationError

        if isinstance(data, dict):
            data = dict(data)
            adapter = TypeAdapter(Dist)
            for key, value in list(data.items()):
                if key in ("by", "default"):
                    continue
                try:
                    data[key] = adapter.validate_python(value)
                except ValidationError as exc:
                    raise PydanticCustomError(
                        "by_model_count",
                        "'{key}': {msg}",
                        {"key": str(key), "msg": exc.errors()[0]["msg"]},
                    ) from None
        return data

    @property
    def table(self) -> dict[str, Any]:
        """MODEL or MODEL@TIER -> count (a number or distribution), without ``by`` and ``default``."""
        return dict(self.model_extra or {})


def _count_tag(value: Any) -> str:
    return "by_model" if (isinstance(value, dict) and "by" in value) or isinstance(value, ByModelCount) else "dist"


Count = Annotated[Annotated[Dist, Tag("dist")] | Annotated[ByModelCount, Tag("by_model")], Discriminator(_count_tag)]
"""A repeat count: a number or distribution, or ``{by: CALL_NAME, MODEL: count, ...}``."""

# --------------------------------------------------------------------------- prices


class Tier(_Model):
    start: Annotated[int, BeforeValidator(_integer), Field(ge=0)] = Field(
        description="Tier applies when total input tokens exceed this."
    )
    price: NonNegNum = Field(description="USD per million tokens for every token of this kind in the call.")


class TieredPrice(_Model):
    """Long-context pricing: ``{base: 3, tiers: [{start: 200000, price: 6}]}``.

    genai-prices semantics: the call's total input tokens decide the tier, and
    that tier's rate applies to *all* tokens of this kind in the call.
    """

    base: NonNegNum = Field(description="USD per million tokens up to the first tier.")
    tiers: list[Tier] = Field(min_length=1, description="Long-context tiers, by increasing start.")

    @field_validator("tiers")
    @classmethod
    def _ascending(cls, tiers: list[Tier]) -> list[Tier]:
        starts = [t.start for t in tiers]
        if starts != sorted(starts) or len(set(starts)) != len(starts):
            raise PydanticCustomError("tiers_order", "tier starts must be strictly increasing, got {s}", {"s": starts})
        return tiers


def _rate_tag(value: Any) -> str:
    return "tiered" if isinstance(value, dict | TieredPrice) else "number"


# A price: a number, or a mapping of long-context tiers (one error message either way, not one per form).
Rate = Annotated[Annotated[NonNegNum, Tag("number")] | Annotated[TieredPrice, Tag("tiered")], Discriminator(_rate_tag)]

PRICE_FIELDS = (
    "input_mtok",
    "output_mtok",
    "cache_read_mtok",
    "cache_write_mtok",
    "cache_write_1h_mtok",
    "output_reasoning_mtok",
    "requests_kcount",
)


class PriceSpec(_Model):
    """Explicit USD per million tokens, or a genai-prices ``catalog`` reference.

    Explicit fields given alongside ``catalog`` override that field of the
    catalog price (negotiated rates).
    """

    catalog: str | None = Field(None, description="genai-prices 'provider/model', e.g. anthropic/claude-opus-4-8")
    context: dict[str, str] | None = Field(
        None, description="genai-prices price context, e.g. {speed: fast} or {service_tier: flex}"
    )
    date: PriceDate | None = Field(None, description="Price as of this date (YYYY-MM-DD); default: prices_as_of.")
    input_mtok: Rate | None = Field(None, description="Uncached input tokens.")
    output_mtok: Rate | None = Field(None, description="Visible output tokens.")
    cache_read_mtok: Rate | None = Field(None, description="Prompt-cache reads (default: input_mtok).")
    cache_write_mtok: Rate | None = Field(None, description="5-minute prompt-cache writes (default: input_mtok).")
    cache_write_1h_mtok: Rate | None = Field(None, description="1-hour cache writes (default: cache_write_mtok).")
    output_reasoning_mtok: Rate | None = Field(None, description="Defaults to output_mtok.")
    requests_kcount: Rate | None = Field(None, description="USD per 1000 requests (a fee per call).")
    source: str | None = Field(
        None,
        description="Where these prices come from and when, for readers (e.g. 'Anthropic pricing page, Feb 2026'); "
        "shown next to every verdict that uses them.",
    )

    @model_validator(mode="after")
    def _something_given(self) -> PriceSpec:
        if self.catalog is None:
            if self.input_mtok is None or self.output_mtok is None:
                raise PydanticCustomError(
                    "price_incomplete",
                    "an explicit price needs at least input_mtok and output_mtok (or name a catalog price: {example})",
                    {"example": "{catalog: provider/model}"},
                )
            if self.context is not None or self.date is not None:
                raise PydanticCustomError("price_context", "context and date only apply to a catalog price", {})
        return self


# --------------------------------------------------------------------------- models


class StallSpec(_Model):
    """A pause in a model's stream: with probability ``p`` a call's stream stops once, for ``seconds``."""

    p: Prob = Field(0.0, description="Probability that a call's stream stalls (once).")
    seconds: Dist = Field(0.0, description="Length of the stall, drawn per call; it adds to the call's time.")


class StreamSpec(_Model):
    """How a model's answer arrives (contract v1.1): chunking, uneven gaps, stalls.

    Without it a call streams evenly: visible token 1 at TTFT (+ reasoning decode), the last at
    the call's end. Chunking and jitter never move the call's end; a stall does (docs/concepts.md).
    """

    chunk_tokens: Dist = Field(1.0, description="Tokens per delivered chunk, drawn per chunk (rounded, at least 1).")
    jitter_cv: NonNegNum = Field(
        0.0, description="Coefficient of variation of the gaps between tokens (0: even); the call's end stays."
    )
    stall: StallSpec | None = Field(None, description="A pause of the stream, with its probability per call.")


class SpeedSpec(_Model):
    """A speed tier of a model (``fast``, ``priority``...): a speed effect and a price."""

    output_tps_x: PosNum = Field(1.0, description="Multiplies output tokens per second.")
    ttft_x: PosNum = Field(1.0, description="Multiplies the drawn TTFT (not the prefill term).")
    price: PriceSpec | None = Field(
        None, description="This tier's price table (default: the model's own price, unless price_x is given)."
    )
    price_x: PosNum | None = Field(None, description="Or: the model's price multiplied by this factor.")
    stream: StreamSpec | None = Field(None, description="How this tier streams (replaces the model's stream).")

    @model_validator(mode="after")
    def _priced(self) -> SpeedSpec:
        if self.price is not None and self.price_x is not None:
            raise PydanticCustomError(
                "tier_price", "give price (a table) or price_x (a multiple of the model's price), not both", {}
            )
        return self


class CacheSpec(_Model):
    ttl: Literal["5m", "1h"] = Field("5m", description="Prompt-cache time to live.")
    scope: Literal["context", "model"] | None = Field(
        None,
        description="Context caches only. model (default): each model and speed tier has its own cache, as "
        "providers do (switching model or fast/standard starts a new cache); context: a call reads what the "
        "previous call of the same context sent, whatever its model or tier (DESIGN.md §4 read literally; the "
        "default before 0.x, see CHANGELOG.md).",
    )


HOURS_PER_DAY = 24


class HourlyFactors(_Model):
    """A factor for each hour of the day (hour 0 is 00:00-01:00 of the simulated clock)."""

    hourly: list[PosNum] = Field(description="24 factors, one per hour of the day, from 00:00-01:00 to 23:00-24:00.")
    curve: Literal["steps", "linear"] = Field(
        "steps",
        description="steps: an hour's factor holds for the whole hour; linear: straight lines between the "
        "hours' midpoints (hh:30), wrapping from 23:30 to 00:30.",
    )

    @field_validator("hourly")
    @classmethod
    def _day(cls, hourly: list[float]) -> list[float]:
        if len(hourly) != HOURS_PER_DAY:
            raise PydanticCustomError(
                "hourly_length",
                "hourly takes 24 factors, one per hour from 00:00-01:00 to 23:00-24:00; got {got}",
                {"got": len(hourly)},
            )
        return hourly


class TimeOfDaySpec(_Model):
    """Provider conditions by time of day: factors that depend on the simulated clock when a call starts.

    The clock starts at ``workload.start``; a call's factor is read at the instant the request is sent
    (after any wait for a slot or a rate budget) and holds for the whole call, even one that runs into
    the next hour (docs/concepts.md).
    """

    ttft_x: HourlyFactors | None = Field(None, description="Multiplies the drawn TTFT, by the hour a call starts.")
    output_tps_x: HourlyFactors | None = Field(
        None, description="Multiplies the output speed, by the hour a call starts."
    )


class ConditionsSpec(_Model):
    """Provider conditions: factors drawn once per run and shared by all that run's calls to the model.

    A slow afternoon makes every call of a run slow together, which independent per-call draws average
    away. ``ttft_x`` multiplies the drawn TTFT (not the prefill term, like a speed tier's ``ttft_x``);
    ``output_tps_x`` multiplies the output speed. They apply to every speed tier of the model.
    ``time_of_day`` adds factors that follow the simulated clock (slow hours), for workloads over hours.
    """

    ttft_x: Dist = Field(1.0, description="Multiplies the drawn TTFT of every call to this model in a run.")
    output_tps_x: Dist = Field(1.0, description="Multiplies the output speed of every call to this model in a run.")
    time_of_day: TimeOfDaySpec | None = Field(
        None, description="Factors by hour of the simulated clock (needs workload.start), applied at a call's start."
    )


class UncertaintySpec(_Model):
    """How uncertain a model's speeds are: factors drawn once per parameter set (agentsim.param_uncertainty).

    Used only when the scenario asks for ``uncertainty: parameters``; a constant 1 (the default) is no
    uncertainty.
    """

    ttft_x: Dist = Field(1.0, description="Multiplies the model's drawn TTFT, one draw per parameter set.")
    output_tps_x: Dist = Field(1.0, description="Multiplies the model's output speed, one draw per parameter set.")
    prefill_tps_x: Dist = Field(1.0, description="Multiplies the model's prefill speed, one draw per parameter set.")


class RetrySpec(_Model):
    """How a client retries a failed attempt (HTTP 429 rate limit, 5xx error, timeout).

    Defaults are the official Anthropic and OpenAI SDKs': 3 attempts in all, exponential back-off
    starting at 0.5 s, capped at 8 s, with full jitter, honouring a 429's retry-after time.
    """

    max_attempts: Annotated[int, BeforeValidator(_integer), Field(ge=1, le=50)] = Field(
        3, description="Attempts in all (1 = no retry)."
    )
    backoff_base: NonNegNum = Field(0.5, description="Seconds before the first retry (doubling each time).")
    backoff_cap: NonNegNum = Field(8.0, description="Longest back-off, in seconds.")
    jitter: Literal["full", "none"] = Field("full", description="full: sleep uniform(0, back-off).")
    honour_retry_after: bool = Field(True, description="After a 429, wait the limiter's retry-after time.")


class FallbackSpec(_Model):
    model: str = Field(description="A key of models to use once this one has failed `after` times.")
    after: Annotated[int, BeforeValidator(_integer), Field(ge=1)] = Field(
        description="Failed attempts on this model before falling back."
    )


class ModelSpec(_Model):
    price: PriceSpec = Field(description="The model's price table (its standard speed tier).")
    profile: str | None = Field(
        None, description="A speed profile (bundled name or file) that fills ttft, output_tps and prefill_tps."
    )
    ttft: Dist = Field(description="Seconds to first token, excluding prefill of uncached input.")
    output_tps: Dist = Field(description="Output tokens per second, drawn per call.")
    prefill_tps: PosNum | None = Field(
        None, description="Uncached input tokens processed per second; adds input/prefill_tps to TTFT."
    )
    speeds: dict[str, SpeedSpec] = Field(default_factory=dict, description="Speed tiers by name (fast, priority...).")
    cache: CacheSpec | None = Field(None, description="This model's prompt-cache TTL, overriding the context's.")
    error_rate: Prob = Field(0.0, description="Probability an attempt fails (HTTP 5xx) at its first token.")
    timeout: PosNum | None = Field(None, description="Seconds after which the client cancels an attempt.")
    retry: RetrySpec | None = Field(None, description="Retry policy (default: the official SDKs').")
    fallback: FallbackSpec | None = Field(None, description="Switch to another model after repeated failures.")
    stream: StreamSpec | None = Field(None, description="How the answer arrives (default: evenly, one token a time).")
    conditions: ConditionsSpec | None = Field(
        None, description="Provider conditions: TTFT and speed factors drawn once per run, shared by its calls."
    )
    uncertainty: UncertaintySpec | None = Field(
        None, description="How uncertain the speeds are (factors per parameter set, for uncertainty: parameters)."
    )

    @field_validator("speeds")
    @classmethod
    def _no_standard(cls, speeds: dict[str, SpeedSpec]) -> dict[str, SpeedSpec]:
        if "standard" in speeds:
            raise PydanticCustomError(
                "standard_tier", "'standard' is the model itself; do not declare it under speeds", {}
            )
        return speeds


# --------------------------------------------------------------------------- streaming consumers


class ReaderSpec(_Model):
    """A person reading the answer as it streams, at a fixed pace (1 token = 0.75 words)."""

    tokens_per_s: PosNum | None = Field(None, description="Reading pace in tokens per second.")
    words_per_min: PosNum | None = Field(None, description="Or: reading pace in words per minute.")

    @model_validator(mode="after")
    def _one(self) -> ReaderSpec:
        if (self.tokens_per_s is None) == (self.words_per_min is None):
            raise PydanticCustomError(
                "reader_pace",
                "a reader takes one of tokens_per_s or words_per_min, e.g. {example}",
                {"example": "{words_per_min: 250}"},
            )
        return self

    @property
    def rate(self) -> float:
        """Reading pace in tokens per second."""
        return self.tokens_per_s if self.tokens_per_s is not None else self.words_per_min / 0.75 / 60.0


class SpeechSpec(_Model):
    """Text-to-speech: each complete sentence is spoken after the previous one."""

    first_audio: Dist = Field(
        0.0, description="Seconds from a sentence's last token to its first audio (drawn per call)."
    )
    tokens_per_s: PosNum = Field(description="Speaking rate in tokens per second.")
    sentence_tokens: Dist = Field(20.0, description="Tokens per sentence, drawn per sentence (rounded, at least 1).")


class RenderSpec(_Model):
    """A generated interface that can first draw once it has ``tokens`` tokens (or ``all`` of them)."""

    tokens: Annotated[int, Field(ge=1)] | Literal["all"] = Field(description="Tokens needed before the first render.")


class QoeSpec(_Model):
    """The user's expectation for the Andes QoE score (arXiv 2404.16283)."""

    expected_ttft: NonNegNum = Field(1.0, description="Seconds the user expects to wait for the first token.")
    tokens_per_s: PosNum | None = Field(
        None, description="Pace the user digests tokens at (default: the reader's or speaker's pace, else 5)."
    )


class ConsumerSpec(_Model):
    """Who consumes a call's output as it streams: one of reader, speech, render."""

    reader: ReaderSpec | None = Field(None, description="A person reading at a pace.")
    speech: SpeechSpec | None = Field(None, description="Text-to-speech, sentence by sentence.")
    render: RenderSpec | None = Field(None, description="An interface drawn once enough tokens arrived.")
    qoe: QoeSpec | None = Field(None, description="Expected TTFT and pace for the QoE score.")

    @model_validator(mode="after")
    def _one(self) -> ConsumerSpec:
        given = [k for k in ("reader", "speech", "render") if getattr(self, k) is not None]
        if len(given) != 1:
            raise PydanticCustomError(
                "consumer_kind",
                "a consumer is exactly one of reader, speech or render, e.g. {example}; got: {given}",
                {"example": "{reader: {words_per_min: 250}}", "given": ", ".join(given) or "none"},
            )
        return self

    @property
    def kind(self) -> str:
        return next(k for k in ("reader", "speech", "render") if getattr(self, k) is not None)


class InterruptSpec(_Model):
    """The user cuts the answer off (barge-in): with probability ``p``, a time after the first token or audio."""

    p: Prob = Field(description="Probability that the call is interrupted.")
    after_first_token: Dist | None = Field(None, description="Seconds after the first visible token.")
    after_first_audio: Dist | None = Field(None, description="Or: seconds after the first audio (speech consumer).")

    @model_validator(mode="after")
    def _one(self) -> InterruptSpec:
        if (self.after_first_token is None) == (self.after_first_audio is None):
            raise PydanticCustomError(
                "interrupt_when", "an interrupt takes one of after_first_token or after_first_audio", {}
            )
        return self


# --------------------------------------------------------------------------- steps


class CallSpec(_Model):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    model: str | None = Field(None, description="A key of models; may be omitted when there is only one.")
    input: Dist = Field(0.0, description="New tokens this call adds (on top of the context).")
    output: Dist = Field(description="Output tokens (visible; joins the context).")
    reasoning: Dist = Field(0.0, description="Reasoning tokens: decode time, billed, not in the context.")
    speed: str | None = Field(None, description="Speed tier of the model for this call.")
    consumer: ConsumerSpec | None = Field(
        None, description="Who consumes the streamed answer (default: the scenario's consumer)."
    )
    interrupt: InterruptSpec | None = Field(None, description="The user may cut the answer off.")


class ToolSpec(_Model):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    latency: Dist = Field(description="Seconds the tool runs.")
    output: Dist = Field(0.0, description="Tokens the tool returns into the context.")


class WaitSpec(_Model):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    latency: Dist = Field(description="Seconds of human or fixed delay.")


class KJoin(_Model):
    k: Annotated[int, BeforeValidator(_integer), Field(ge=1)] = Field(
        description="The join completes when k branches have finished."
    )


Join = Literal["all", "any"] | KJoin


class ParallelSpec(_Model):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    branches: list[Branch] = Field(min_length=1, description="Branches: each one step, or a list of steps in order.")
    join: Join = Field("all", description="all, any (the first to finish), or {k: N} (the first N).")


class FanoutSpec(_Model):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    n: Dist = Field(description="Number of parallel copies (rounded).")
    steps: list[Step] = Field(min_length=1, description="The steps each copy runs, in order.")
    join: Join = Field("all", description="all, any (the first to finish), or {k: N} (the first N).")


class RepeatSpec(_Model):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    times: Count | None = Field(
        None, description="Number of iterations (rounded; may depend on a call's model: {by: CALL, MODEL: n})."
    )
    continue_p: ModelProb | None = Field(
        None, description="After each iteration another follows with this p (may depend on a call's model)."
    )
    max: Annotated[int, BeforeValidator(_integer), Field(ge=1)] | None = Field(
        None, description="Cap on iterations with continue_p."
    )
    steps: list[Step] = Field(min_length=1, description="The steps of one iteration, in order.")

    @model_validator(mode="after")
    def _ends(self) -> RepeatSpec:
        if (self.times is None) == (self.continue_p is None):
            raise PydanticCustomError("repeat_count", "repeat needs exactly one of times or continue_p (with max)", {})
        if self.times is not None and self.max is not None:
            raise PydanticCustomError("repeat_max", "max goes with continue_p, not with times", {})
        if self.continue_p is not None and max_p(self.continue_p) >= 1 and self.max is None:
            raise PydanticCustomError(
                "repeat_never_ends",
                "this repeat can never end: continue_p is {p} and there is no max; set continue_p below 1 or add max",
                {"p": max_p(self.continue_p)},
            )
        return self


class ChooseOption(_Model):
    p: ModelProb = Field(
        description="Probability of this option (the options' p sum to 1; may depend on a call's model)."
    )
    steps: list[Step] = Field(default_factory=list, description="The steps of this option (none: skip).")
    name: str | None = Field(None, description="Option name.")


class ChooseSpec(_Model):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    options: list[ChooseOption] = Field(min_length=1, description="One option is drawn per run by its p.")

    @model_validator(mode="after")
    def _sums_to_one(self) -> ChooseSpec:
        if any(isinstance(o.p, ByModel) for o in self.options):
            return self  # checked per variant when the plan is compiled
        total = math.fsum(o.p for o in self.options)
        if abs(total - 1.0) > 1e-9:
            raise PydanticCustomError("p_sum", "option probabilities sum to {total}, not 1", {"total": f"{total:.6g}"})
        return self


class AfterTokens(_Model):
    tokens: Annotated[int, Field(ge=1)] = Field(description="Tokens the previous call must have streamed.")


class PipelineSpec(_Model):
    """Steps that start on the previous call's partial output, alongside the rest of its stream."""

    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    after: AfterTokens | Literal["first_sentence"] = Field(
        description="Start once the previous call has streamed {tokens: N} tokens, or its first_sentence."
    )
    sentence_tokens: Dist | None = Field(
        None, description="Sentence length for first_sentence (default: the call's speech consumer's, else 20)."
    )
    steps: list[Step] = Field(min_length=1, description="The steps to run, in order.")


class FailSpec(_Model):
    """The run stops here as a failed run with probability ``p`` (contract v1.1)."""

    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    p: ModelProb = Field(description="Probability that the run fails at this step (may depend on a call's model).")


class SubagentSpec(_Model):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    workflow: str = Field(description="A key of the top-level workflows.")
    output: Dist = Field(0.0, description="Tokens the subagent's answer adds to the caller's context.")


class CallStep(_Model):
    call: CallSpec


class ToolStep(_Model):
    tool: ToolSpec


class WaitStep(_Model):
    wait: WaitSpec


class ParallelStep(_Model):
    parallel: list[Branch] | ParallelSpec

    @field_validator("parallel")
    @classmethod
    def _non_empty(cls, v: Any) -> Any:
        if isinstance(v, list) and not v:
            raise PydanticCustomError("empty_parallel", "parallel needs at least one branch", {})
        return v

    @property
    def spec(self) -> ParallelSpec:
        if isinstance(self.parallel, ParallelSpec):
            return self.parallel
        # the branches are valid already (validated as this step's list, non-empty): wrap them without
        # validating them again, which would build ParallelSpec's whole schema a second time (~20 ms)
        return ParallelSpec.model_construct(branches=self.parallel)


class FanoutStep(_Model):
    fanout: FanoutSpec


class RepeatStep(_Model):
    repeat: RepeatSpec


class ChooseStep(_Model):
    choose: ChooseSpec


class SubagentStep(_Model):
    subagent: SubagentSpec


class PipelineStep(_Model):
    pipeline: PipelineSpec


class FailStep(_Model):
    fail: FailSpec


STEP_KINDS = ("call", "tool", "wait", "parallel", "fanout", "repeat", "choose", "subagent", "pipeline", "fail")


def _check_step_shape(value: Any) -> Any:
    if isinstance(value, _Model):
        return value
    if not isinstance(value, dict) or len(value) != 1:
        got = list(value) if isinstance(value, dict) else type(value).__name__
        raise PydanticCustomError(
            "bad_step",
            "a step is a mapping with exactly one of {kinds}; got {got}",
            {"kinds": ", ".join(STEP_KINDS), "got": got},
        )
    (kind,) = value
    if kind not in STEP_KINDS:
        hint = suggest(kind, STEP_KINDS) or "step types: " + ", ".join(STEP_KINDS)
        raise PydanticCustomError(
            "unknown_step", "unknown step type '{kind}' ({hint})", {"kind": str(kind), "hint": hint}
        )
    return value


def _step_tag(value: Any) -> str | None:
    if isinstance(value, dict):
        return next(iter(value), None)
    for kind in STEP_KINDS:
        if hasattr(value, kind):
            return kind
    return None


Step = Annotated[
    Annotated[CallStep, Tag("call")]
    | Annotated[ToolStep, Tag("tool")]
    | Annotated[WaitStep, Tag("wait")]
    | Annotated[ParallelStep, Tag("parallel")]
    | Annotated[FanoutStep, Tag("fanout")]
    | Annotated[RepeatStep, Tag("repeat")]
    | Annotated[ChooseStep, Tag("choose")]
    | Annotated[SubagentStep, Tag("subagent")]
    | Annotated[PipelineStep, Tag("pipeline")]
    | Annotated[FailStep, Tag("fail")],
    Discriminator(_step_tag),
    BeforeValidator(_check_step_shape),
]
"""One step: a mapping with exactly one step-type key."""


def _branch_tag(value: Any) -> str:
    return "steps" if isinstance(value, list) else "step"


Branch = Annotated[
    Annotated[Step, Tag("step")] | Annotated[list[Step], Tag("steps")],
    Discriminator(_branch_tag),
]
"""A parallel branch: one step, or a list of steps run in order."""


# --------------------------------------------------------------------------- agent and scenario


class ContextSpec(_Model):
    system: Annotated[int, BeforeValidator(_integer), Field(ge=0)] = Field(
        0, description="Tokens every call re-sends first."
    )
    grows: bool = Field(False, description="Calls' new input and output, and tool output, join the context.")
    cache: bool | CacheSpec = Field(False, description="Prompt caching: true, false, or {ttl: 5m|1h}.")

    @property
    def cache_on(self) -> bool:
        return self.cache is not False

    @property
    def cache_ttl(self) -> str | None:
        return self.cache.ttl if isinstance(self.cache, CacheSpec) else None

    @property
    def cache_per_model(self) -> bool:
        """One cache per (model, speed tier), as providers keep them: the default; ``scope: context`` opts out."""
        return not (isinstance(self.cache, CacheSpec) and self.cache.scope == "context")


class Agent(_Model):
    context: ContextSpec = Field(default_factory=ContextSpec, description="Context growth and prompt caching.")
    steps: list[Step] = Field(min_length=1, description="The agent's steps, run in order.")


class Workflow(_Model):
    context: ContextSpec | None = Field(
        None, description="The subagent's own context (default: an empty one, as for an agent without context)."
    )
    steps: list[Step] = Field(min_length=1, description="The workflow's steps, run in order.")


class VariantSpec(_Model):
    speed: dict[str, str] = Field(default_factory=dict, description="Model or step name -> speed tier.")
    model: dict[str, str] = Field(default_factory=dict, description="Model or step name -> model.")
    description: str | None = Field(None, description="What the variant is, for readers.")


class ValueOfTime(_Model):
    usd_per_hour: NonNegNum = Field(description="What an hour of waiting for the agent is worth.")


MAX_SECONDS = 10 * 365.25 * 86400.0  # durations beyond 10 years are a typo, not a plan


def _clock_time(value: Any) -> float:
    """``"HH:MM"`` or ``"HH:MM:SS"`` (00:00 to 23:59:59) as seconds after midnight."""
    if isinstance(value, bool) or not isinstance(value, str):
        hint = " (YAML reads an unquoted 14:00 as the number 840: put the time in quotes)"
        raise PydanticCustomError(
            "clock_time",
            'expected a clock time in quotes such as "09:00" or "14:30:00", got {got}'
            + (hint if isinstance(value, int) and not isinstance(value, bool) else ""),
            {"got": repr(value)},
        )
    parts = value.strip().split(":")
    ok = len(parts) in (2, 3) and all(p.isdigit() and len(p) == (2 if i else len(p)) for i, p in enumerate(parts))
    ok = ok and len(parts[0]) <= 2
    h, m, sec = ([int(p) for p in parts] + [0])[:3] if ok else (0, 0, 0)
    if not ok or h > 23 or m > 59 or sec > 59:
        raise PydanticCustomError(
            "clock_time",
            'expected a clock time "HH:MM" or "HH:MM:SS" from "00:00" to "23:59:59", got {got}',
            {"got": repr(value)},
        )
    return float(h * 3600 + m * 60 + sec)


ClockTime = Annotated[
    float,
    BeforeValidator(_clock_time),
    WithJsonSchema({"type": "string", "pattern": r"^[0-2]?[0-9]:[0-5][0-9](:[0-5][0-9])?$"}),
]


class Duration(_Model):
    """A span of time written as ``{seconds: N}``, ``{minutes: N}`` or ``{hours: N}`` (one of them)."""

    seconds: NonNegNum | None = Field(None, description="Seconds.")
    minutes: NonNegNum | None = Field(None, description="Minutes.")
    hours: NonNegNum | None = Field(None, description="Hours.")
    days: NonNegNum | None = Field(None, description="Days.")

    @model_validator(mode="after")
    def _one(self) -> Duration:
        given = [k for k in ("seconds", "minutes", "hours", "days") if getattr(self, k) is not None]
        if len(given) != 1:
            raise PydanticCustomError(
                "duration",
                "a duration is one of seconds, minutes, hours or days, e.g. {example}",
                {"example": "{minutes: 10}"},
            )
        if self.total_seconds > MAX_SECONDS:
            raise PydanticCustomError(
                "duration_too_long",
                "a duration of {got} is longer than 10 years: shorten it (simulated time is in seconds)",
                {"got": f"{getattr(self, given[0]):g} {given[0]}"},
            )
        return self

    @property
    def total_seconds(self) -> float:
        for k, f in (("seconds", 1.0), ("minutes", 60.0), ("hours", 3600.0), ("days", 86400.0)):
            v = getattr(self, k)
            if v is not None:
                return v * f
        raise AssertionError  # pragma: no cover


class LimitSpec(_Model):
    """A provider account (or a client-side limiter) shared by the calls of some models."""

    models: list[str] = Field(min_length=1, description="Models (or model@tier) that share this account.")
    concurrency: Annotated[int, BeforeValidator(_integer), Field(ge=1)] | None = Field(
        None, description="Requests in flight at once."
    )
    rpm: PosNum | None = Field(None, description="Requests per minute (a token bucket).")
    input_tpm: PosNum | None = Field(None, description="Input tokens per minute (a token bucket).")
    output_tpm: PosNum | None = Field(None, description="Output tokens per minute (a token bucket).")
    policy: Literal["queue", "reject"] = Field(
        "queue",
        description="queue: a call waits for a slot and for rate budget (DESIGN.md §4; a client-side limiter); "
        "reject: HTTP 429 when over a limit, then the retry policy (how providers behave).",
    )
    count_cache_reads: bool = Field(
        False, description="Count cache reads towards input_tpm (Anthropic does not; OpenAI does)."
    )


class Arrivals(_Model):
    per_hour: PosNum = Field(description="Poisson arrivals of new agent runs per hour.")


class Volume(_Model):
    """How many runs a month, for spend sizing: ``runs_per_month``, or ``runs_per_day``, or ``seats`` ×
    ``runs_per_seat_per_day``; a day count is ``working_days`` per month (default 30, calendar days)."""

    runs_per_month: PosNum | None = Field(None, description="Agent runs per month.")
    runs_per_day: PosNum | None = Field(None, description="Agent runs per day (times working_days).")
    seats: PosNum | None = Field(None, description="People (or agents) using it; with runs_per_seat_per_day.")
    runs_per_seat_per_day: PosNum | None = Field(None, description="Runs per seat per working day.")
    working_days: Annotated[float, Field(gt=0, le=31)] | None = Field(
        None, description="Days of use per month (default 30: every calendar day; 21 for weekdays)."
    )

    @model_validator(mode="after")
    def _one(self) -> Volume:
        if (self.seats is None) != (self.runs_per_seat_per_day is None):
            raise PydanticCustomError("volume", "seats and runs_per_seat_per_day go together", {})
        given = [self.runs_per_month is not None, self.runs_per_day is not None, self.seats is not None]
        if sum(given) != 1:
            raise PydanticCustomError(
                "volume", "volume takes one of runs_per_month, runs_per_day or seats with runs_per_seat_per_day", {}
            )
        if self.runs_per_month is not None and self.working_days is not None:
            raise PydanticCustomError("volume", "working_days applies to runs_per_day or seats, not runs_per_month", {})
        return self

    @property
    def per_month(self) -> float:
        if self.runs_per_month is not None:
            return self.runs_per_month
        days = self.working_days if self.working_days is not None else 30.0
        per_day = self.runs_per_day if self.runs_per_day is not None else self.seats * self.runs_per_seat_per_day
        return per_day * days


class Workload(_Model):
    """Many agents over time: open (Poisson ``arrivals``) or closed (``concurrent`` agents)."""

    arrivals: Arrivals | None = Field(None, description="Open loop: new runs arrive at random (Poisson).")
    concurrent: Annotated[int, BeforeValidator(_integer), Field(ge=1)] | None = Field(
        None, description="Closed loop: this many agents."
    )
    think_time: Dist | None = Field(None, description="Closed loop: pause before an agent's next run.")
    duration: Duration | None = Field(None, description="Simulated time in which runs are counted.")
    warmup: Duration | None = Field(None, description="Runs starting earlier are left out of summaries.")
    volume: Volume | None = Field(None, description="Runs per month or day, for spend sizing.")
    start: ClockTime | None = Field(
        None,
        description='Clock time the simulation starts at, "HH:MM" or "HH:MM:SS" in quotes; time_of_day '
        "conditions read the clock from here (every replication starts at it when there are no arrivals).",
    )

    @model_validator(mode="after")
    def _shape(self) -> Workload:
        if self.arrivals is not None and self.concurrent is not None:
            raise PydanticCustomError("workload", "a workload has arrivals or concurrent, not both", {})
        if (self.arrivals is not None or self.concurrent is not None) and self.duration is None:
            raise PydanticCustomError(
                "workload_duration", "a workload with arrivals or concurrent needs a duration", {}
            )
        if self.think_time is not None and self.concurrent is None:
            raise PydanticCustomError(
                "workload_think",
                "think_time is the pause of a closed loop's agents between runs and needs concurrent "
                "(open arrivals come at their own rate: remove think_time, or use concurrent)",
                {},
            )
        if not self.simulates_many and (self.duration is not None or self.warmup is not None):
            raise PydanticCustomError(
                "workload_window",
                "duration and warmup apply to runs simulated over time: add arrivals or concurrent, "
                "or remove them (without either, runs are independent replications)",
                {},
            )
        return self

    @property
    def simulates_many(self) -> bool:
        return self.arrivals is not None or self.concurrent is not None


class SweepRange(_Model):
    start: Num = Field(description="First value.")
    stop: Num = Field(description="Last value, included when it lies on the grid start + k * step.")
    step: Num = Field(description="Distance between values (negative to go down).")


class SweepSpec(_Model):
    """One swept place (see agentsim.analysis.sweeps): ``{set: path, values: [...]}`` or ``{set: path, range: {...}}``."""  # noqa: E501

    set: str = Field(description="Dotted path into the scenario, e.g. agent.steps[1].repeat.times.")
    values: list[Any] | None = Field(None, min_length=1, description="The values it takes.")
    range: SweepRange | None = Field(None, description="Or: a range {start, stop, step}.")
    label: str | None = Field(None, description="Axis label for figures, with its unit.")

    @model_validator(mode="after")
    def _one(self) -> SweepSpec:
        if (self.values is None) == (self.range is None):
            raise PydanticCustomError("sweep_values", "a sweep takes one of values or range", {})
        return self


class WarningsSpec(_Model):
    """Values that are allowed but usually typing slips are warned about (not refused) by `validate` and, on
    stderr above the table, by `run`, each with file:line: `ttft_over_60s` (a median TTFT over 60 s: milliseconds
    typed as seconds?), `speed_multiplier_over_20` (a tier's `output_tps_x` or `ttft_x` over 20),
    `price_multiplier_over_20` (a tier's `price_x` over 20), `output_tps_over_50000` and `output_tps_under_1`
    (a median output speed outside 1 to 50,000 tokens/s) and, after simulating, `run_over_a_day` (a variant's
    mean wall time over 24 hours). List the keys a scenario means under `ignore` to silence them."""

    ignore: list[
        Literal[
            "ttft_over_60s",
            "speed_multiplier_over_20",
            "price_multiplier_over_20",
            "output_tps_over_50000",
            "output_tps_under_1",
            "run_over_a_day",
        ]
    ] = Field(default_factory=list, description="Warning keys not to show, e.g. [ttft_over_60s].")


class Scenario(_Model):
    name: str = Field(description="Scenario name, shown in tables and figures.")
    description: str | None = Field(None, description="One line on what the scenario asks.")
    seed: Annotated[int, BeforeValidator(_integer), Field(ge=0)] = Field(
        0, description="Random seed: same seed, same results."
    )
    runs: Annotated[int, BeforeValidator(_integer), Field(ge=1)] = Field(
        1000, description="Monte-Carlo runs of the agent per variant."
    )
    models: dict[str, ModelSpec] = Field(min_length=1, description="The models calls can use, by name.")
    agent: Agent = Field(description="The agent: its context settings and steps.")
    workflows: dict[str, Workflow] = Field(default_factory=dict, description="Workflows subagent steps run.")
    variants: dict[str, VariantSpec] | None = Field(None, description="Variants compared; the first is the baseline.")
    value_of_time: ValueOfTime | None = Field(None, description="What waiting costs, for break-even.")
    prices_as_of: PriceDate | None = Field(None, description="Date for catalog prices; default: today (UTC).")
    limits: dict[str, LimitSpec] | None = Field(None, description="Shared provider accounts and their limits.")
    workload: Workload | None = Field(None, description="Many agents over time sharing limits; spend volume.")
    sweeps: list[SweepSpec] | None = Field(None, description="Grid of values to sweep (agentsim sweep).")
    consumer: ConsumerSpec | None = Field(
        None, description="Default consumer of every call's streamed answer (a call's own consumer wins)."
    )
    warnings: WarningsSpec | None = Field(None, description="Plausibility warnings to silence: {ignore: [KEY, ...]}.")
    uncertainty: Literal["parameters"] | None = Field(
        None,
        description="parameters: also report an interval of the mean wall time that includes the models' "
        "speed uncertainty (models.NAME.uncertainty); costs 20 more simulations.",
    )

    _source: str | None = PrivateAttr(None)  # the file it was loaded from (for relative paths)

    def variant_specs(self) -> dict[str, VariantSpec]:
        """The variants to compare; a scenario without any has one, ``baseline``."""
        return dict(self.variants) if self.variants else {"baseline": VariantSpec()}


# The recursive step models (ParallelSpec, RepeatSpec, PipelineStep, Agent, ...) name each other before all
# are defined. No model_rebuild() here: every model defers building its validator to its first use
# (defer_build on _Model), when the forward references resolve from this module's names. So `agentsim prices`
# builds none, and `validate` builds Scenario's schema (its nested models inline) once.


# --------------------------------------------------------------------------- cross-field checks


@dataclass(frozen=True)
class Problem:
    """A bad value found after parsing: where it is, what is wrong, how to fix it."""

    path: tuple[str | int, ...]
    message: str
    hint: str = ""


def iter_steps(steps: list[Any], path: tuple[str | int, ...]):
    """Yield ``(path, step)`` for every step, depth first, including nested ones."""
    for i, step in enumerate(steps):
        yield from walk_step(step, (*path, i))


def walk_step(step: Any, here: tuple[str | int, ...]):
    """Yield ``(path, step)`` for ``step`` and every step nested inside it."""
    yield here, step
    if isinstance(step, ParallelStep):
        base = (*here, "parallel") if isinstance(step.parallel, list) else (*here, "parallel", "branches")
        for b, branch in enumerate(step.spec.branches):
            if isinstance(branch, list):
                yield from iter_steps(branch, (*base, b))
            else:
                yield from walk_step(branch, (*base, b))
    elif isinstance(step, FanoutStep):
        yield from iter_steps(step.fanout.steps, (*here, "fanout", "steps"))
    elif isinstance(step, RepeatStep):
        yield from iter_steps(step.repeat.steps, (*here, "repeat", "steps"))
    elif isinstance(step, ChooseStep):
        for o, opt in enumerate(step.choose.options):
            yield from iter_steps(opt.steps, (*here, "choose", "options", o, "steps"))
    elif isinstance(step, PipelineStep):
        yield from iter_steps(step.pipeline.steps, (*here, "pipeline", "steps"))


def step_name(step: Any) -> str | None:
    for kind in STEP_KINDS:
        spec = getattr(step, kind, None)
        if spec is not None:
            if isinstance(step, ParallelStep):
                return step.spec.name
            return getattr(spec, "name", None)
    return None


def all_steps(scenario: Scenario):
    """Every step of the agent and of every workflow, with its dotted path."""
    yield from iter_steps(scenario.agent.steps, ("agent", "steps"))
    for wname, wf in scenario.workflows.items():
        yield from iter_steps(wf.steps, ("workflows", wname, "steps"))


def check_references(scenario: Scenario) -> list[Problem]:
    """Checks that need the whole scenario: names that must exist, tiers that must be offered."""
    problems: list[Problem] = []
    models = scenario.models
    model_names = list(models)
    step_names: set[str] = set()

    def tiers_of(model: str) -> list[str]:
        return ["standard", *models[model].speeds]

    for path, step in all_steps(scenario):
        name = step_name(step)
        if name:
            step_names.add(name)
        if isinstance(step, CallStep):
            c = step.call
            if c.model is None:
                if len(models) != 1:
                    problems.append(
                        Problem(
                            (*path, "call"),
                            "this call names no model and the scenario has several",
                            "add model: one of " + ", ".join(model_names),
                        )
                    )
                    continue
                model = model_names[0]
            else:
                model = c.model
                if model not in models:
                    problems.append(
                        Problem(
                            (*path, "call", "model"),
                            f"model '{model}' is not defined under models",
                            suggest(model, model_names) or "defined: " + ", ".join(model_names),
                        )
                    )
                    continue
            if c.speed is not None and c.speed not in tiers_of(model):
                problems.append(
                    Problem(
                        (*path, "call", "speed"),
                        f"model '{model}' has no speed tier '{c.speed}'",
                        suggest(c.speed, tiers_of(model)) or "tiers: " + ", ".join(tiers_of(model)),
                    )
                )
        elif isinstance(step, SubagentStep):
            wf = step.subagent.workflow
            if wf not in scenario.workflows:
                problems.append(
                    Problem(
                        (*path, "subagent", "workflow"),
                        f"workflow '{wf}' is not defined under workflows",
                        suggest(wf, list(scenario.workflows))
                        or ("defined: " + ", ".join(scenario.workflows) if scenario.workflows else "add it"),
                    )
                )
        elif isinstance(step, ParallelStep):
            spec = step.spec
            if not isinstance(spec.join, str) and spec.join.k > len(spec.branches):
                problems.append(
                    Problem(
                        (*path, "parallel", "join", "k"),
                        f"join k={spec.join.k} but there are only {len(spec.branches)} branches",
                        f"use a k from 1 to {len(spec.branches)}",
                    )
                )

    problems.extend(_check_subagent_cycles(scenario))
    problems.extend(_check_streaming(scenario))

    start = scenario.workload.start if scenario.workload is not None else None
    for mname, m in models.items():
        if m.conditions is not None and m.conditions.time_of_day is not None and start is None:
            problems.append(
                Problem(
                    ("models", mname, "conditions", "time_of_day"),
                    "time-of-day conditions need the clock time the simulation starts at",
                    'add workload: {start: "09:00"} (quoted; any clock time)',
                )
            )
        if m.fallback is not None:
            where = ("models", mname, "fallback", "model")
            if m.fallback.model not in models:
                problems.append(
                    Problem(
                        where,
                        f"fallback model '{m.fallback.model}' is not defined under models",
                        suggest(m.fallback.model, model_names) or "defined: " + ", ".join(model_names),
                    )
                )
            elif m.fallback.model == mname:
                problems.append(Problem(where, "a model cannot fall back to itself", "name another model"))

    for vname, v in scenario.variant_specs().items():
        for kind, mapping in (("model", v.model), ("speed", v.speed)):
            for key, value in mapping.items():
                where = ("variants", vname, kind, key)
                if key in models and key in step_names:
                    problems.append(Problem(where, f"'{key}' is both a model and a step name", "rename the step"))
                    continue
                if key not in models and key not in step_names:
                    problems.append(
                        Problem(
                            where,
                            f"'{key}' is neither a model nor a step name",
                            suggest(key, [*model_names, *step_names]) or "models: " + ", ".join(model_names),
                        )
                    )
                    continue
                if kind == "model" and value not in models:
                    problems.append(
                        Problem(
                            where,
                            f"model '{value}' is not defined under models",
                            suggest(value, model_names) or "defined: " + ", ".join(model_names),
                        )
                    )
    return problems


def _check_subagent_cycles(scenario: Scenario) -> list[Problem]:
    calls: dict[str, set[str]] = {}
    for wname, wf in scenario.workflows.items():
        calls[wname] = {s.subagent.workflow for _, s in iter_steps(wf.steps, ()) if isinstance(s, SubagentStep)}
    problems = []
    for start in calls:
        stack, seen = [start], set()
        while stack:
            w = stack.pop()
            for nxt in calls.get(w, ()):
                if nxt == start:
                    problems.append(
                        Problem(
                            ("workflows", start),
                            f"workflow '{start}' calls itself through subagents: it would never end",
                            "remove the cycle",
                        )
                    )
                    stack = []
                    break
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
    return problems


def _sequences(steps: list[Any], path: tuple[str | int, ...]):
    """Yield ``(path, steps)`` for every list of steps run in order, nested ones included."""
    yield path, steps
    for i, step in enumerate(steps):
        here = (*path, i)
        if isinstance(step, ParallelStep):
            base = (*here, "parallel") if isinstance(step.parallel, list) else (*here, "parallel", "branches")
            for b, branch in enumerate(step.spec.branches):
                if isinstance(branch, list):
                    yield from _sequences(branch, (*base, b))
                else:
                    yield from _sequences([branch], (*base, b))
        elif isinstance(step, FanoutStep):
            yield from _sequences(step.fanout.steps, (*here, "fanout", "steps"))
        elif isinstance(step, RepeatStep):
            yield from _sequences(step.repeat.steps, (*here, "repeat", "steps"))
        elif isinstance(step, ChooseStep):
            for o, opt in enumerate(step.choose.options):
                yield from _sequences(opt.steps, (*here, "choose", "options", o, "steps"))
        elif isinstance(step, PipelineStep):
            yield from _sequences(step.pipeline.steps, (*here, "pipeline", "steps"))


def _check_streaming(scenario: Scenario) -> list[Problem]:
    """A pipeline follows a call in the same sequence; after_first_audio needs a speech consumer."""
    problems: list[Problem] = []
    roots = [(("agent", "steps"), scenario.agent.steps)]
    roots += [(("workflows", w, "steps"), wf.steps) for w, wf in scenario.workflows.items()]
    for root_path, root in roots:
        for path, steps in _sequences(root, root_path):
            for i, step in enumerate(steps):
                if isinstance(step, PipelineStep) and (i == 0 or not isinstance(steps[i - 1], CallStep)):
                    problems.append(
                        Problem(
                            (*path, i, "pipeline"),
                            "a pipeline starts on the streamed output of the call just before it, "
                            "but the step before it is not a call",
                            "put the pipeline right after a call in the same list of steps",
                        )
                    )
    for path, step in all_steps(scenario):
        if isinstance(step, CallStep) and step.call.interrupt is not None:
            consumer = step.call.consumer or scenario.consumer
            if step.call.interrupt.after_first_audio is not None and (consumer is None or consumer.speech is None):
                problems.append(
                    Problem(
                        (*path, "call", "interrupt", "after_first_audio"),
                        "after_first_audio needs a speech consumer, and this call has none",
                        "add consumer: {speech: {...}} to the call (or the scenario), or use after_first_token",
                    )
                )
    return problems

"""Distributions as a scenario writes them, and values that depend on the model a call runs on.

Wherever a distribution is expected a plain number (a constant) or a mapping with exactly one
family key plus optional ``min``/``max`` clip bounds is accepted, e.g.
``{lognormal: {median: 2, p90: 4.5}, max: 30}`` (:data:`Dist`; the families are
:data:`DIST_FAMILIES`). A probability or a repeat count may instead depend on the model a named call
runs on in each variant (contract v1.1): ``{by: act, opus: 0.7, haiku: 0.82}`` (:class:`ByModel`,
:data:`ModelProb`; :class:`ByModelCount`, :data:`Count`). How draws are made from them is
:mod:`agentsim.plan.distributions`.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Discriminator, Field, Tag, model_validator
from pydantic_core import PydanticCustomError

from agentsim.model.base import NonNegNum, Num, PosNum, Prob, StrictModel, number, suggest
from agentsim.model.safe_text import key_text, value_text

__all__ = ["DIST_FAMILIES", "ByModel", "ByModelCount", "Count", "Dist", "ModelProb", "max_p"]


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
                value = number(value)
                if not 0 <= value <= 1:
                    raise PydanticCustomError(
                        "by_model_p",
                        "{key}: {value} is not a probability (0 to 1)",
                        {"key": key_text(key), "value": value},
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


class _DistBase(StrictModel):
    min: Num | None = Field(None, description="Clip draws below this value.")
    max: Num | None = Field(None, description="Clip draws above this value.")

    @model_validator(mode="after")
    def _min_le_max(self) -> _DistBase:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise PydanticCustomError("min_gt_max", "min ({lo}) is above max ({hi})", {"lo": self.min, "hi": self.max})
        return self


class ConstantDist(_DistBase):
    constant: Num = Field(description="The value.")


class UniformParams(StrictModel):
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


class NormalParams(StrictModel):
    mean: Num = Field(description="Mean.")
    sd: NonNegNum = Field(description="Standard deviation.")


class NormalDist(_DistBase):
    normal: NormalParams


class LognormalParams(StrictModel):
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


class GammaParams(StrictModel):
    mean: PosNum = Field(description="Mean.")
    sd: PosNum = Field(description="Standard deviation.")


class GammaDist(_DistBase):
    gamma: GammaParams


class ExponentialParams(StrictModel):
    mean: PosNum = Field(description="Mean.")


class ExponentialDist(_DistBase):
    exponential: ExponentialParams


class ChoiceParams(StrictModel):
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


class EmpiricalParams(StrictModel):
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
            {"got": value_text(value), "example": "{lognormal: {median: 2, p90: 5}}"},
        )
    if isinstance(value, dict):
        fams = [k for k in value if k in DIST_FAMILIES]
        others = [k for k in value if k not in DIST_FAMILIES and k not in ("min", "max")]
        if len(fams) > 1:
            raise PydanticCustomError(
                "bad_distribution",
                "a distribution has one family key, got {fams}",  # (family names: known words)
                {"fams": ", ".join(fams)},
            )
        if not fams:
            bad = others[0] if others else ""
            hint = suggest(bad, DIST_FAMILIES) if bad else ""
            raise PydanticCustomError(
                "bad_distribution",
                "unknown distribution family {bad} ({hint})",
                {"bad": key_text(bad), "hint": hint or "families: " + ", ".join(DIST_FAMILIES)},
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
                        "{key}: {msg}",
                        {"key": key_text(key), "msg": exc.errors()[0]["msg"]},
                    ) from None
        return data

    @property
    def table(self) -> dict[str, Any]:
        """MODEL or MODEL@TIER -> count (a number or distribution), without ``by`` and ``default``."""
        return dict(self.model_extra or {})


def _count_tag(value: Any) -> str:
    return "by_model" if (isinstance(value, dict) and "by" in value) or isinstance(value, ByModelCount) else "dist"


Count = Annotated[Annotated[Dist, Tag("dist")] | Annotated[ByModelCount, Tag("by_model")], Discriminator(_count_tag)]

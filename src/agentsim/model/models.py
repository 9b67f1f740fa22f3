"""The models a scenario calls: speed, prices, speed tiers, streams, caches, conditions, retries, context speed.

A :class:`ModelSpec` is one model as the scenario declares it: its TTFT and output speed (drawn per
call), an optional prefill speed, its price, its speed tiers (:class:`SpeedSpec`: ``fast``,
``priority``...), how its answer streams (:class:`StreamSpec`), its prompt-cache TTL, its failures
and retries, and provider conditions drawn once per run or following the time of day. How a call
on it is timed is :mod:`agentsim.sim.rules`; how it is compiled, :mod:`agentsim.plan.compiler`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from agentsim.model.base import NonNegNum, PosNum, Prob, StrictModel, integer
from agentsim.model.distributions import Dist
from agentsim.model.domain import Factor, Tokens
from agentsim.model.prices import PriceSpec

__all__ = [
    "CacheSpec",
    "ConditionsSpec",
    "ContextSpeedSpec",
    "FallbackSpec",
    "HourlyFactors",
    "ModelSpec",
    "RetrySpec",
    "SpeedSpec",
    "StallSpec",
    "StreamSpec",
    "TimeOfDaySpec",
    "UncertaintySpec",
]


class StallSpec(StrictModel):
    """Pauses in a model's stream: the tokens after a pause arrive its length later, and so does the call's end.
    Give one of ``p`` (one stall per call with that probability, contract v1.1), ``per_chunk`` or
    ``per_token`` (a stall process: before each chunk, or token, after the first a stall with that
    probability; on average ``(K - 1) * per_chunk`` stalls for ``K`` chunks) or ``at_chunks`` (a fixed
    schedule: a stall before each listed chunk the answer has). ``seconds`` is drawn per stall."""

    p: Prob | None = Field(None, description="Probability that a call's stream stalls once (one stall per call).")
    per_chunk: Prob | None = Field(
        None, description="Or: a stall process, the probability of a stall before each chunk after the first."
    )
    per_token: Prob | None = Field(
        None, description="Or: a stall process, the probability of a stall before each token after the first."
    )
    at_chunks: list[Annotated[int, BeforeValidator(integer)]] | None = Field(
        None, description="Or: a stall before each of these chunks (1-based, at least 2), when the answer has it."
    )
    seconds: Dist = Field(0.0, description="Length of a stall, drawn per stall; it adds to the call's time.")

    @model_validator(mode="after")
    def _one_form(self) -> StallSpec:
        given = [k for k in ("p", "per_chunk", "per_token", "at_chunks") if getattr(self, k) is not None]
        if len(given) > 1:
            raise PydanticCustomError(
                "stall_form",
                "a stall takes one of p (one stall per call), per_chunk, per_token or at_chunks; got {given}",
                {"given": ", ".join(given)},
            )
        if self.at_chunks is not None and any(k < 2 for k in self.at_chunks):
            raise PydanticCustomError(
                "stall_chunks",
                "at_chunks lists chunks before which the stream stalls, counted from 1; the first chunk "
                "cannot stall (that is the TTFT): use numbers of at least 2",
                {},
            )
        return self

    @property
    def form(self) -> str:
        """``once`` (``p``), ``per_chunk``, ``per_token`` or ``at_chunks``."""
        for k in ("per_chunk", "per_token", "at_chunks"):
            if getattr(self, k) is not None:
                return k
        return "once"

    @property
    def rate(self) -> float:
        """The probability of the form (1 for a schedule; 0 when none is given)."""
        if self.at_chunks is not None:
            return 1.0 if self.at_chunks else 0.0
        value = {"once": self.p, "per_chunk": self.per_chunk, "per_token": self.per_token}[self.form]
        return 0.0 if value is None else float(value)


class StreamSpec(StrictModel):
    """How a model's answer arrives (contract v1.1): chunking, uneven gaps, stalls.

    Without it a call streams evenly: visible token 1 at TTFT (+ reasoning decode), the last at
    the call's end. Chunking and jitter never move the call's end; a stall does (docs/concepts.md).
    """

    chunk_tokens: Dist = Field(1.0, description="Tokens per delivered chunk, drawn per chunk (rounded, at least 1).")
    jitter_cv: NonNegNum = Field(
        0.0, description="Coefficient of variation of the gaps between tokens (0: even); the call's end stays."
    )
    stall: StallSpec | None = Field(None, description="A pause of the stream, with its probability per call.")


class ContextSpeedSpec(StrictModel):
    """Output speed and TTFT that depend on how much context a call sends (contract v1.2).

    ``tokens`` are context sizes (a call's whole input: the context re-sent plus its own new input,
    cached or not); ``output_tps_x`` and ``ttft_x`` give a factor at each. Between two points the
    factor follows the straight line; before the first point the first factor holds, after the last
    the last. ``output_tps_x`` multiplies the call's output speed, ``ttft_x`` its drawn TTFT (not the
    prefill term); either may be left out (factor 1). Formula and a worked example: docs/concepts.md.
    """

    tokens: list[Tokens] = Field(
        description="Context sizes in tokens (a call's whole input), strictly increasing, from 0 up."
    )
    output_tps_x: list[Factor] | None = Field(
        None, description="Output-speed factor at each context size (one per point of tokens)."
    )
    ttft_x: list[Factor] | None = Field(
        None, description="Factor on the drawn TTFT (not the prefill) at each context size (one per point)."
    )

    @field_validator("tokens")
    @classmethod
    def _increasing(cls, tokens: list[int]) -> list[int]:
        if not tokens:
            raise PydanticCustomError(
                "context_speed_empty", "tokens needs at least one context size (e.g. tokens: [0, 200000])", {}
            )
        for i in range(1, len(tokens)):
            if not tokens[i] > tokens[i - 1]:
                raise PydanticCustomError(
                    "context_speed_order",
                    "tokens must increase strictly, but point {i} ({b}) does not come after point {p} ({a}) "
                    "(list each context size once, from smallest to largest, and the factors in the same order)",
                    {"i": i, "b": tokens[i], "p": i - 1, "a": tokens[i - 1]},
                )
        return tokens

    @field_validator("output_tps_x", "ttft_x")
    @classmethod
    def _one_per_point(cls, factors: list[float] | None, info: ValidationInfo) -> list[float] | None:
        tokens = info.data.get("tokens")
        if factors is not None and tokens is not None and len(factors) != len(tokens):
            raise PydanticCustomError(
                "context_speed_length",
                "{key} has {n} factors but tokens has {m} points (give one factor per context size in tokens)",
                {"key": info.field_name, "n": len(factors), "m": len(tokens)},
            )
        return factors

    @model_validator(mode="after")
    def _some_factor(self) -> ContextSpeedSpec:
        if self.output_tps_x is None and self.ttft_x is None:
            raise PydanticCustomError(
                "context_speed_factors",
                "context_speed needs output_tps_x or ttft_x (or both): the factors at each point of tokens",
                {},
            )
        return self


class SpeedSpec(StrictModel):
    """A speed tier of a model (``fast``, ``priority``...): a speed effect and a price."""

    output_tps_x: PosNum = Field(1.0, description="Multiplies output tokens per second.")
    ttft_x: PosNum = Field(1.0, description="Multiplies the drawn TTFT (not the prefill term).")
    price: PriceSpec | None = Field(
        None, description="This tier's price table (default: the model's own price, unless price_x is given)."
    )
    price_x: PosNum | None = Field(None, description="Or: the model's price multiplied by this factor.")
    stream: StreamSpec | None = Field(None, description="How this tier streams (replaces the model's stream).")
    context_speed: ContextSpeedSpec | None = Field(
        None, description="How this tier's speed depends on context size (replaces the model's context_speed)."
    )

    @model_validator(mode="after")
    def _priced(self) -> SpeedSpec:
        if self.price is not None and self.price_x is not None:
            raise PydanticCustomError(
                "tier_price", "give price (a table) or price_x (a multiple of the model's price), not both", {}
            )
        return self


class CacheSpec(StrictModel):
    ttl: Literal["5m", "1h"] = Field("5m", description="Prompt-cache time to live.")
    scope: Literal["context", "model"] | None = Field(
        None,
        description="Context caches only. model (default): each model and speed tier has its own cache, as "
        "providers do (switching model or fast/standard starts a new cache); context: a call reads what the "
        "previous call of the same context sent, whatever its model or tier (DESIGN.md §4 read literally; the "
        "default before 0.x, see CHANGELOG.md).",
    )


HOURS_PER_DAY = 24


class HourlyFactors(StrictModel):
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


class TimeOfDaySpec(StrictModel):
    """Provider conditions by time of day: factors that depend on the simulated clock when a call starts.

    The clock starts at ``workload.start``; a call's factor is read at the instant the request is sent
    (after any wait for a slot or a rate budget) and holds for the whole call, even one that runs into
    the next hour (docs/concepts.md).
    """

    ttft_x: HourlyFactors | None = Field(None, description="Multiplies the drawn TTFT, by the hour a call starts.")
    output_tps_x: HourlyFactors | None = Field(
        None, description="Multiplies the output speed, by the hour a call starts."
    )


class ConditionsSpec(StrictModel):
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


class UncertaintySpec(StrictModel):
    """How uncertain a model's speeds are: factors drawn once per parameter set (agentsim.param_uncertainty).

    Used only when the scenario asks for ``uncertainty: parameters``; a constant 1 (the default) is no
    uncertainty.
    """

    ttft_x: Dist = Field(1.0, description="Multiplies the model's drawn TTFT, one draw per parameter set.")
    output_tps_x: Dist = Field(1.0, description="Multiplies the model's output speed, one draw per parameter set.")
    prefill_tps_x: Dist = Field(1.0, description="Multiplies the model's prefill speed, one draw per parameter set.")


class RetrySpec(StrictModel):
    """How a client retries a failed attempt (HTTP 429 rate limit, 5xx error, timeout).

    Defaults are the official Anthropic and OpenAI SDKs': 3 attempts in all, exponential back-off
    starting at 0.5 s, capped at 8 s, with full jitter, honouring a 429's retry-after time.
    """

    max_attempts: Annotated[int, BeforeValidator(integer), Field(ge=1, le=50)] = Field(
        3, description="Attempts in all (1 = no retry)."
    )
    backoff_base: NonNegNum = Field(0.5, description="Seconds before the first retry (doubling each time).")
    backoff_cap: NonNegNum = Field(8.0, description="Longest back-off, in seconds.")
    jitter: Literal["full", "none"] = Field("full", description="full: sleep uniform(0, back-off).")
    honour_retry_after: bool = Field(True, description="After a 429, wait the limiter's retry-after time.")


class FallbackSpec(StrictModel):
    model: str = Field(description="A key of models to use once this one has failed `after` times.")
    after: Annotated[int, BeforeValidator(integer), Field(ge=1)] = Field(
        description="Failed attempts on this model before falling back."
    )


class ModelSpec(StrictModel):
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
    context_speed: ContextSpeedSpec | None = Field(
        None,
        description="Output speed and TTFT factors by context size (a call's whole input), piecewise linear.",
    )

    @field_validator("speeds")
    @classmethod
    def _no_standard(cls, speeds: dict[str, SpeedSpec]) -> dict[str, SpeedSpec]:
        if "standard" in speeds:
            raise PydanticCustomError(
                "standard_tier", "'standard' is the model itself; do not declare it under speeds", {}
            )
        return speeds

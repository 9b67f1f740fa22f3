"""Many agents over time and shared provider limits: workloads, durations, clock times, accounts, volume.

A :class:`Workload` runs many agents in one simulation, open (Poisson ``arrivals``) or closed
(``concurrent`` agents), for a :class:`Duration` after an optional warm-up; its ``volume`` sizes
monthly spend. A :class:`LimitSpec` is a provider account shared by some models' calls
(concurrency, requests and tokens per minute). The engines' side is :mod:`agentsim.sim.workload`
and :mod:`agentsim.plan.limits`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from agentsim.model.base import MAX_SECONDS, NonNegNum, PosNum, StrictModel, integer
from agentsim.model.distributions import Dist
from agentsim.model.domain import DaysPerMonth
from agentsim.model.safe_text import value_text

__all__ = ["Arrivals", "ClockTime", "Duration", "LimitSpec", "Volume", "Workload"]


def _clock_time(value: Any) -> float:
    """``"HH:MM"`` or ``"HH:MM:SS"`` (00:00 to 23:59:59) as seconds after midnight."""
    if isinstance(value, bool) or not isinstance(value, str):
        hint = " (YAML reads an unquoted 14:00 as the number 840: put the time in quotes)"
        raise PydanticCustomError(
            "clock_time",
            'expected a clock time in quotes such as "09:00" or "14:30:00", got {got}'
            + (hint if isinstance(value, int) and not isinstance(value, bool) else ""),
            {"got": value_text(value)},
        )
    parts = value.strip().split(":")
    ok = len(parts) in (2, 3) and all(p.isdigit() and len(p) == (2 if i else len(p)) for i, p in enumerate(parts))
    ok = ok and len(parts[0]) <= 2
    h, m, sec = ([int(p) for p in parts] + [0])[:3] if ok else (0, 0, 0)
    if not ok or h > 23 or m > 59 or sec > 59:
        raise PydanticCustomError(
            "clock_time",
            'expected a clock time "HH:MM" or "HH:MM:SS" from "00:00" to "23:59:59", got {got}',
            {"got": f'"{value}"' if len(value) <= 8 and set(value) <= set("0123456789: ") else value_text(value)},
        )
    return float(h * 3600 + m * 60 + sec)


ClockTime = Annotated[
    float,
    BeforeValidator(_clock_time),
    WithJsonSchema({"type": "string", "pattern": r"^[0-2]?[0-9]:[0-5][0-9](:[0-5][0-9])?$"}),
]


class Duration(StrictModel):
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


class LimitSpec(StrictModel):
    """A provider account (or a client-side limiter) shared by the calls of some models."""

    models: list[str] = Field(min_length=1, description="Models (or model@tier) that share this account.")
    preset: str | None = Field(
        None,
        description="A provider's published limits, PROVIDER/TIER/CLASS (e.g. anthropic/tier-2/opus-4): fills "
        "rpm, input_tpm, output_tpm, concurrency, policy and count_cache_reads where the account does not set "
        "them (dated and sourced: docs/limits.md).",
    )
    concurrency: Annotated[int, BeforeValidator(integer), Field(ge=1)] | None = Field(
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


class Arrivals(StrictModel):
    per_hour: PosNum = Field(description="Poisson arrivals of new agent runs per hour.")


class Volume(StrictModel):
    """How many runs a month, for spend sizing: ``runs_per_month``, or ``runs_per_day``, or ``seats`` ×
    ``runs_per_seat_per_day``; a day count is ``working_days`` per month (default 30, calendar days)."""

    runs_per_month: PosNum | None = Field(None, description="Agent runs per month.")
    runs_per_day: PosNum | None = Field(None, description="Agent runs per day (times working_days).")
    seats: PosNum | None = Field(None, description="People (or agents) using it; with runs_per_seat_per_day.")
    runs_per_seat_per_day: PosNum | None = Field(None, description="Runs per seat per working day.")
    working_days: DaysPerMonth | None = Field(
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


class Workload(StrictModel):
    """Many agents over time: open (Poisson ``arrivals``) or closed (``concurrent`` agents)."""

    arrivals: Arrivals | None = Field(None, description="Open loop: new runs arrive at random (Poisson).")
    concurrent: Annotated[int, BeforeValidator(integer), Field(ge=1)] | None = Field(
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

"""The shape of ``summary.json``, as typed models: the contract the CLI, the report and users' scripts read.

:meth:`agentsim.sim.results.Results.summary_dict` builds the document; these pydantic models say what
it may hold -- every field, its type, whether it may be null, which sections are optional -- and
``python -m agentsim.docs_gen`` writes their JSON Schema to ``schema/summary.schema.json``, next to the
scenario's. ``tests/test_summary_schema.py`` validates the summary of every bundled scenario against the
published schema, so a field added to the document without being added here fails. What each field
means is docs/metrics.md.

Figures are ``float | None``: a statistic over no run (a variant whose runs all failed) is null, never NaN.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "SUMMARY_SCHEMA_TITLE",
    "Apparate",
    "SloTarget",
    "Success",
    "Summary",
    "Variant",
    "as_summary",
    "summary_schema",
]

SUMMARY_SCHEMA_TITLE = "agentsim summary.json"

Num = float | None


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class Stats(_Part):
    """Mean, 95% confidence interval of the mean, and percentiles of a per-run figure."""

    mean: Num
    ci95: list[Num] = Field(min_length=2, max_length=2, description="[low, high] (Student t on the run means).")
    p50: Num
    p90: Num
    p95: Num
    p99: Num


class WallStats(Stats):
    param_ci95: list[Num] | None = Field(
        None, min_length=2, max_length=2, description="With uncertainty: parameters, the interval with it."
    )


class Spread(_Part):
    """Mean, median and 95th percentile (per-call and streaming figures)."""

    mean: Num
    p50: Num
    p95: Num


class Mean(_Part):
    mean: Num


class Tokens(_Part):
    input: Num
    cache_read: Num
    cache_write: Num
    output: Num
    reasoning: Num
    cache_write_1h: Num


class Breakdown(BaseModel):
    """Mean seconds per run on the critical path, by slot (``stall``, ``listen``: only when the plan has them;
    a slot of another step kind's own, by its name)."""

    model_config = ConfigDict(extra="allow", defer_build=True)
    __pydantic_extra__: dict[str, Num]

    queue: Num
    ttft: Num
    decode: Num
    tool: Num
    wait: Num
    stall: Num = None
    listen: Num = None
    think: Num = None


class VsBaseline(_Part):
    delta_time_s: Num = Field(description="Δ mean wall time against the first variant (s).")
    delta_cost_usd: Num
    usd_per_hour_saved: Num = Field(description="Δ cost per hour of the basis saved (waiting_s with turns).")
    pays_off: bool | None
    delta_waiting_s: Num = Field(description="Δ mean waiting time (s): the person's turns (contract v1.3).")
    basis: Literal["wall_time_s", "waiting_s"] = Field(
        description="The time the value of time is weighed against: waiting_s where the scenario has turns."
    )


class TotalCost(_Part):
    mean: Num
    value_of_time_usd_per_hour: float
    basis: Literal["wall_time_s", "waiting_s"] = Field(description="cost + value of time × this basis.")


class TurnStats(_Part):
    """Mean and percentiles over every turn (from the person's message to the answer; contract v1.3)."""

    mean: Num
    p50: Num
    p90: Num
    p95: Num
    p99: Num


class PerCall(_Part):
    ttft_s: Spread
    tps: Spread
    itl_s: Spread


class QueueWait(_Part):
    mean: Num
    p50: Num
    p95: Num
    share_waiting: Num


class Attempts(_Part):
    rejected_429: int
    errors: int
    timeouts: int
    retries: int
    fallbacks: int
    failed_calls: int
    failed_runs: int


class Concurrency(_Part):
    limit: int | None
    mean_in_flight: Num
    max_in_flight: Num
    utilisation: Num


class Bucket(_Part):
    limit_per_min: float
    admitted_per_min: Num
    utilisation: Num


class Account(_Part):
    policy: str
    rejected_429: int
    concurrency: Concurrency
    rpm: Bucket | None = None
    input_tpm: Bucket | None = None
    output_tpm: Bucket | None = None
    refused_by: dict[str, int] | None = Field(
        None,
        description="Per limit of the account (concurrency, rpm, input_tpm, output_tpm): the refusals (HTTP 429) "
        "it took part in; a refusal counts under every limit short at that instant.",
    )
    waited_s: dict[str, float] | None = Field(
        None, description="policy: queue: per limit, the seconds calls waited in line for it."
    )


class Binding(_Part):
    """The limit that refused the most requests (or, where none was refused, kept calls waiting longest)."""

    account: str
    limit: str = Field(description="concurrency, rpm, input_tpm or output_tpm.")
    by: str = Field(description="refused (it refused the most) or waited (calls waited for it the longest).")
    refused: int
    waited_s: float
    share: float = Field(description="Its share of all the accounts' refusals (or of all waiting).")
    utilisation: Num


class Limits(_Part):
    """Shared limits and failures: queue waits, attempts, and (workloads) each account's use."""

    queue_wait_s: QueueWait
    attempts: Attempts
    accounts: dict[str, Account] | None = None
    binding: Binding | None = Field(
        None, description="Workloads: which account's which limit binds (null: no call was refused or waited)."
    )


class WorkloadSection(_Part):
    window_s: list[float] = Field(min_length=2, max_length=2)
    simulated_until_s: float
    runs_started: int
    runs_counted: int
    runs_completed: int
    runs_failed: int
    runs_unfinished: int
    runs_in_flight_at_end: int
    failed_share: float
    cost_of_failed_runs_usd: float
    throughput_runs_per_hour: float
    input_tokens_per_min: float
    output_tokens_per_min: float


class StreamSpread(_Part):
    """Mean and percentiles of a streaming metric over a step's calls."""

    mean: Num
    p50: Num
    p95: Num
    p99: Num
    p5: Num = Field(None, description="A score where more is better (qoe, qoe_from_ask): its worst 5%.")
    p1: Num = Field(None, description="A score where more is better (qoe, qoe_from_ask): its worst 1%.")


class Apparate(_Part):
    consumer: str
    tokens_per_s: float
    faster_share: Num


class Streaming(_Part):
    """Per call name, each streaming metric of its consumer (docs/metrics.md); per reader or speaker, its pace."""

    calls: dict[str, dict[str, StreamSpread]]
    apparate: dict[str, Apparate]
    uninterrupted: dict[str, dict[str, StreamSpread]] | None = Field(
        None, description="Calls the person can interrupt: the same metrics over the calls they let finish."
    )


class SloTarget(_Part):
    """One target of the scenario's ``slo``: the share of runs meeting it (the ``all`` entry: every target)."""

    target: float | None = Field(None, description="The target (absent for all).")
    share: Num
    ci95: list[Num] = Field(min_length=2, max_length=2, description="Wilson score interval of the share.")
    runs: int = Field(description="The runs the share is over.")
    turns: int | None = Field(None, description="turn_s only: the turns the share is over.")
    mean: Num = Field(None, description="The targeted metric's mean over the runs (turns) with a value.")
    p50: Num = Field(None, description="The value half the runs (turns) meet; null where runs without one decide.")
    p95: Num = Field(None, description="The value 95% of the runs (turns) meet: at most the target when share >= 0.95.")
    p99: Num = Field(None, description="The value 99% of the runs (turns) meet.")


class BargeIn(_Part):
    """What the person's interruptions cost (scenarios with an ``interrupt``; docs/metrics.md)."""

    interruptions_per_turn: Num = Field(description="Interrupted answers per turn (a run without turns: one turn).")
    wasted_usd_per_turn: Num = Field(description="Cost of the interrupted calls per turn (USD).")
    wasted_usd_per_run: Num = Field(description="Cost of the interrupted calls per run (USD).")
    wasted_share_of_cost: Num = Field(description="Cost of the interrupted calls over the runs' whole cost.")


class Success(_Part):
    share: Num
    cost_per_success_usd: Num
    time_to_success_s: Num


class Variant(_Part):
    """One variant's figures, over the runs that completed (in workloads: counted runs that completed)."""

    wall_time_s: WallStats
    cost_usd: Stats
    calls: Mean
    tokens: Tokens
    breakdown_s: Breakdown
    waiting_s: Stats = Field(description="What the person waited per run: the sum of their turns (contract v1.3).")
    turn_s: TurnStats
    turns: Mean = Field(description="Turns per run (1 without a turns step).")
    vs_baseline: VsBaseline
    total_cost_usd: TotalCost | None = None
    per_call: PerCall
    limits: Limits | None = None
    workload: WorkloadSection | None = None
    streaming: Streaming | None = None
    barge_in: BargeIn | None = None
    success: Success | None = None
    slo: dict[str, SloTarget] | None = None


class TieredRate(_Part):
    base: float
    tiers: list[dict[str, float]]


Rate = float | TieredRate


class TierRates(_Part):
    input_mtok: Rate
    cache_read_mtok: Rate
    cache_write_mtok: Rate
    cache_write_1h_mtok: Rate
    output_mtok: Rate
    output_reasoning_mtok: Rate
    requests_kcount: Rate
    source: str
    as_of: str | None


class Prices(_Part):
    genai_prices_version: str | None
    tiers: dict[str, TierRates]


class Summary(_Part):
    """``summary.json``: one simulation's figures per variant, and the prices they used."""

    scenario: str
    seed: int
    runs: int
    agentsim_version: str
    engine: str = Field(description="des or fastpath.")
    value_of_time_usd_per_hour: Num
    variants: dict[str, Variant]
    prices_as_of: str | None = Field(description="The date catalog prices were looked up as of (YYYY-MM-DD).")
    prices: Prices


def as_summary(doc: Summary | dict) -> Summary:
    """``doc`` as a :class:`Summary`: validated when it is a dict (a ``summary_dict()``, or a ``summary.json``
    read from disk), as is when it already is one (the boundary of functions that accept either)."""
    return doc if isinstance(doc, Summary) else Summary.model_validate(doc)


def summary_schema() -> dict:
    """The JSON Schema of ``summary.json`` (what ``schema/summary.schema.json`` holds)."""
    schema = Summary.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema, "title": SUMMARY_SCHEMA_TITLE}

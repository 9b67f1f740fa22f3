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

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SUMMARY_SCHEMA_TITLE", "Summary", "summary_schema"]

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


class Breakdown(_Part):
    """Mean seconds per run on the critical path, by slot (``stall``, ``listen``: only when the plan has them)."""

    queue: Num
    ttft: Num
    decode: Num
    tool: Num
    wait: Num
    stall: Num = None
    listen: Num = None


class VsBaseline(_Part):
    delta_time_s: Num
    delta_cost_usd: Num
    usd_per_hour_saved: Num
    pays_off: bool | None


class TotalCost(_Part):
    mean: Num
    value_of_time_usd_per_hour: float


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


class Limits(_Part):
    """Shared limits and failures: queue waits, attempts, and (workloads) each account's use."""

    queue_wait_s: QueueWait
    attempts: Attempts
    accounts: dict[str, Account] | None = None


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
    vs_baseline: VsBaseline
    total_cost_usd: TotalCost | None = None
    per_call: PerCall
    limits: Limits | None = None
    workload: WorkloadSection | None = None
    streaming: Streaming | None = None
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


def summary_schema() -> dict:
    """The JSON Schema of ``summary.json`` (what ``schema/summary.schema.json`` holds)."""
    schema = Summary.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema, "title": SUMMARY_SCHEMA_TITLE}

"""Results of a simulation: tables, the summary document, and its figures.

:class:`Results` holds the ``runs`` table (one row per agent run and variant) and,
built on first use, the ``calls`` table (one row per model call). Its
:meth:`Results.summary_dict` is the ``summary.json`` contract:

* ``wall_time_s`` and ``cost_usd``: mean with a 95% confidence interval
  (Student t on the run means), and percentiles (linear interpolation);
* ``calls.mean``, ``tokens`` by kind and the critical-path ``breakdown_s``, all
  per-run means (``tokens.input`` counts every input token, cached ones
  included, as genai-prices does);
* ``success`` (only when the scenario has ``fail`` steps): success share, cost per success and time
  to success over all runs (failed ones included), see :meth:`Results._success`;
* ``vs_baseline``: differences of means against the first variant, the USD paid
  per hour of waiting saved (``delta_cost / hours saved``; null when the variant
  saves no time), and whether it pays off at the scenario's value of time, i.e.
  whether ``delta_cost + value_of_time x delta_time`` is negative.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from agentsim.model import extensions, special
from agentsim.plan.compiler import Plan
from agentsim.pricing.rates import prices_summary
from agentsim.sim import payoff, slots
from agentsim.sim.slots import BREAKDOWN
from agentsim.sim.summary_model import SloTarget, Success, Summary, Variant, as_summary

__all__ = ["Results", "TableSources", "VariantStats", "describe", "summary_frame", "version"]

PERCENTILES = (50, 90, 95, 99)
# Per-call statistics (TTFT, TPS, ITL) read every completed call of the first runs of each variant
# (per_call_runs): one run in PER_CALL_SHARE, but enough runs for about PER_CALL_MIN calls and at most about
# PER_CALL_CAP calls, by the plan's mean number of calls per run. PER_CALL_LIMIT bounds what is kept
# whatever that estimate says (a safety net: the calls past it are left out).
PER_CALL_SHARE = 16
PER_CALL_MIN = 1 << 16
PER_CALL_CAP = 1 << 20
PER_CALL_LIMIT = 1 << 22


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as _v

    try:
        return _v("agentsim")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


def _f(x) -> float | None:
    """A JSON-safe float (None for NaN/inf)."""
    x = float(x)
    return x if math.isfinite(x) else None


def _mean(x: np.ndarray) -> float | None:
    return _f(np.mean(x)) if len(x) else None


def describe(x: np.ndarray, percentiles=PERCENTILES) -> dict[str, Any]:
    """Mean, 95% CI of the mean, and percentiles of a sample."""
    x = np.asarray(x, dtype=np.float64)
    n = x.size
    mean = float(np.mean(x)) if n else math.nan
    if n >= 2:
        sd = float(np.std(x, ddof=1))
        half = float(special.stdtrit(n - 1, 0.975)) * sd / math.sqrt(n)  # Student t quantile (= stats.t.ppf)
        ci = [_f(mean - half), _f(mean + half)]
    else:
        ci = [_f(mean), _f(mean)] if n else [None, None]
    out: dict[str, Any] = {"mean": _f(mean), "ci95": ci}
    if n:
        for p, v in zip(percentiles, _percentiles(np.sort(x), percentiles), strict=True):
            out[f"p{p}"] = _f(v)
    else:
        out.update({f"p{p}": None for p in percentiles})
    return out


def _percentiles(ascending: np.ndarray, percentiles) -> np.ndarray:
    """``np.percentile`` of an array already sorted ascending (consumed: it may be reordered).

    The same NumPy function on the same values, so the same bits; selecting the order statistics
    from a sorted copy is faster than from the unsorted array (a vectorised sort, then a cheap select).
    """
    return np.percentile(ascending, percentiles, overwrite_input=True)


def _as_slice(mask: np.ndarray) -> np.ndarray | slice:
    """A boolean row mask as a slice when its rows are one contiguous range (a variant's runs, all kept):
    the same rows in the same order, read as a view instead of copied."""
    idx = np.flatnonzero(mask)
    if idx.size and idx[-1] - idx[0] + 1 == idx.size:
        return slice(int(idx[0]), int(idx[-1]) + 1)
    return mask


def per_call_runs(runs: int, calls_per_run: float) -> int:
    """How many runs (the first ones, ``0 .. K - 1``) the per-call statistics of a simulation of ``runs``
    runs read: ``ceil(runs / PER_CALL_SHARE)``, raised to about ``PER_CALL_MIN`` calls and lowered to about
    ``PER_CALL_CAP`` calls (``calls_per_run``: the plan's estimate), never more than ``runs``.

    So their cost grows with the runs asked for (one run in 16, not a fixed 2^20 calls whatever the
    runs), a small simulation reads every call, and the sample is the same runs whatever the number of
    workers. The first runs are a sample like any other: runs are independent and identically distributed.
    """
    if calls_per_run <= 0:
        return runs
    share = -(-runs // PER_CALL_SHARE)
    lo = math.ceil(PER_CALL_MIN / calls_per_run)
    hi = max(1, math.floor(PER_CALL_CAP / calls_per_run))
    return min(runs, max(lo, min(share, hi)))


@dataclass
class CallStats:
    """Per-call TTFT/TPS/ITL of one variant: the calls handed to :meth:`add`, at most ``PER_CALL_LIMIT``."""

    ttft: list[np.ndarray] = field(default_factory=list)
    tps: list[np.ndarray] = field(default_factory=list)
    kept: int = 0

    def add(self, ttft: np.ndarray, tps: np.ndarray) -> None:
        room = PER_CALL_LIMIT - self.kept
        if room <= 0:
            return
        self.ttft.append(ttft[:room])
        self.tps.append(tps[:room])
        self.kept += min(room, ttft.size)

    def summary(self) -> dict[str, Any]:
        """Mean, p50 and p95 of each. The percentiles are selected (``np.percentile`` partitions: linear
        time) rather than read from a sorted copy; the same order statistics, so the same bits."""
        ttft = np.concatenate(self.ttft) if self.ttft else np.zeros(0)
        tps = np.concatenate(self.tps) if self.tps else np.zeros(0)
        itl = np.divide(1.0, tps)
        return {"ttft_s": _mean_p50_p95(ttft), "tps": _mean_p50_p95(tps), "itl_s": _mean_p50_p95(itl)}


def _mean_p50_p95(x: np.ndarray) -> dict[str, float | None]:
    """describe()'s mean and percentiles without its confidence interval (not reported); ``x`` is consumed
    (reordered): the mean is taken first, in the order the calls came."""
    if not x.size:
        return {"mean": None, "p50": None, "p95": None}
    mean = _f(np.mean(x))
    p50, p95 = np.percentile(x, (50, 95), overwrite_input=True)
    return {"mean": mean, "p50": _f(p50), "p95": _f(p95)}


@dataclass(frozen=True)
class TableSources:
    """Where a :class:`Results` gets its per-call and per-span tables: builders called on first use, and
    optionally readers of the calls table in parts and of a few runs' rows without building it whole."""

    calls: Callable[[], pd.DataFrame]
    spans: Callable[[], pd.DataFrame]
    calls_parts: Callable | None = None  # () -> (variant index, frame) pairs
    of_runs: Callable | None = None  # set of runs -> (calls rows, spans rows)


@dataclass(frozen=True)
class VariantStats:
    """What the summary reads per variant besides the runs table: statistics gathered while simulating."""

    calls: dict[str, CallStats]
    streams: dict | None = None  # variant -> agentsim.sim.stream_stats.StreamStats (calls with consumers)
    turns: dict | None = None  # variant -> agentsim.sim.turn_stats.TurnSamples (plans with turns)
    sections: dict = field(default_factory=dict)  # summary section -> fn(variant name) -> dict ("limits", …)


class Results:
    """What :func:`agentsim.simulate` returns: tables, the summary and figures."""

    def __init__(
        self,
        plan: Plan,
        *,
        seed: int,
        runs: int,
        engine: str,
        runs_df: pd.DataFrame,
        stats: VariantStats,
        tables: TableSources,
        outcomes: list | None = None,
    ):
        self.plan = plan
        self.scenario = plan.scenario
        self.seed = seed
        self.n_runs = runs
        self.engine = engine
        self.variants = list(plan.variants)
        self.runs = runs_df
        self._call_stats = stats.calls
        self._tables = tables
        self._calls: pd.DataFrame | None = None
        self._spans: pd.DataFrame | None = None
        self.stream_stats = stats.streams
        self.turn_samples = stats.turns
        self.sections = stats.sections
        self.outcomes = outcomes or []  # workloads: each variant's agentsim.sim.workload.WorkloadOutcome
        self.param_ci95: dict | None = None  # uncertainty: parameters -> variant -> [lo, hi] (param_uncertainty)

    # ------------------------------------------------------------------ tables
    @property
    def calls(self) -> pd.DataFrame:
        """One row per model call made (built on first use)."""
        if self._calls is None:
            self._calls = self._tables.calls()
        return self._calls

    def calls_parts(self):
        """The ``calls`` table in parts, without building it whole: ``(variant index, frame)`` pairs.

        Concatenating the frames of variant 0 in the order given, then variant 1's, … gives
        :attr:`calls` (the ``variant`` column here is plain text). Used to write large tables
        block by block; when the table is already built (or cannot be split), it is one part.
        """
        if self._calls is not None or self._tables.calls_parts is None:
            yield 0, self.calls
        else:
            yield from self._tables.calls_parts()

    def calls_parts_count(self) -> int:
        """How many parts :meth:`calls_parts` yields (one per block of runs and variant, or one)."""
        if self._calls is not None or self._tables.calls_parts is None:
            return 1
        from agentsim.plan.sampling import block_spans
        from agentsim.plan.sizeguard import runs_per_block

        return len(block_spans(self.n_runs, runs_per_block(self.plan))) * len(self.variants)

    def tables_of(self, runs) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The ``calls`` and ``spans`` rows of the given runs only (every variant; the tables' columns and
        order, a fresh index), without building the whole tables: only the blocks of runs holding them
        are read (or simulated again), so a Gantt chart of one run of a million costs one block.
        """
        runs = {int(r) for r in runs}
        if self._tables.of_runs is not None and self._calls is None:
            return self._tables.of_runs(runs)

        def rows(df: pd.DataFrame) -> pd.DataFrame:
            return df[df["run"].isin(runs)].reset_index(drop=True)

        return rows(self.calls), rows(self.spans)

    @property
    def spans(self) -> pd.DataFrame:
        """One row per tool or wait step that ran (built on first use)."""
        if self._spans is None:
            self._spans = self._tables.spans()
        return self._spans

    @property
    def streaming(self) -> pd.DataFrame:
        """Streaming metrics of calls with a consumer: one row per variant, step and metric (mean, p50, p95).

        Empty when no call has a consumer. See agentsim.sim.streaming for what each metric means.
        """
        from agentsim.sim.stream_stats import streaming_frame

        stats = self.stream_stats or {}
        return streaming_frame({name: stats[name].section() for name in self.variants if name in stats})

    @property
    def value_of_time(self) -> float | None:
        vot = self.scenario.value_of_time
        return vot.usd_per_hour if vot is not None else None

    # ------------------------------------------------------------------ summary
    def summary_dict(self) -> dict[str, Any]:
        """The ``summary.json`` document."""
        variants: dict[str, Any] = {}
        base = None
        variant_col = self.runs["variant"]
        keep = self._summarised_runs()
        for name in self.variants:
            v = self._variant_summary(name, _as_slice((variant_col == name).to_numpy() & keep))
            if base is None:
                base = v
                empty = v["wall_time_s"]["mean"] is None
                v["vs_baseline"] = {
                    "delta_time_s": None if empty else 0.0,
                    "delta_cost_usd": None if empty else 0.0,
                    "usd_per_hour_saved": None,
                    "pays_off": None,
                    "delta_waiting_s": None if empty else 0.0,
                    "basis": self.time_basis,
                }
            else:
                v["vs_baseline"] = compare(base, v, self.value_of_time, self.time_basis)
            if self.value_of_time is not None:
                v["total_cost_usd"] = self._total_cost(v)
            v["per_call"] = self._call_stats[name].summary()
            v.update(self._sections_of(name))
            variants[name] = v
        vot = self.value_of_time
        doc = {
            "scenario": self.scenario.name,
            "seed": self.seed,
            "runs": self.n_runs,
            "agentsim_version": version(),
            "engine": self.engine,
            "value_of_time_usd_per_hour": vot,
            "variants": variants,
        }
        # What the prices were: the date used for catalog look-ups, and each tier's rates and their source.
        doc["prices_as_of"] = self.plan.prices_as_of.isoformat() if self.plan.prices_as_of else None
        doc["prices"] = prices_summary(self.plan.tiers)
        return doc

    def _summarised_runs(self) -> np.ndarray:
        """Which runs the summaries describe: those that completed (and, in a workload, started inside the
        window)."""
        keep = np.ones(len(self.runs), dtype=bool)
        if "status" in self.runs:
            keep &= (self.runs["status"] == 0).to_numpy()
        if "counted" in self.runs:
            keep &= self.runs["counted"].to_numpy(dtype=bool)
        return keep

    def _variant_summary(self, name: str, mask) -> dict[str, Any]:
        """One variant's times, cost, calls, tokens, breakdown and waiting over the runs of ``mask``."""

        def col(column: str) -> np.ndarray:
            # one column at a time, so the summary never copies the whole runs table
            return self.runs[column].to_numpy()[mask]

        wall = describe(col("wall_time_s"))
        if self.param_ci95 is not None:  # agentsim.param_uncertainty (uncertainty: parameters)
            wall["param_ci95"] = [_f(x) if x is not None else None for x in self.param_ci95[name]]
        cost_full = describe(col("cost_usd"))
        v: dict[str, Any] = {
            "wall_time_s": wall,
            "cost_usd": {k: cost_full[k] for k in ("mean", "ci95", "p50", "p90", "p95", "p99")},
            "calls": {"mean": _mean(col("calls"))},
            "tokens": {
                "input": _mean(col("input_tokens")),
                "cache_read": _mean(col("cache_read_tokens")),
                "cache_write": _mean(col("cache_write_tokens")),
                "output": _mean(col("output_tokens")),
                "reasoning": _mean(col("reasoning_tokens")),
                "cache_write_1h": _mean(col("cache_write_1h_tokens")),
            },
            "breakdown_s": {k: _mean(col(f"{k}_s")) for k in BREAKDOWN},
            **self._waiting(name, col, mask),
        }
        for slot in slots.names()[len(BREAKDOWN) :]:  # stall, a step kind's own (listen): when the plan has them
            if f"{slot}_s" in self.runs:
                v["breakdown_s"][slot] = _mean(col(f"{slot}_s"))
        return v

    def _total_cost(self, v: dict[str, Any]) -> dict[str, Any]:
        """API cost plus the value of the time waited (wall time, or the person's waiting where there are turns)."""
        vot, cost, waited = self.value_of_time, v["cost_usd"]["mean"], v[self.time_basis]["mean"]
        return {
            "mean": _f(cost + vot * waited / 3600.0) if cost is not None and waited is not None else None,
            "value_of_time_usd_per_hour": vot,
            "basis": self.time_basis,
        }

    @property
    def time_basis(self) -> str:
        """The time a variant's value of time is weighed against: ``waiting_s`` where the scenario has the
        person's turns (what they wait for, not their own pauses), else ``wall_time_s`` (contract v1.3)."""
        return "waiting_s" if self.plan.turn_nodes else "wall_time_s"

    def _waiting(self, name: str, col, mask) -> dict[str, Any]:
        """``waiting_s``, ``turn_s`` and ``turns`` of a variant's summarised runs (contract v1.3)."""
        from agentsim.sim.turn_stats import turn_summary

        w = describe(col("waiting_s"))
        return {
            "waiting_s": {k: w[k] for k in ("mean", "ci95", "p50", "p90", "p95", "p99")},
            "turn_s": turn_summary(self.turns_of(name, mask)[0]),
            "turns": {"mean": _mean(col("turns"))},
        }

    def turns_of(self, name: str, mask) -> tuple[np.ndarray, np.ndarray]:
        """The seconds of every turn of variant ``name``'s runs selected by ``mask`` (rows of the runs table), and
        each turn's position among those runs; without ``turns`` each run is one turn, its wall time."""
        runs = self.runs
        if self.turn_samples is None:
            wall = runs["wall_time_s"].to_numpy()[mask]
            return wall, np.arange(wall.size)
        return self.turn_samples[name].of_runs(runs["run"].to_numpy()[mask])

    def _sections_of(self, name: str) -> dict[str, Any]:
        """A variant's sections that only some scenarios have: limits and workload, streaming, success, slo."""
        out = {key: fn(name) for key, fn in self.sections.items()}
        if self.stream_stats is not None:
            out["streaming"] = self.stream_stats[name].section()
            if any(node.interrupt is not None for node in self.plan.calls):
                out["barge_in"] = self.stream_stats[name].barge_in(*self._streamed_runs(name))
        if self.plan.defines_success:
            out["success"] = self._success(name)
        if self.scenario.slo:
            out["slo"] = self._slo(name)
        return out

    def _streamed_runs(self, name: str) -> tuple[int, float, float]:
        """The runs whose calls the streaming section summarises (every run; in a workload the counted runs
        that completed), their turns and their cost: the denominators of the ``barge_in`` section."""
        runs = self.runs
        mask = (runs["variant"] == name).to_numpy()
        if "counted" in runs:
            mask = mask & runs["counted"].to_numpy(dtype=bool) & (runs["status"].to_numpy() == 0)
        turns = float(np.sum(runs["turns"].to_numpy(dtype=np.float64)[mask]))
        return int(mask.sum()), turns, float(np.sum(runs["cost_usd"].to_numpy(dtype=np.float64)[mask]))

    def _success(self, name: str) -> dict[str, Any]:
        """Success share, cost per success and time to success of a variant (see docs/concepts.md).

        Over the runs whose outcome is known (every run of replications; in a workload the counted
        runs that finished or failed): ``share`` = successful / runs; ``cost_per_success_usd`` = the
        cost of *all* those runs (failed ones included) / successful runs; ``time_to_success_s`` =
        their total wall time / successful runs, the expected time to one success when a failed run
        is retried (E[sum of wall times until a success] = E[T] / share, Wald's identity).
        """
        runs = self.runs
        mask = (runs["variant"] == name).to_numpy()
        if "counted" in runs:
            mask = mask & runs["counted"].to_numpy(dtype=bool)
        status = runs["status"].to_numpy()[mask] if "status" in runs else np.zeros(int(mask.sum()), dtype=np.int8)
        known = status != 2  # an unfinished run (a workload's end) has no outcome yet
        ok = int((status[known] == 0).sum())
        total = int(known.sum())
        cost = float(np.cumsum(runs["cost_usd"].to_numpy()[mask][known])[-1]) if total else 0.0
        wall = float(np.cumsum(runs["wall_time_s"].to_numpy()[mask][known])[-1]) if total else 0.0
        return {
            "share": _f(ok / total) if total else None,
            "cost_per_success_usd": _f(cost / ok) if ok else None,
            "time_to_success_s": _f(wall / ok) if ok else None,
        }

    def _slo(self, name: str) -> dict[str, Any]:
        """The share of runs meeting each of the scenario's ``slo`` targets (agentsim.sim.slo), over the runs
        whose outcome is known (completed or failed; in a workload, counted)."""
        from agentsim.sim.slo import slo_section, turn_values

        runs = self.runs
        mask = (runs["variant"] == name).to_numpy().copy()
        if "counted" in runs:
            mask &= runs["counted"].to_numpy(dtype=bool)
        if "status" in runs:
            mask &= runs["status"].to_numpy() != 2  # an unfinished run (a workload's end) has no outcome yet
        n = int(mask.sum())
        streamed = {c: runs[c].to_numpy()[mask] for c in runs.columns if isinstance(c, str) and "." in c}

        def value_of(metric: str):
            if metric == "turn_s":  # a target on each turn: the turns, and each run's longest
                from agentsim.sim.turn_stats import per_run_worst

                seconds, where = self.turns_of(name, mask)
                return seconds, per_run_worst(seconds, where, n)
            if metric in runs.columns:
                return runs[metric].to_numpy(dtype=np.float64)[mask]
            return turn_values(streamed, metric, n)

        return slo_section(dict(self.scenario.slo), value_of, n)

    def summary_model(self) -> Summary:
        """The ``summary.json`` document as a validated, typed :class:`~agentsim.sim.summary_model.Summary`
        (:meth:`summary_dict` validated: read its figures by attribute, ``s.variants[name].wall_time_s.mean``)."""
        return Summary.model_validate(self.summary_dict())

    def to_json(self, indent: int = 2) -> str:
        """The summary document as JSON text (deterministic for a given scenario and seed)."""
        return json.dumps(self.summary_dict(), indent=indent, allow_nan=False) + "\n"

    def summary(self) -> pd.DataFrame:
        """One row per variant with the headline figures (the summary document, flattened)."""
        return summary_frame(summary_rows(self.summary_model())).set_index("variant")

    def limits_timeseries(self) -> pd.DataFrame:
        """In-flight requests and bucket levels of each account over time (workloads only; else empty)."""
        rows = []
        for v, out in enumerate(self.outcomes):
            name = self.variants[v]
            for acc in out.accounts:
                spec = acc.spec
                rows.append(
                    pd.DataFrame(
                        {
                            "variant": name,
                            "account": spec.name,
                            "series": "in_flight",
                            "t_s": [0.0, *(t for t, _ in acc.inflight_log)],
                            "value": [0.0, *(x for _, x in acc.inflight_log)],
                            "limit": float(spec.concurrency) if spec.concurrency else np.inf,
                        }
                    )
                )
                for attr, label, limit in (
                    ("rpm", "rpm", spec.rpm),
                    ("itpm", "input_tpm", spec.input_tpm),
                    ("otpm", "output_tpm", spec.output_tpm),
                ):
                    log = acc.level_logs.get(attr)
                    if log is not None:
                        rows.append(
                            pd.DataFrame(
                                {
                                    "variant": name,
                                    "account": spec.name,
                                    "series": label,
                                    "t_s": [0.0, *(t for t, _ in log)],
                                    "value": [float(limit), *(x for _, x in log)],
                                    "limit": float(limit),
                                }
                            )
                        )
        if not rows:
            return pd.DataFrame(columns=["variant", "account", "series", "t_s", "value", "limit"])
        return pd.concat(rows, ignore_index=True)

    # Figures are functions of the figures layer (agentsim.viz.figures: plot_tradeoff(res)); this layer computes
    # tables and statistics and imports no figure code. For res.plot_tradeoff(), the package root (the composition
    # root, outside the layers) installs the methods' loader in agentsim.model.extensions, run on first use.
    def __getattr__(self, name: str):
        if name.startswith("plot_") and extensions.load("figures"):
            return getattr(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _repr_html_(self) -> str:
        summary = self.summary()
        columns = [
            "wall_mean_s",
            "wall_p95_s",
            "cost_mean_usd",
            "cost_p95_usd",
            "calls_mean",
            "delta_time_s",
            "delta_cost_usd",
            "usd_per_hour_saved",
            "pays_off",
        ]
        success = [c for c in ("success_share", "cost_per_success_usd", "time_to_success_s") if c in summary]
        df = summary[columns + success]
        head = f"<p><b>{self.scenario.name}</b>: {self.n_runs} runs, seed {self.seed}, engine {self.engine}</p>"
        return head + df.to_html(float_format=lambda x: f"{x:,.4g}", na_rep="–")

    def __repr__(self) -> str:
        return f"<Results {self.scenario.name!r}: {len(self.variants)} variants x {self.n_runs} runs ({self.engine})>"


def summary_rows(doc: Summary | dict[str, Any]) -> list[dict[str, Any]]:
    """One flat row per variant of a ``summary.json`` document, typed or its dict (the columns of
    :meth:`Results.summary`)."""
    doc = as_summary(doc)
    rows = []
    for name, v in doc.variants.items():
        w, c, vs, tok = v.wall_time_s, v.cost_usd, v.vs_baseline, v.tokens
        rows.append(
            {
                "variant": name,
                "wall_mean_s": w.mean,
                "wall_ci95_lo_s": w.ci95[0],
                "wall_ci95_hi_s": w.ci95[1],
                "wall_p50_s": w.p50,
                "wall_p90_s": w.p90,
                "wall_p95_s": w.p95,
                "wall_p99_s": w.p99,
                "cost_mean_usd": c.mean,
                "cost_ci95_lo_usd": c.ci95[0],
                "cost_ci95_hi_usd": c.ci95[1],
                "cost_p95_usd": c.p95,
                "calls_mean": v.calls.mean,
                "waiting_mean_s": v.waiting_s.mean,
                "waiting_p95_s": v.waiting_s.p95,
                "turn_p95_s": v.turn_s.p95,
                "turns_mean": v.turns.mean,
                "time_basis": vs.basis,
                "input_tokens_mean": tok.input,
                "cache_read_tokens_mean": tok.cache_read,
                "cache_write_tokens_mean": tok.cache_write,
                "output_tokens_mean": tok.output,
                "reasoning_tokens_mean": tok.reasoning,
                **{f"{k}_s": getattr(v.breakdown_s, k) for k in BREAKDOWN},  # the slots every run has
                "delta_time_s": vs.delta_time_s,
                "delta_cost_usd": vs.delta_cost_usd,
                "usd_per_hour_saved": vs.usd_per_hour_saved,
                "pays_off": vs.pays_off,
                **_success_columns(v.success),
                **_slo_columns(v.slo or {}),
                **_ended_columns(v, doc.runs),
            }
        )
    return rows


def _success_columns(s: Success | None) -> dict[str, Any]:
    """With ``fail`` steps: the success share, cost per success and time to success."""
    if s is None:
        return {}
    return {"success_share": s.share, "cost_per_success_usd": s.cost_per_success_usd,
            "time_to_success_s": s.time_to_success_s}  # fmt: skip


def _slo_columns(slo: dict[str, SloTarget]) -> dict[str, Any]:
    """Per ``slo`` target (and ``all``): ``slo_KEY_share`` and its interval ``slo_KEY_ci95_lo`` / ``_hi``; per
    target also the targeted metric's ``slo_KEY_mean``, ``slo_KEY_p95`` and ``slo_KEY_p99``."""
    out: dict[str, Any] = {}
    for k, e in slo.items():
        out[f"slo_{k}_share"] = e.share
        out[f"slo_{k}_ci95_lo"], out[f"slo_{k}_ci95_hi"] = e.ci95
        if k != "all":
            out[f"slo_{k}_mean"], out[f"slo_{k}_p95"], out[f"slo_{k}_p99"] = e.mean, e.p95, e.p99
    return out


TEXT_COLUMNS = ("variant", "pays_off", "basis", "time_basis", "binding_account", "binding_limit")


def _ended_columns(v: Variant, runs: int | None) -> dict[str, Any]:
    """How the runs of a variant ended and what limited them, where they can fail: a workload's runs counted,
    completed, failed share and throughput; with limits or failures, the 429s and the binding account and
    limit (a workload's: agentsim.sim.binding). A replication's failed share is its runs that failed (retries
    used up) over its runs."""
    out: dict[str, Any] = {}
    w, lim = v.workload, v.limits
    if w is not None:
        out["runs_counted"], out["runs_completed"] = w.runs_counted, w.runs_completed
        out["failed_share"], out["throughput_runs_per_hour"] = w.failed_share, w.throughput_runs_per_hour
    elif lim is not None and runs:
        out["failed_share"] = lim.attempts.failed_runs / runs
    if lim is not None:
        out["rejected_429"] = lim.attempts.rejected_429
        if w is not None:
            b = lim.binding
            out["binding_account"] = b.account if b else None
            out["binding_limit"] = b.limit if b else None
    return out


def summary_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """:func:`summary_rows` as a DataFrame whose figures are float64 even when a variant completed no run
    (its ``None`` figures become NaN instead of making the column an object column)."""
    df = pd.DataFrame(rows)
    for col in df.columns:
        if col not in TEXT_COLUMNS and df[col].dtype == object:
            df[col] = df[col].astype("float64")
    return df


def compare(base: dict, v: dict, vot: float | None, basis: str = "wall_time_s") -> dict[str, Any]:
    """Δ wall time, Δ waiting, Δ cost, USD per hour saved, and whether it pays off at ``vot`` USD/h (the rule of
    :mod:`agentsim.sim.payoff`: total cost not above the baseline's, for a variant faster or cheaper). The hours
    saved are of ``basis``: ``waiting_s`` where the scenario has turns (the person's pauses are not waiting),
    else ``wall_time_s``."""
    figures = (v[basis]["mean"], base[basis]["mean"], v["cost_usd"]["mean"], base["cost_usd"]["mean"])
    if any(x is None for x in figures):
        # a variant (or the baseline) with no completed run has nothing to compare
        return {
            "delta_time_s": None,
            "delta_cost_usd": None,
            "usd_per_hour_saved": None,
            "pays_off": None,
            "delta_waiting_s": None,
            "basis": basis,
        }
    dt = v[basis]["mean"] - base[basis]["mean"]
    dc = v["cost_usd"]["mean"] - base["cost_usd"]["mean"]
    per_hour = payoff.usd_per_hour_saved(dt, dc)
    return {
        "delta_time_s": _f(v["wall_time_s"]["mean"] - base["wall_time_s"]["mean"]),
        "delta_cost_usd": _f(dc),
        "usd_per_hour_saved": _f(per_hour) if per_hour is not None else None,
        "pays_off": payoff.pays_off(dt, dc, vot) if vot is not None else None,
        "delta_waiting_s": _f(v["waiting_s"]["mean"] - base["waiting_s"]["mean"])
        if "waiting_s" in v and "waiting_s" in base
        else None,
        "basis": basis,
    }

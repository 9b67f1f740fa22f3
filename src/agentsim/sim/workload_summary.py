"""A workload's results: each variant one long simulation of many agents, summarised over its window.

:func:`simulate_workload` runs every variant (:func:`agentsim.sim.workload.run_workload`: the same draws,
common random numbers), prices the calls and keeps the runs that started; the summary describes the
runs *counted* (started inside ``[warmup, duration]``) that completed. A variant's ``workload`` section
reports the window, the runs started, counted, completed, failed and unfinished, the throughput and
the token rates of the calls started inside the window; its ``limits`` section the queue waits and
attempts of the counted runs' calls and each account's use over the window (in flight, admitted per
minute and utilisation of each bucket).
"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pandas as pd

from agentsim.plan.nodes import Plan
from agentsim.plan.sizeguard import runs_per_block
from agentsim.sim.binding import binding
from agentsim.sim.records import (
    DONE,
    calls_frame,
    concat_attempts,
    frames_of,
    run_columns,
    spans_frame,
    tables_from,
    turn_durations,
)
from agentsim.sim.results import CallStats, Results, TableSources, VariantStats
from agentsim.sim.stream_stats import StreamStats
from agentsim.sim.turn_stats import TurnSamples

__all__ = ["simulate_workload"]


def simulate_workload(plan: Plan, seed: int, progress=None) -> Results:
    """Each variant as one long simulation of many agents sharing accounts (common random numbers).

    ``progress(done, total)``: simulated seconds of the variants' windows so far, and in all."""
    from agentsim.sim.workload import run_workload

    outcomes = []
    for v in range(len(plan.variants)):
        total = len(plan.variants) * plan.workload.duration_s

        def tick(now: float, v=v, total=total) -> None:
            progress(v * plan.workload.duration_s + min(now, plan.workload.duration_s), total)

        outcomes.append(run_workload(plan, seed, v, tick if progress is not None else None))
        # The runs in flight at the stop are SimPy processes in reference cycles with their environment,
        # and hold their blocks' runners (every draw): collected now, not one variant later (~0.1 s).
        gc.collect()
    summary = _WorkloadSummary(plan, outcomes)
    sections = {"workload": summary.workload_section}
    if plan.accounts or plan.needs_attempts:
        sections["limits"] = summary.limits_section
    return Results(
        plan,
        seed=seed,
        runs=int(summary.counted_runs(plan.variants[0]).shape[0]),
        engine="des",
        runs_df=summary.runs_df,
        stats=VariantStats(
            summary.call_stats,
            streams=summary.stream_stats if plan.has_streaming else None,
            turns=summary.turn_samples if plan.turn_nodes else None,
            sections=sections,
        ),
        tables=TableSources(summary.all_calls, summary.builder(spans_frame), of_runs=summary.tables_of),
        outcomes=outcomes,
    )


class _WorkloadSummary:
    """The runs table, per-call statistics and sections of a workload's variants."""

    def __init__(self, plan: Plan, outcomes: list):
        self.plan, self.outcomes = plan, outcomes
        self.call_stats = {name: CallStats() for name in plan.variants}
        self.stream_stats = {name: StreamStats(plan) for name in plan.variants}
        self.turn_samples = {name: TurnSamples() for name in plan.variants}
        frames = [self._block(v, res) for v, out in enumerate(outcomes) for res in out.blocks]
        self.runs_df = pd.concat(frames, ignore_index=True)
        self.runs_df["variant"] = pd.Categorical(self.runs_df["variant"], categories=list(plan.variants))
        self._calls: pd.DataFrame | None = None

    def _block(self, v: int, res) -> pd.DataFrame:
        """A block's runs that started; its counted, completed runs' calls into the statistics."""
        plan = self.plan  # (its calls were priced as the workload ended: agentsim.sim.workload)
        cols = run_columns(plan, res)
        counted_ok = res.counted & (cols["status"] == 0)
        if plan.has_streaming:  # streaming metrics of the calls of counted, completed runs
            from agentsim.sim.stream_metrics import block_metrics, run_values

            per_node = block_metrics(plan, res)
            cols.update(run_values(plan, per_node, res.block.n))
            self.stream_stats[plan.variants[v]].add(
                {nid: {k: a[counted_ok[m["_run"]]] for k, a in m.items()} for nid, m in per_node.items()}
            )
        if plan.turn_nodes:
            self.turn_samples[plan.variants[v]].add(*turn_durations(plan, res))
        frame = pd.DataFrame({"variant": plan.variants[v], "run": res.block.start + np.arange(res.block.n), **cols})
        for node in plan.calls:
            t = res.calls[node.id]
            done = (t["status"] == DONE) & counted_ok.reshape((-1,) + (1,) * (t["status"].ndim - 1))
            self.call_stats[plan.variants[v]].add(t["ttft"][done], t["tps"][done])
        return frame[res.started]

    def builder(self, frame_fn):
        return lambda: frames_of(self.plan, self._blocks(), frame_fn)

    def _blocks(self, held=None):
        """Each block's results (one per variant), in block order; ``held``: only those blocks."""
        count = max(len(out.blocks) for out in self.outcomes)
        for b in range(count) if held is None else held:
            yield [out.blocks[b] for out in self.outcomes if b < len(out.blocks)]

    def tables_of(self, runs) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The calls and spans rows of ``runs`` (numbered in the order they started), from their blocks only."""
        size = runs_per_block(self.plan)
        held = sorted({r // size for r in runs if r >= 0})
        return tables_from(self.plan, self._blocks(held), (calls_frame, spans_frame), runs)

    def all_calls(self) -> pd.DataFrame:
        if self._calls is None:
            self._calls = self.builder(calls_frame)()
        return self._calls

    def calls_of(self, name: str, columns: list[str]) -> pd.DataFrame:
        """The calls of variant ``name``, only the ``columns`` a section reads (a copy of those alone)."""
        df = self.all_calls()
        return df.loc[df["variant"] == name, columns]

    def counted_runs(self, name: str) -> pd.DataFrame:
        return self.runs_df[(self.runs_df["variant"] == name) & self.runs_df["counted"]]

    def workload_section(self, name: str) -> dict[str, Any]:
        out = self.outcomes[self.plan.variants.index(name)]
        w0, w1 = out.window
        hours = (w1 - w0) / 3600.0
        r = self.runs_df[self.runs_df["variant"] == name]
        end = r["start_s"] + r["wall_time_s"]
        ok_in_window = (r["status"] == 0) & (end >= w0) & (end <= w1)
        counted = r["counted"]
        calls = self.calls_of(name, ["t_start", "input_tokens", "output_tokens", "reasoning_tokens"])
        in_window = calls[(calls["t_start"] >= w0) & (calls["t_start"] < w1)]
        return {
            "window_s": [w0, w1],
            "simulated_until_s": out.end_s,
            "runs_started": len(r),
            "runs_counted": int(counted.sum()),
            "runs_completed": int((counted & (r["status"] == 0)).sum()),
            "runs_failed": int((counted & (r["status"] == 1)).sum()),
            "runs_unfinished": int((counted & (r["status"] == 2)).sum()),
            "runs_in_flight_at_end": int((r["status"] == 2).sum()),
            "failed_share": float((counted & (r["status"] != 0)).sum() / max(1, counted.sum())),
            "cost_of_failed_runs_usd": float(r.loc[counted & (r["status"] == 1), "cost_usd"].sum()),
            "throughput_runs_per_hour": float(ok_in_window.sum() / hours),
            "input_tokens_per_min": float(in_window["input_tokens"].sum() / (hours * 60)),
            "output_tokens_per_min": float(
                (in_window["output_tokens"] + in_window["reasoning_tokens"]).sum() / (hours * 60)
            ),
        }

    def limits_section(self, name: str) -> dict[str, Any]:
        from agentsim.sim.loadstats import attempt_counts, queue_wait

        v = self.plan.variants.index(name)
        out = self.outcomes[v]
        runs_v = self.counted_runs(name)
        calls = self.calls_of(name, ["run", "node", "model", "speed", "status", "t_submit", "t_start"])
        calls = calls[calls["run"].isin(runs_v["run"])]
        attempts = concat_attempts([b.attempts for b in out.blocks])
        if attempts is not None:
            keep = np.isin(attempts["run"], runs_v["run"].to_numpy())
            attempts = {k: a[keep] for k, a in attempts.items()}
        accounts = {acc.spec.name: _account(acc, *out.window) for acc in out.accounts}
        return {
            "queue_wait_s": queue_wait(calls),
            "attempts": attempt_counts(attempts, calls, runs_v, self.plan, v),
            "accounts": accounts,
            "binding": binding(accounts),
        }


def _account(acc, w0: float, w1: float) -> dict[str, Any]:
    """One account's use over the window ``[w0, w1]``: requests in flight, each bucket's admitted rate."""
    from agentsim.sim.loadstats import step_mean, window_admitted

    spec = acc.spec
    a: dict[str, Any] = {"policy": spec.policy, "rejected_429": acc.rejections}
    mean, peak = step_mean(acc.inflight_log, w0, w1)
    a["concurrency"] = {
        "limit": spec.concurrency,
        "mean_in_flight": mean,
        "max_in_flight": peak,
        "utilisation": mean / spec.concurrency if spec.concurrency else None,
    }
    for attr, limit, label in (
        ("rpm", spec.rpm, "rpm"),
        ("itpm", spec.input_tpm, "input_tpm"),
        ("otpm", spec.output_tpm, "output_tpm"),
    ):
        bucket = getattr(acc, attr)
        if bucket is not None:
            per_min = window_admitted(bucket.admitted, w0, w1) / ((w1 - w0) / 60.0)
            a[label] = {"limit_per_min": limit, "admitted_per_min": per_min, "utilisation": per_min / limit}
    has = {"concurrency": spec.concurrency is not None, "rpm": spec.rpm is not None,
           "input_tpm": spec.input_tpm is not None, "output_tpm": spec.output_tpm is not None}  # fmt: skip
    a["refused_by"] = {k: int(n) for k, n in acc.refused_by.items() if has[k]}
    if spec.policy == "queue":
        a["waited_s"] = {k: float(s) for k, s in acc.waited_s.items() if has[k]}
    return a

"""``simulate``: scenario in, :class:`~agentsim.sim.results.Results` out.

Runs are cut into blocks (:mod:`agentsim.plan.sampling`); each block is sampled once,
then simulated in every variant on the same draws (common random numbers), by
the DES (:mod:`agentsim.sim.engine`) or the vectorised fast path
(:mod:`agentsim.sim.fastpath`). Blocks are independent, so they can be spread over
worker processes; the result is the same bytes whatever the number of workers,
because each block's numbers depend only on (seed, block index) and blocks are
reassembled in order.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from agentsim.model.registry import step_kinds
from agentsim.model.scenario import Scenario
from agentsim.plan.compiler import Plan, compile_plan
from agentsim.plan.sampling import block_spans, call_speeds, sample_block
from agentsim.plan.sizeguard import check_plan, runs_per_block
from agentsim.plan.validation import load, parse
from agentsim.sim.executors import Placement, check_executor, dask_client, ordered_chunks
from agentsim.sim.packing import new_column, pack_columns, raw, unpack_into
from agentsim.sim.records import (
    DONE,
    BlockResult,
    calls_frame,
    concat_attempts,
    frames_of,
    price_calls,
    run_columns,
    spans_frame,
    tables_from,
    turn_durations,
)
from agentsim.sim.results import CallStats, Results, TableSources, VariantStats, per_call_runs
from agentsim.sim.stream_stats import StreamStats
from agentsim.sim.summary_model import Summary
from agentsim.sim.turn_stats import TurnSamples

__all__ = ["ENGINES", "choose_engine", "simulate", "simulate_block", "simulate_plan"]

ENGINES = ("auto", "des", "fastpath")
KEEP_CALLS_LIMIT = 4_000_000  # call instances kept in memory for .calls; beyond that, re-simulated on demand
_HERE = Placement()  # blocks simulated in this process, one after another


class EngineError(ValueError):
    """The requested engine cannot run this scenario."""


def choose_engine(plan: Plan, requested: str = "auto") -> str:
    if requested not in ENGINES:
        raise EngineError(f"unknown engine '{requested}' (choose one of {', '.join(ENGINES)})")
    reasons = des_reasons(plan)
    if requested == "fastpath" and reasons:
        raise EngineError("the fast path cannot run this scenario: " + "; ".join(reasons) + " (use --engine des)")
    if requested == "auto":
        return "des" if reasons or not _fastpath_available() else "fastpath"
    return requested


def des_reasons(plan: Plan) -> list[str]:
    """Why a scenario needs the discrete-event engine (empty when the fast path can run it)."""
    sc = plan.scenario
    reasons = []
    if sc.limits:
        reasons.append("it declares shared limits (limits:)")
    if sc.workload is not None and sc.workload.simulates_many:
        reasons.append("it runs a workload of many agents (workload: arrivals/concurrent)")
    if plan.time_of_day:
        reasons.append(
            "its provider conditions follow the time of day (conditions.time_of_day): a call's speed depends "
            "on the simulated clock when it starts"
        )
    if any(t.error_rate > 0 or t.timeout_s is not None for t in plan.tiers):
        reasons.append("its models can fail (error_rate or timeout) and be retried")
    kinds = step_kinds()
    for reason in dict.fromkeys(kinds[n.kind].des_only for n in plan.nodes if n.kind in kinds):
        if reason:
            reasons.append(reason)  # a step kind without a fast-path form
    reasons.extend(dict.fromkeys(r for n in plan.nodes if (r := n.des_reason())))
    return reasons


def _fastpath_available() -> bool:
    try:
        from agentsim.sim import fastpath  # noqa: F401
    except ImportError:
        return False
    return True


def simulate_block(
    plan: Plan, seed: int, span: tuple[int, int, int], engine: str, *, summary_only: bool = False, samples: bool = True
):
    """Sample block ``span`` (``(index, first_run, n)``) once and simulate it in every variant, priced:
    ``(block, [BlockResult per variant])`` (the block's draws are shared by the variants).

    ``summary_only`` (fast path, a plan :func:`summary_only_possible` allows): per-run totals without per-call
    tensors, plus, when ``samples``, what the per-call statistics read (see
    :func:`agentsim.sim.fastpath.run_block_fast`). The per-run numbers are the same bits either way.
    """
    index, start, n = span
    block = sample_block(plan, seed, index, start, n)
    return block, list(_variant_results(plan, block, engine, summary_only, samples))


def _variant_results(plan: Plan, block, engine: str, summary_only: bool = False, samples: bool = True):
    """Each variant's result of a sampled block, priced, one at a time (so a caller that reads each in
    turn holds one variant's tensors at once)."""
    for v in range(len(plan.variants)):
        speeds = call_speeds(plan, block, v)
        if engine == "fastpath":
            from agentsim.sim.fastpath import run_block_fast

            res = run_block_fast(plan, block, v, speeds, summary_only=summary_only, samples=samples)
        else:
            from agentsim.sim.engine import run_block_des

            res = run_block_des(plan, block, v, speeds)
        if not (summary_only and engine == "fastpath"):  # summary-only blocks are priced as they run
            price_calls(plan, res, speeds)
        yield res


def summary_only_possible(plan: Plan, engine: str) -> bool:
    """Whether ``engine`` can simulate ``plan`` for its summary without per-call tensors."""
    if engine != "fastpath" or plan.needs_attempts:
        return False
    from agentsim.sim.fastpath import summary_only_reasons

    return not summary_only_reasons(plan)


def _run_block(plan: Plan, seed: int, span: tuple[int, int, int], engine: str) -> list[BlockResult]:
    return simulate_block(plan, seed, span, engine)[1]


def _block_summary(plan: Plan, seed: int, span, engine: str, keep: bool, sampled: int):
    """Simulate one block in every variant; return per-variant run columns, per-call samples, and
    (when ``keep``) the full block results for the calls table.

    ``sampled``: the per-call statistics read the calls of runs ``0 .. sampled - 1``
    (:func:`agentsim.sim.results.per_call_runs`); a block past them computes no samples.
    """
    first = max(0, min(span[2], sampled - span[1]))  # how many of the block's runs are sampled
    if not keep and summary_only_possible(plan, engine):
        results = simulate_block(plan, seed, span, engine, summary_only=True, samples=first > 0)[1]
    else:
        results = _run_block(plan, seed, span, engine)
    columns, samples, streams = [], [], []
    for res in results:
        columns.append(run_columns(plan, res))
        if plan.has_streaming:
            from agentsim.sim.stream_metrics import block_metrics, run_values

            streams.append(block_metrics(plan, res))
            columns[-1].update(run_values(plan, streams[-1], res.block.n))
        else:
            streams.append(None)
        samples.append((*_call_samples(plan, res, first), *_turn_samples(plan, res)))
    return columns, samples, (results if keep else None), streams


def _chunk_task(shared: tuple, spans: list) -> tuple:
    """Consecutive blocks run by an executor (``shared``: plan, seed, engine, keep, and how many leading
    runs the per-call statistics read), packed into one message: per variant, the run columns of all the
    blocks (:func:`agentsim.sim.packing.pack_columns`) and their per-call samples, concatenated in
    block order; then each block's kept results and streaming metrics."""
    plan, seed, engine, keep, sampled = shared
    parts = [_block_summary(plan, seed, s, engine, keep, sampled) for s in spans]
    cols, samples = [], []
    for v in range(len(plan.variants)):
        cols.append(pack_columns([p[0][v] for p in parts]))
        samples.append(tuple(np.concatenate([p[1][v][k] for p in parts]) for k in range(4)))
    return cols, samples, [p[2] for p in parts], [p[3] for p in parts]


def _turn_samples(plan: Plan, res: BlockResult) -> tuple[np.ndarray, np.ndarray]:
    """Every turn's seconds and run, when the plan has ``turns`` (else none: the runs table has them)."""
    if not plan.turn_nodes:
        return np.zeros(0), np.zeros(0, dtype=np.int64)
    return turn_durations(plan, res)


def _call_samples(plan: Plan, res: BlockResult, first: int) -> tuple[np.ndarray, np.ndarray]:
    """TTFT and TPS of the completed calls of the block's ``first`` runs (node by node, in run then
    instance order)."""
    if first <= 0:
        return np.zeros(0), np.zeros(0)
    ttft, tps = [], []
    for node in plan.calls:
        t = res.calls[node.id]
        status, a, b = t["status"][:first], t["ttft"][:first], t["tps"][:first]
        done = status == DONE
        if done.all():  # every instance made: no mask to apply (same order as the mask's)
            a, b = a.reshape(-1), b.reshape(-1)
        else:
            a, b = a[done], b[done]
        ttft.append(a)
        tps.append(b)
    return (np.concatenate(ttft) if ttft else np.zeros(0), np.concatenate(tps) if tps else np.zeros(0))


def _calls_per_run(plan: Plan) -> float:
    """A rough count of call instances per run: the product of the mean counts around each call, summed
    (every option of a ``choose`` counted, so it may overestimate)."""
    per_run = 0.0
    for node in plan.calls:
        mult = 1.0
        for m in node.scope:
            mult *= plan.nodes[m].count_bounds()[0]
        per_run += mult
    return per_run


def _est_call_instances(plan: Plan, runs: int) -> int:
    """A rough count of call instances in ``runs`` runs (:func:`_calls_per_run` times runs)."""
    return int(_calls_per_run(plan) * runs)


def simulate_plan(
    plan: Plan,
    runs: int,
    seed: int,
    *,
    engine: str = "auto",
    where: Placement = _HERE,
    keep_calls: bool | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Results:
    """Simulate ``runs`` runs of a compiled plan.

    ``keep_calls``: True builds every block's per-call tensors and keeps them for ``.calls``; False
    never keeps them (``.calls``, ``.spans`` and ``--out`` re-simulate the blocks, same draws, same
    bits); None (default) keeps them for small simulations the fast path cannot run summary-only.
    The summary is the same bytes whichever is chosen. ``where``: where the blocks run
    (agentsim.sim.executors: this process, local processes, or a Dask cluster). ``progress(done,
    total)``: called with the runs simulated so far, block by block (a workload: its simulated seconds).
    """
    where.check()
    engine = choose_engine(plan, engine)
    check_plan(plan, runs, engine)  # refuses absurd sizes before any work starts
    if plan.workload is not None:
        from agentsim.sim.workload_summary import simulate_workload

        return simulate_workload(plan, seed, progress=progress)
    spans = block_spans(runs, runs_per_block(plan))
    keep = _keep_blocks(plan, runs, engine, keep_calls)
    sampled = per_call_runs(runs, _calls_per_run(plan))
    got = _Collected(plan, runs, keep)
    if where.in_this_process(len(spans)):
        for s in spans:
            cols, samples, results, streams = _block_summary(plan, seed, s, engine, keep, sampled)
            got.consume(s[1], [{k: raw(a) for k, a in c.items()} for c in cols], samples, [results], [streams])
            if progress is not None:
                progress(s[1] + s[2], runs)
    else:  # blocks elsewhere (processes, a Dask cluster), handed back in order, several to a task
        shared = (plan, seed, engine, keep, sampled)
        for chunk, part in ordered_chunks(_chunk_task, shared, spans, **where.options()):
            got.consume(chunk[0][1], *part)
            if progress is not None:
                progress(chunk[-1][1] + chunk[-1][2], runs)
    return got.results(seed, engine, spans)


def _keep_blocks(plan: Plan, runs: int, engine: str, keep_calls: bool | None) -> bool:
    """Whether to keep the blocks for ``.calls`` (see :func:`simulate_plan`'s ``keep_calls``)."""
    # keep the blocks for .calls when they are small, unless the fast path can skip per-call tensors:
    # then .calls, .spans and --out re-simulate the blocks in full on demand (the same draws, the same bits)
    keep = plan.needs_attempts or keep_calls is True
    if keep_calls is None:
        keep = keep or (
            _est_call_instances(plan, runs) * len(plan.variants) <= KEEP_CALLS_LIMIT
            and not summary_only_possible(plan, engine)
        )
    return keep


class _Collected:
    """What a simulation's blocks hand in, gathered in block order: run columns, per-call samples,
    streaming metrics, and (when kept) the blocks themselves."""

    def __init__(self, plan: Plan, runs: int, keep: bool):
        self.plan, self.runs = plan, runs
        self.call_stats = {name: CallStats() for name in plan.variants}
        self.stream_stats = {name: StreamStats(plan) for name in plan.variants}
        self.turn_samples = {name: TurnSamples() for name in plan.variants}
        self.columns: dict[str, np.ndarray] = {}
        self.kept: list | None = [] if keep else None

    def consume(self, first: int, cols, samples, results, streams) -> None:
        """Copy blocks (one, or a task's consecutive ones) into the zeroed columns: one copy of the table."""
        plan, nv = self.plan, len(self.plan.variants)
        for v, block_cols in enumerate(cols):
            for name, packed in block_cols.items():
                if name not in self.columns:
                    self.columns[name] = new_column(self.runs * nv, packed[0])
                unpack_into(self.columns[name], v * self.runs + first, packed)
            self.call_stats[plan.variants[v]].add(*samples[v][:2])
            self.turn_samples[plan.variants[v]].add(*samples[v][2:])
            if plan.has_streaming:
                for block_streams in streams:
                    self.stream_stats[plan.variants[v]].add(block_streams[v])
        if self.kept is not None:
            self.kept.extend(results)

    def results(self, seed: int, engine: str, spans: list) -> Results:
        plan, runs, nv = self.plan, self.runs, len(self.plan.variants)
        codes = np.repeat(np.arange(nv, dtype=np.int8 if nv < 128 else np.int64), runs)  # the codes' own dtype
        variant = pd.Categorical.from_codes(codes, categories=list(plan.variants))
        run = np.arange(runs) if nv == 1 else np.tile(np.arange(runs), nv)  # (tile copies even once)
        runs_df = pd.DataFrame({"variant": variant, "run": run, **self.columns}, copy=False)
        tables = _Tables(plan, seed, engine, spans, self.kept)
        calls_builder = tables.builder(calls_frame)
        sections = {}
        if plan.needs_attempts:
            sections["limits"] = _replication_limits_section(plan, runs_df, self.kept, calls_builder)
        return Results(
            plan,
            seed=seed,
            runs=runs,
            engine=engine,
            runs_df=runs_df,
            stats=VariantStats(
                self.call_stats,
                streams=self.stream_stats if plan.has_streaming else None,
                turns=self.turn_samples if plan.turn_nodes else None,
                sections=sections,
            ),
            tables=TableSources(calls_builder, tables.builder(spans_frame), tables.calls_parts, tables.of_runs),
        )


class _Tables:
    """The calls and spans tables of a simulation, from its kept blocks or by simulating them again
    (the same seeds, the same draws, the same bits)."""

    def __init__(self, plan: Plan, seed: int, engine: str, spans: list, kept: list | None):
        self.plan, self.seed, self.engine, self.spans, self.kept = plan, seed, engine, spans, kept

    def blocks(self):
        if self.kept is not None:
            yield from self.kept
        else:
            for s in self.spans:
                yield _run_block(self.plan, self.seed, s, self.engine)

    def builder(self, frame_fn):
        """A function building one table (``frame_fn`` of each block's result), variant by variant."""
        return lambda: frames_of(self.plan, self.blocks(), frame_fn)

    def of_runs(self, runs) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The calls and spans rows of ``runs`` only, from the blocks that hold them (kept, or simulated
        again: one block of 4096 runs for the first runs, whatever the simulation's size)."""
        wanted = {int(r) for r in runs if 0 <= r < self.spans[-1][1] + self.spans[-1][2]}
        size = self.spans[0][2]  # runs per block (the plan's: agentsim.plan.sizeguard.runs_per_block)
        held = sorted({r // size for r in wanted})

        def results():
            for b in held:
                if self.kept is not None:
                    yield self.kept[b]
                else:  # one variant's tensors at a time: read for the runs wanted, then let go
                    block = sample_block(self.plan, self.seed, *self.spans[b])
                    block = _first_runs(self.plan, block, max(r for r in wanted if r // size == b) + 1)
                    for res in _variant_results(self.plan, block, self.engine):
                        yield [res]

        return tables_from(self.plan, results(), (calls_frame, spans_frame), wanted)

    def calls_parts(self):
        """The calls table block by block, for writing it without holding it whole."""
        for results in self.blocks():
            for res in results:
                yield res.variant, calls_frame(self.plan, res, self.plan.variants[res.variant])


def _first_runs(plan: Plan, block, end: int):
    """Runs ``block.start .. end - 1`` of a sampled block, as a block of their own: every draw of
    :func:`~agentsim.plan.sampling.sample_block` is per run (leading axis) and replications do not
    interact, so they simulate to the same bits as in the whole block, with its instance axes kept. The
    per-token draws of streaming and the ``late`` draws (made from the block's size, outside
    ``sample_block``) are not, so a plan that makes any keeps its whole block."""
    k = end - block.start
    per_token = plan.has_streaming or plan.has_stalls or any(c.interrupt is not None for c in plan.calls)
    late = any(d.late for d in plan.draws)
    if k >= block.n or per_token or late or any(n.follows_call for n in plan.nodes):
        return block

    def head(values: dict) -> dict:
        return {key: a[:k] for key, a in values.items()}

    by_variant = {v: head(own) for v, own in block.by_variant.items()}
    fresh = {"speed_cache": {}, "stream_cache": {}}
    return dataclasses.replace(block, n=k, values=head(block.values), by_variant=by_variant, **fresh)


def _replication_limits_section(plan: Plan, runs_df: pd.DataFrame, kept: list, calls_builder):
    """Queue waits and attempt counts when each replication runs alone against fresh accounts."""
    from agentsim.sim.loadstats import attempt_counts, queue_wait

    cache: dict = {}

    def section(name: str) -> dict:
        v = plan.variants.index(name)
        if "calls" not in cache:
            cache["calls"] = calls_builder()
        calls = cache["calls"]
        calls = calls[calls["variant"] == name]
        attempts = concat_attempts([results[v].attempts for results in kept])
        runs_v = runs_df[runs_df["variant"] == name]
        return {"queue_wait_s": queue_wait(calls), "attempts": attempt_counts(attempts, calls, runs_v, plan, v)}

    return section


def simulate(
    scenario: Scenario | dict | str | os.PathLike,
    runs: int | None = None,
    seed: int | None = None,
    *,
    engine: str = "auto",
    workers: int = 1,
    executor: Any = "process",
    scheduler: str | None = None,
    uncertainty: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Results:
    """Simulate a scenario (a :class:`Scenario`, plain data or a file) and return its :class:`Results`.

    Plain data (a ``dict`` shaped like a scenario file) is checked exactly like a file; its
    problems raise :class:`~agentsim.model.loading.ScenarioError` naming ``<dict>`` and the dotted path.

    ``runs`` and ``seed`` override the scenario's; ``engine`` is ``auto`` (fast
    path when the scenario allows it), ``des`` or ``fastpath``; ``workers``
    spreads blocks of runs over processes without changing any result.

    ``executor="dask"`` sends the blocks to a Dask cluster instead: the one at ``scheduler`` (an address
    such as ``tcp://host:8786``), or a ``LocalCluster`` of ``workers`` processes started for the call; a
    connected ``distributed.Client`` may be passed as ``executor`` itself. The results are the same bytes
    as in one process (:mod:`agentsim.sim.executors`). ``progress(done, total)`` is called as blocks of
    runs finish (a workload: with its simulated seconds), e.g. to drive a progress bar.
    """
    if isinstance(scenario, Scenario):
        sc, plan = scenario, compile_plan(scenario)
    elif isinstance(scenario, dict):
        sc = parse(scenario, file="<dict>")
        plan = compile_plan(sc, file="<dict>", lines={})
    elif isinstance(scenario, (str, os.PathLike)):
        sc = load(Path(scenario))
        plan = compile_plan(sc)
    else:
        raise TypeError(f"simulate() takes a Scenario, a dict or a file path, not {type(scenario).__name__}")
    runs = sc.runs if runs is None else int(runs)
    seed = sc.seed if seed is None else int(seed)
    if runs < 1:
        raise ValueError("runs must be at least 1")
    if seed < 0:
        raise ValueError("seed must be at least 0")
    check_executor(executor, scheduler)  # before the simulation
    with ExitStack() as stack:
        if executor == "dask" and plan.workload is None:  # one cluster (or connection) for every simulation here
            executor = stack.enter_context(dask_client(workers, scheduler))
        where = Placement(workers, executor)
        res = simulate_plan(plan, runs, seed, engine=engine, where=where, progress=progress)
        if (uncertainty or sc.uncertainty) == "parameters":  # agentsim.sim.param_uncertainty: K more simulations
            from agentsim.sim.param_uncertainty import parameter_ci95

            def one(p: Plan) -> Summary:
                return simulate_plan(p, runs, seed, engine=engine, where=where).summary_model()

            res.param_ci95 = parameter_ci95(sc, plan, res.summary_model(), runs, seed, one)
    return res

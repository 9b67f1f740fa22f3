"""What an engine produces for a block of runs, and the per-run totals derived from it.

Both engines fill the same :class:`BlockResult`: per run, the wall time and its
critical-path breakdown; per call node, arrays of shape ``(runs, *instances)``
with the call's status, timestamps and token counts (and the same for tool and
wait spans). Everything after that is shared code: pricing the calls
(:func:`price_calls`, one vectorised :func:`~agentsim.pricing.rates.call_cost`),
summing a run's cost in one fixed order (node by node, instance by instance),
and flattening to the ``calls`` and ``runs`` tables. Sharing this code is what
makes the two engines' results identical rather than merely close.

Call status: 0 = not made (an instance that did not happen: beyond a repeat's
count, an unchosen option, a race already decided), 1 = completed,
2 = cancelled (started, then cut by a ``join: any``/``k`` race).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from agentsim.plan.nodes import Plan
from agentsim.plan.sampling import Block
from agentsim.plan.time_of_day import scale_speeds
from agentsim.pricing.rates import call_cost
from agentsim.sim.rules import context_factor_array

__all__ = [
    "CALL_FIELDS",
    "SPAN_FIELDS",
    "BlockResult",
    "calls_frame",
    "concat_attempts",
    "empty_call_tensors",
    "frames_of",
    "price_calls",
    "row_sum",
    "run_totals",
    "running_row_sum",
    "spans_frame",
    "tables_from",
    "turn_durations",
    "turn_tensor",
    "waiting",
]

NOT_MADE, DONE, CANCELLED, FAILED = 0, 1, 2, 3
RUN_OK, RUN_FAILED, RUN_UNFINISHED = 0, 1, 2  # run status (runs table)

# Fields an engine fills for every call (cost and tps are added by shared code).
CALL_FLOAT = ("t_submit", "t_start", "t_first", "t_end", "ttft")
CALL_INT = ("input", "cache_read", "cache_write", "cache_write_1h", "output", "reasoning")
CALL_FIELDS = ("status", *CALL_FLOAT, *CALL_INT)
SPAN_FIELDS = ("status", "t_start", "t_end", "output")


@dataclass
class BlockResult:
    variant: int
    block: Block
    wall: np.ndarray  # (n,) seconds, end of the last step - start
    breakdown: dict[str, np.ndarray]  # BREAKDOWN -> (n,) seconds along the critical path
    calls: dict[int, dict[str, np.ndarray]]  # call node id -> field -> (n, *instances)
    spans: dict[int, dict[str, np.ndarray]]  # span node (tool, wait, think, a kind's) -> field -> (n, *instances)
    start: np.ndarray | None = None  # (n,) start time of each run (workloads); None: all at 0
    # span node that keeps its start (a listen) -> (n, *instances) start times (NaN: the instance did not happen)
    starts: dict[int, np.ndarray] = field(default_factory=dict)
    status: np.ndarray | None = None  # (n,) run status (RUN_OK, RUN_FAILED, RUN_UNFINISHED); None: all completed
    interrupted: dict[int, np.ndarray] = field(default_factory=dict)  # call node -> (n, *instances) cut by the user
    totals: dict[str, np.ndarray] | None = None  # summary-only blocks: per-run totals (agentsim.sim.totals)
    attempts: dict[str, np.ndarray] | None = None  # DES with limits or failures: the attempts table's columns
    failed_attempts_cost: np.ndarray | None = None  # (n,) USD of the failed attempts billed (timeouts)
    counted: np.ndarray | None = None  # workloads: (n,) whether the run started inside the counting window
    turns: dict[int, np.ndarray] = field(default_factory=dict)  # turn node -> (n, *turns) seconds (NaN: none)
    started: np.ndarray | None = None  # workloads: (n,) whether the run started at all


def turn_tensor(block: Block, node) -> np.ndarray:
    """The durations of a turn node's turns, one per instance of its body: NaN until a turn ends."""
    return np.full((block.n, *block.shape((*node.scope, node.id))), np.nan)


def empty_call_tensors(shape: tuple[int, ...], fill: bool = True) -> dict[str, np.ndarray]:
    """Call tensors filled with "not made" (status 0, NaN times, zero tokens); ``fill=False`` leaves
    them uninitialised for a writer that sets every element."""
    new_f = (lambda: np.full(shape, np.nan)) if fill else (lambda: np.empty(shape))
    new_i = (lambda dt: np.zeros(shape, dtype=dt)) if fill else (lambda dt: np.empty(shape, dtype=dt))
    t = {"status": new_i(np.int8)}
    for f in CALL_FLOAT:
        t[f] = new_f()
    for f in CALL_INT:
        t[f] = new_i(np.int64)
    t["tier"] = new_i(np.int16)  # the model tier the call ran on (a fallback can change it)
    return t


def empty_span_tensors(shape: tuple[int, ...], fill: bool = True) -> dict[str, np.ndarray]:
    if not fill:
        return {
            "status": np.empty(shape, dtype=np.int8),
            "t_start": np.empty(shape),
            "t_end": np.empty(shape),
            "output": np.empty(shape, dtype=np.int64),
        }
    return {
        "status": np.zeros(shape, dtype=np.int8),
        "t_start": np.full(shape, np.nan),
        "t_end": np.full(shape, np.nan),
        "output": np.zeros(shape, dtype=np.int64),
    }


def clear(tensors: dict[str, np.ndarray], index) -> None:
    """Mark ``tensors[index]`` as not made."""
    for arr in tensors.values():
        arr[index] = np.nan if arr.dtype.kind == "f" else 0


def price_calls(plan: Plan, result: BlockResult, speeds: dict[int, tuple[np.ndarray, np.ndarray]]) -> None:
    """Add ``cost`` (USD) and ``tps`` to every call tensor, in place.

    A call is priced (and its speed read) on the tier it actually ran on: a fallback
    moves it to another model. ``tps`` is the speed the call ran at: the drawn one times the
    time-of-day and context-size factors, where the tier has them.
    """
    from agentsim.plan.sampling import tier_speeds

    for node in plan.calls:
        t = result.calls[node.id]
        static = node.tiers[result.variant]
        made = t["status"] != NOT_MADE
        used = np.unique(t["tier"][made]) if made.any() else np.array([static])
        args = (t["input"], t["cache_read"], t["cache_write"], t["cache_write_1h"], t["output"], t["reasoning"])
        with np.errstate(invalid="ignore"):
            if len(used) == 1:
                cost = call_cost(plan.tiers[int(used[0])].rates, *args)
            else:
                cost = np.zeros(t["status"].shape)
                for tid in used:
                    cost = np.where(t["tier"] == tid, call_cost(plan.tiers[int(tid)].rates, *args), cost)
        t["cost"] = np.where(made, cost, 0.0)
        tps = speeds[node.id][1]
        for tid in used:
            if int(tid) != static:
                tps = np.where(t["tier"] == tid, tier_speeds(plan, result.block, node, int(tid))[1], tps)
        tps = scale_speeds(plan, t["tier"], t["t_start"], tps, made)  # time-of-day conditions, if any
        t["tps"] = _context_scaled(plan, t["tier"], t["input"], tps, made, used)  # context-size factors, if any


def _context_scaled(plan: Plan, tier_of, inp, tps: np.ndarray, made, used) -> np.ndarray:
    """``tps`` times each made call's factor at its context size (its whole input), by the tier it ran on:
    the speed it ran at (:func:`agentsim.sim.rules.context_speeds`, the engines' last multiplication)."""
    curves = [(int(tid), plan.tiers[int(tid)].context_speed) for tid in used]
    curves = [(tid, cs.tps) for tid, cs in curves if cs is not None and cs.tps is not None]
    if not curves or not made.any():
        return tps
    out = np.array(np.broadcast_to(tps, made.shape), dtype=np.float64, copy=True)
    for tid, curve in curves:
        m = made & (tier_of == tid)
        out[m] = out[m] * context_factor_array(inp[m], curve)
    return out


def running_row_sum(acc: np.ndarray | None, flat: np.ndarray) -> np.ndarray | None:
    """``acc + flat[:, 0] + flat[:, 1] + ...`` strictly left to right: :func:`row_sum` of a row's instances
    continued chunk by chunk (``acc`` None: the first chunk; the result is then :func:`row_sum`'s bits)."""
    start = 0
    if acc is None:
        if flat.shape[1] == 0:
            return None
        acc, start = flat[:, 0], 1
    for j in range(start, flat.shape[1]):
        acc = acc + flat[:, j]
    return acc


def row_sum(x: np.ndarray) -> np.ndarray:
    """Sum each run's instances strictly left to right (a cumulative sum), never pairwise.

    Integer sums are exact in any order, so they use a plain sum.
    """
    flat = x.reshape(x.shape[0], -1)
    if flat.shape[1] == 0:
        return np.zeros(x.shape[0], dtype=x.dtype)
    if flat.shape[1] == 1:
        return flat[:, 0]
    if x.dtype.kind in "iub":
        return flat.sum(axis=1)
    return np.cumsum(flat, axis=1)[:, -1]


def run_totals(plan: Plan, result: BlockResult) -> dict[str, np.ndarray]:
    """Per-run cost, call count and tokens by kind, summed in the canonical order.

    A block simulated summary-only carries them already (``totals``, see :mod:`agentsim.sim.totals`).
    """
    if result.totals is not None:
        return result.totals
    n = result.block.n
    cost = np.zeros(n)
    calls = np.zeros(n, dtype=np.int64)
    tokens = {k: np.zeros(n, dtype=np.int64) for k in CALL_INT}
    for node in plan.calls:  # node order, then instance order: the one fixed summation order
        t = result.calls[node.id]
        made = (t["status"] != NOT_MADE) & (t["status"] != FAILED)
        cost = cost + row_sum(t["cost"])
        calls += row_sum(made.view(np.int8) if made.dtype == bool else made).astype(np.int64)
        for k in CALL_INT:
            tokens[k] += row_sum(t[k])
    failed = result.failed_attempts_cost
    if failed is not None and failed.any():
        cost = cost + failed  # timed-out attempts are billed too
    return {"cost": cost, "calls": calls, **{f"{k}_tokens": v for k, v in tokens.items()}}


def run_columns(plan: Plan, result: BlockResult) -> dict[str, np.ndarray]:
    """The per-run columns of a block (everything in the runs table but ``variant`` and ``run``)."""
    tot = run_totals(plan, result)
    n = result.block.n
    data = {
        "wall_time_s": result.wall,
        "cost_usd": tot["cost"],
        "calls": tot["calls"],
    }
    for k in CALL_INT:
        data[f"{k}_tokens"] = tot[f"{k}_tokens"]
    for k, seconds in result.breakdown.items():  # BREAKDOWN, then stall and listen when the plan has them
        data[f"{k}_s"] = seconds
    data["waiting_s"], data["turns"] = waiting(plan, result)
    data["status"] = result.status if result.status is not None else np.zeros(n, dtype=np.int8)
    if result.start is not None:
        data["start_s"] = result.start
    if result.counted is not None:
        data["counted"] = result.counted
    return data


def turn_durations(plan: Plan, result: BlockResult) -> tuple[np.ndarray, np.ndarray]:
    """Every turn's seconds and the run (of the simulation) it belongs to, run by run, turns in order; a plan
    without ``turns`` has one turn per run, its wall time (contract v1.3)."""
    n = result.block.n
    if not plan.turn_nodes:
        return result.wall, np.arange(result.block.start, result.block.start + n)
    t = np.concatenate([result.turns[node.id].reshape(n, -1) for node in plan.turn_nodes], axis=1)
    done = ~np.isnan(t)
    runs = np.broadcast_to(np.arange(result.block.start, result.block.start + n)[:, None], t.shape)
    return t[done], runs[done]


def waiting(plan: Plan, result: BlockResult) -> tuple[np.ndarray, np.ndarray]:
    """Per run: what the person waited (the sum of their turns; a run without turns: its wall time) and how
    many turns they had (1 without ``turns``)."""
    n = result.block.n
    if not plan.turn_nodes:
        return result.wall, np.ones(n, dtype=np.int64)
    t = np.concatenate([result.turns[node.id].reshape(n, -1) for node in plan.turn_nodes], axis=1)
    done = ~np.isnan(t)
    return np.where(done, t, 0.0).sum(axis=1), done.sum(axis=1).astype(np.int64)


def _made(plan_nodes, tensors: dict, result: BlockResult, only: np.ndarray | None = None):
    """For each node with instances that happened: (node, column getter, runs, instances); ``only`` (a
    boolean per run of the block): of those runs only."""
    n = result.block.n
    for node in plan_nodes:
        t = tensors[node.id]
        status = t["status"].reshape(n, -1)
        run_i, inst = np.nonzero(status if only is None else (status != 0) & only[:, None])
        if run_i.size:

            def col(name, t=t, run_i=run_i, inst=inst):
                return t[name].reshape(n, -1)[run_i, inst]

            yield node, col, run_i + result.block.start, inst


_STATUS = np.array(["", "ok", "cancelled", "failed"], dtype=object)
CALL_COLUMNS = [
    "variant",
    "run",
    "node",
    "instance",
    "step",
    "model",
    "speed",
    "status",
    "t_submit",
    "t_start",
    "t_first_token",
    "t_end",
    "queue_s",
    "ttft_s",
    "decode_s",
    "tps",
    "itl_s",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cache_write_1h_tokens",
    "output_tokens",
    "reasoning_tokens",
    "cost_usd",
]
SPAN_COLUMNS = [
    "variant", "run", "node", "instance", "step", "kind", "slot", "status", "t_start", "t_end", "output_tokens",
]  # fmt: skip


def _frame(parts: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    if not parts:
        return pd.DataFrame({c: [] for c in columns})
    df = pd.concat(parts, ignore_index=True)
    return df.sort_values(["run", "node", "instance"], kind="stable", ignore_index=True)


def calls_frame(plan: Plan, result: BlockResult, variant_name: str, only: np.ndarray | None = None) -> pd.DataFrame:
    """One row per call made, in run order, then node order, then instance order (``only``: a boolean per
    run of the block, the rows of those runs only)."""
    models = np.array([tr.model for tr in plan.tiers], dtype=object)
    speeds = np.array([tr.speed for tr in plan.tiers], dtype=object)
    parts = []
    for node, col, runs, inst in _made(plan.calls, result.calls, result, only):
        tier_ids = col("tier").astype(np.int64)
        t_first, t_end, tps = col("t_first"), col("t_end"), col("tps")
        parts.append(
            pd.DataFrame(
                {
                    "variant": variant_name,
                    "run": runs,
                    "node": node.id,
                    "instance": inst,
                    "step": node.name,
                    "model": models[tier_ids],
                    "speed": speeds[tier_ids],
                    "status": _STATUS[col("status")],
                    "t_submit": col("t_submit"),
                    "t_start": col("t_start"),
                    "t_first_token": t_first,
                    "t_end": t_end,
                    "queue_s": col("t_start") - col("t_submit"),
                    "ttft_s": col("ttft"),
                    "decode_s": t_end - t_first,
                    "tps": tps,
                    "itl_s": 1.0 / tps,
                    "input_tokens": col("input"),
                    "cache_read_tokens": col("cache_read"),
                    "cache_write_tokens": col("cache_write"),
                    "cache_write_1h_tokens": col("cache_write_1h"),
                    "output_tokens": col("output"),
                    "reasoning_tokens": col("reasoning"),
                    "cost_usd": col("cost"),
                }
            )
        )
    return _frame(parts, CALL_COLUMNS)


def spans_frame(plan: Plan, result: BlockResult, variant_name: str, only: np.ndarray | None = None) -> pd.DataFrame:
    """Steps that only take time (tool, wait, listen...): one row per span that happened, with its kind and the
    breakdown slot its time goes to (``only``: as :func:`calls_frame`'s)."""
    parts = []
    for node, col, runs, inst in _made(plan.spans, result.spans, result, only):
        parts.append(
            pd.DataFrame(
                {
                    "variant": variant_name,
                    "run": runs,
                    "node": node.id,
                    "instance": inst,
                    "step": node.name,
                    "kind": node.kind,
                    "slot": node.slot,
                    "status": _STATUS[col("status")],
                    "t_start": col("t_start"),
                    "t_end": col("t_end"),
                    "output_tokens": col("output"),
                }
            )
        )
    return _frame(parts, SPAN_COLUMNS)


def frames_of(plan: Plan, blocks, frame_fn, runs=None) -> pd.DataFrame:
    """One table (``frame_fn``: :func:`calls_frame` or :func:`spans_frame`) of the block results ``blocks``
    yields (each block: its results, one per variant), variant by variant, in block order.

    ``runs`` (a set of run indices): only those runs' rows, in the same order as in the whole table; the
    caller hands just the blocks that hold them, so the rows of other runs are never made.
    """
    return tables_from(plan, blocks, (frame_fn,), runs)[0]


def tables_from(plan: Plan, blocks, frame_fns, runs=None) -> tuple[pd.DataFrame, ...]:
    """:func:`frames_of` for several tables at once, reading each block result once (``blocks`` may be a
    generator that simulates them one by one)."""
    frames: list[list[list[pd.DataFrame]]] = [[[] for _ in plan.variants] for _ in frame_fns]
    wanted = None if runs is None else np.fromiter(runs, dtype=np.int64, count=len(runs))
    for results in blocks:
        for res in results:
            only = None if wanted is None else np.isin(np.arange(res.block.n) + res.block.start, wanted)
            for k, fn in enumerate(frame_fns):
                frames[k][res.variant].append(fn(plan, res, plan.variants[res.variant], only))
    out = []
    for fn, per_variant in zip(frame_fns, frames, strict=True):
        parts = [f for fs in per_variant for f in fs]
        df = pd.concat(parts, ignore_index=True) if parts else _frame([], _COLUMNS[fn])
        df["variant"] = pd.Categorical(df["variant"], categories=list(plan.variants))
        out.append(df)
    return tuple(out)


_COLUMNS = {calls_frame: CALL_COLUMNS, spans_frame: SPAN_COLUMNS}


def concat_attempts(parts: list) -> dict | None:
    """The attempts tables of several blocks as one (None when none has attempts)."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

"""The DES's records of a block, turned into the tensors both engines hand on (:class:`BlockResult`).

The runner appends flat rows of doubles as it goes (``array('d')``: read by NumPy without
conversion): a plain call that completed records only what depended on the run's history -- its
start, TTFT and tokens; a fixed call only its start -- and :func:`finish_block` rebuilds the rest of
its timeline for the whole block at once with the same rule (:func:`agentsim.sim.call_timeline.timeline`:
``t_first = t_start + ttft``, ``t_end = t_start + duration``). Cancelled, failed and limited calls are
recorded in full; tool, wait and listen spans, interruptions and attempts have rows of their own.
"""

from __future__ import annotations

from array import array

import numpy as np

from agentsim.plan.nodes import OUTPUT, REASONING, Plan
from agentsim.plan.sampling import Block
from agentsim.pricing.rates import call_cost
from agentsim.sim.attempts import ATT_OK
from agentsim.sim.call_timeline import timeline
from agentsim.sim.records import (
    CALL_INT,
    DONE,
    SPAN_FIELDS,
    BlockResult,
    empty_call_tensors,
    empty_span_tensors,
    turn_tensor,
)
from agentsim.sim.rows import ATTEMPT_RECORD, CALL_RECORD, PLAIN_RECORD, WHERE
from agentsim.sim.rules import context_factor_array
from agentsim.sim.slots import slot_names
from agentsim.sim.stalls import stall_draws

__all__ = ["CALL_RECORD", "PLAIN_RECORD", "attempts_frame", "finish_block"]


def _columns(recs: array, width: int) -> np.ndarray:
    """Flat records (an ``array('d')`` of rows of ``width`` numbers) as a float64 array, one row per record."""
    return np.frombuffer(recs, dtype=np.float64).reshape(-1, width) if len(recs) else np.zeros((0, width))


def _scatter(nodes, block: Block, recs: list[tuple], columns: tuple[str, ...], empty) -> dict:
    """Place records ``(node, run, instance, *columns)`` into per-node tensors made by ``empty(shape)``."""
    out = {}
    A = _columns(recs, 3 + len(columns))
    A = A[np.argsort(A[:, 0], kind="stable")]
    node_col = A[:, 0].astype(np.int64)
    for node in nodes:
        shape = (block.n, *block.shape(node.scope))
        t = empty(shape)
        lo, hi = np.searchsorted(node_col, [node.id, node.id + 1])
        if hi > lo:
            rows = A[lo:hi]
            width = int(np.prod(shape[1:], dtype=np.int64))
            idx = rows[:, 1].astype(np.int64) * width + rows[:, 2].astype(np.int64)
            for j, name in enumerate(columns, start=3):
                flat = t[name].reshape(-1)
                flat[idx] = rows[:, j].astype(flat.dtype)
        out[node.id] = t
    return out


def _scatter_calls(plan: Plan, runner, variant: int) -> dict[int, dict[str, np.ndarray]]:
    """Call tensors from a runner's records.

    A plain call that completed records only what depended on the run's history (start, TTFT,
    tokens) -- a fixed call only its start -- and the rest is rebuilt here with the rules the DES
    applied (agentsim.sim.rules): ``t_first = t_start + ttft``, ``t_end = t_start + duration``, with
    the speed the call ran at (time-of-day and context-size factors, in the DES's order).
    """
    block = runner.block
    out = _scatter(plan.calls, block, runner.rec.plain, PLAIN_RECORD, empty_call_tensors)
    for node in plan.calls:
        t = out[node.id]
        c = runner.info[node.id]
        if c.fixed:  # only the start was recorded: TTFT and input are the arrays the durations came from
            t0 = np.array(c.started).reshape(t["t_start"].shape)
            done = ~np.isnan(t0)
            t["t_start"][done] = t0[done]
            t["ttft"][done] = np.array(c.ttft).reshape(t0.shape)[done]
            t["input"][done] = np.array(c.inp).reshape(t0.shape)[done]
            for f in ("cache_read", "cache_write", "cache_write_1h"):
                t[f][done] = 0
        done = ~np.isnan(t["t_start"])
        if not done.any():
            continue
        tps = runner.speeds[node.id][1]
        output = np.broadcast_to(block.get(node.id, OUTPUT), done.shape)[done]
        reasoning = np.broadcast_to(block.get(node.id, REASONING), done.shape)[done]
        t0, ttft = t["t_start"][done], t["ttft"][done]
        tps_done = tps[done]
        if node.tiers[variant] in runner.tod:  # the speed the call ran at (agentsim.plan.time_of_day)
            tps_done = tps_done * runner.tod[node.tiers[variant]].factors(t0)[1]
        cs = plan.tiers[node.tiers[variant]].context_speed
        if cs is not None and cs.tps is not None:  # ... and at its context size (rules.context_speeds)
            tps_done = tps_done * context_factor_array(t["input"][done], cs.tps)
        sd = stall_draws(plan, block, node, node.tiers[variant])
        tl = timeline(
            t0, ttft, output, reasoning, tps_done, None if sd is None else np.broadcast_to(sd[0], done.shape)[done]
        )
        t["status"][done] = DONE
        t["t_submit"][done] = t0
        t["t_first"][done] = tl.first_token
        t["t_end"][done] = tl.end
        t["output"][done] = output
        t["reasoning"][done] = reasoning
        t["tier"][done] = node.tiers[variant]
    full = _scatter(plan.calls, block, runner.rec.calls, CALL_RECORD, empty_call_tensors)
    for node in plan.calls:  # cancelled, failed and limited calls: everything was recorded
        f, t = full[node.id], out[node.id]
        m = f["status"] != 0
        if m.any():
            for name in t:
                t[name][m] = f[name][m]
    return out


def _scatter_turns(plan: Plan, block: Block, recs: list[tuple]) -> dict[int, np.ndarray]:
    """Each turn node's ``(runs, *turns)`` durations (NaN: no such turn) from ``(node, run, instance, seconds)``."""
    out = {n.id: turn_tensor(block, n) for n in plan.turn_nodes}
    for nid, r, flat, seconds in recs:
        t = out[nid]
        t.reshape(block.n, -1)[r, flat] = seconds
    return out


def _scatter_spans(plan: Plan, block: Block, recs: list[tuple]) -> dict[int, dict[str, np.ndarray]]:
    return _scatter(plan.spans, block, recs, SPAN_FIELDS, empty_span_tensors)


def attempts_frame(plan: Plan, block: Block, variant: int, recs: list[tuple]) -> dict[str, np.ndarray]:
    """Attempts that did not complete the call (429s, errors, timeouts) and retried successes, as columns."""
    cols = (*WHERE, *ATTEMPT_RECORD)
    A = _columns(recs, len(cols))
    out = {c: A[:, i] for i, c in enumerate(cols)}
    for c in ("node", "run", "instance", "attempt", "tier", "outcome", *CALL_INT):
        out[c] = out[c].astype(np.int64)
    # what a failed attempt cost (a timed-out attempt is billed its input and what it generated)
    cost = np.zeros(len(A))
    for t in np.unique(out["tier"]):
        m = out["tier"] == t
        rates = plan.tiers[int(t)].rates
        cost[m] = call_cost(
            rates,
            out["input"][m],
            out["cache_read"][m],
            out["cache_write"][m],
            out["cache_write_1h"][m],
            out["output"][m],
            out["reasoning"][m],
        )
    out["cost"] = np.where(out["outcome"] == ATT_OK, 0.0, cost)  # a retried success is priced as the call
    out["run"] = out["run"] + block.start
    return out


def finish_block(plan: Plan, runner, block: Block, variant: int, start=None) -> BlockResult:
    """Turn a runner's records into a :class:`BlockResult`."""
    breakdown = {name: runner.acc[:, i].copy() for name, i in slot_names(plan).items()}
    res = BlockResult(
        variant=variant,
        block=block,
        wall=runner.wall,
        breakdown=breakdown,
        calls=_scatter_calls(plan, runner, variant),
        spans=_scatter_spans(plan, block, runner.rec.spans),
        start=start,
    )
    res.starts = {n.id: res.spans[n.id]["t_start"] for n in plan.spans if n.keeps_start}
    res.turns = _scatter_turns(plan, block, runner.rec.turns)
    if runner.streamed:
        res.interrupted = _interrupted(plan, block, runner.rec.interrupts)
    if plan.needs_attempts:
        att = attempts_frame(plan, block, variant, runner.rec.attempts)
        local = att["run"] - block.start
        extra = np.zeros(block.n)
        np.add.at(extra, local, att["cost"])
        res.failed_attempts_cost = extra
        res.status = runner.status.copy()
        res.attempts = att
    elif plan.defines_success:
        res.status = runner.status.copy()
    return res


def _interrupted(plan: Plan, block: Block, recs: array) -> dict[int, np.ndarray]:
    """Per call node that can be interrupted: a boolean (runs, *instances) array, True where it was."""
    A = _columns(recs, 3).astype(np.int64)
    out = {}
    for node in plan.calls:
        if node.interrupt is None:
            continue
        shape = (block.n, *block.shape(node.scope))
        m = np.zeros(shape, dtype=bool)
        rows = A[A[:, 0] == node.id]
        m.reshape(block.n, -1)[rows[:, 1], rows[:, 2]] = True
        out[node.id] = m
    return out

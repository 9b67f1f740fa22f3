"""Per-run totals summed call by call, for a summary that needs no per-call table.

The full fast path writes every call's timestamps and token counts into tensors, prices them
(:func:`agentsim.sim.records.price_calls`) and sums them per run (:func:`agentsim.sim.records.run_totals`).
When only ``summary.json`` is wanted, :class:`RunTotals` takes each call's values as the evaluator
computes them and keeps just the sums: cost, calls made and tokens by kind. The numbers are the same
bits, by construction:

* a call's cost is the same :func:`~agentsim.pricing.rates.call_cost` of the same integers, and a call
  that is not made costs ``0.0`` in both;
* a run's cost is summed in the one canonical order of :func:`~agentsim.sim.records.run_totals`:
  node by node, and within a node instance by instance, strictly left to right. The evaluator
  hands a node's instances in that order (repeat iterations in turn, a fan-out's copies at once), so
  each node keeps a running sum; a node whose instances arrive out of order (a repeat inside a
  fan-out) keeps its costs in a tensor and sums it at the end, as the full path does;
* integer sums are exact in any order.

Per-call table, ``Results.calls`` and ``--out`` re-simulate the same blocks in full (same seeds, same
draws): see :func:`agentsim.sim.simulation.simulate_plan`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from agentsim.plan.nodes import AT_ONCE, Plan
from agentsim.plan.sampling import constant_view
from agentsim.pricing.rates import call_cost
from agentsim.sim.records import CALL_INT, row_sum, running_row_sum

__all__ = ["MadeCall", "RunTotals", "add_ints", "constant", "lean"]


@dataclass(frozen=True, slots=True)
class MadeCall:
    """One evaluation of a call node for every run of a block: where, which runs, and its token counts.

    ``sl`` indexes the node's tensors; ``active`` marks the runs that make the call (``on``: all of
    them); the counts are arrays broadcastable to ``active``'s shape.
    """

    nid: int
    sl: tuple
    on: bool
    active: np.ndarray
    tokens: tuple  # (input, cache read, cache write, 1-hour cache write), as VecCtx.begin_call returns them
    output: Any
    reasoning: Any

    @property
    def values(self) -> tuple:
        """The counts in :data:`~agentsim.sim.records.CALL_INT` order."""
        return (*self.tokens, self.output, self.reasoning)

    @property
    def copies(self) -> int:
        """Instances per run in this evaluation (fan-out copies)."""
        return math.prod(self.active.shape[1:])


class RunTotals:
    """The cost, calls and token totals of a block's runs in one variant, summed as calls are made."""

    def __init__(self, plan: Plan, block, variant: int, samples: bool = True):
        self.plan = plan
        self.samples = samples  # whether the evaluator also keeps each call's status and TTFT
        self.block = block
        self.n = n = block.n
        self.rates = {c.id: plan.tiers[c.tiers[variant]].rates for c in plan.calls}
        # node id -> running sum of its instances' costs, per run (a float while it is the same for all runs)
        self.costs: dict[int, np.ndarray | float] = {}
        # a node whose instances are not evaluated in their flattened order (a fan-out axis before a
        # repeat axis) keeps its costs in a tensor instead, summed at the end
        self.cost_tensors = {
            c.id: np.zeros((n, *block.shape(c.scope))) for c in plan.calls if not _in_order(plan, c.scope)
        }
        self.calls = np.zeros(n, dtype=np.int64)
        self.tokens = {k: np.zeros(n, dtype=np.int64) for k in CALL_INT}
        self.every_run = dict.fromkeys(("calls", *CALL_INT), 0)  # what every run adds alike (Python ints)
        # ((token kind, constant count), ...) -> per run, how many instances were made with those constants
        self.made: dict[tuple, np.ndarray] = {}

    def add(self, call: MadeCall, uncached=None) -> None:
        """One evaluation of a call node at ``call.sl``.

        ``uncached``: ``inp - read - write`` when the caller knows it (see :func:`call_cost`).
        """
        consts = [constant(x) for x in call.values]
        self._add_cost(call, consts, uncached)
        self._count_constants(call, consts)
        self._count_varying(call, consts)

    def _add_cost(self, call: MadeCall, consts: list, uncached) -> None:
        """The call's cost into its node's running sum (or cost tensor), in the canonical order."""
        nid, n, shape = call.nid, self.n, call.active.shape
        # constants enter the price as scalars: the same IEEE operations, done once instead of per element
        values = (x if c is None else c for x, c in zip(call.values, consts, strict=True))
        cost = call_cost(self.rates[nid], *values, uncached=uncached)
        if not call.on:
            cost = np.where(call.active, cost, 0.0)
        if nid in self.cost_tensors:
            self.cost_tensors[nid][call.sl] = cost
        elif np.ndim(cost) == 0:  # one cost for every run: its running sum is one value too, in Python
            acc, c = self.costs.get(nid), float(cost)  # floats (IEEE binary64, the same bits as NumPy's)
            for _ in range(call.copies):
                acc = c if acc is None else acc + c
            self.costs[nid] = acc
        elif cost.shape == (n,):
            acc = self.costs.get(nid)
            self.costs[nid] = cost if acc is None else acc + cost
        else:
            self.costs[nid] = running_row_sum(self.costs.get(nid), np.broadcast_to(cost, shape).reshape(n, -1))

    def _count_constants(self, call: MadeCall, consts: list) -> None:
        """The calls made and the token counts that are one value in every run."""
        m, active = call.copies, call.active
        if call.on:
            self.every_run["calls"] += m
            for k, c in zip(CALL_INT, consts, strict=True):
                if c is not None:  # the same count in every run: no per-element work
                    self.every_run[k] += int(c) * m
            return
        # The calls made and the constant token counts are both (number of active instances) x value:
        # one count of active instances per set of constants, multiplied out in result() (integers: exact).
        key = tuple((k, int(c)) for k, c in zip(CALL_INT, consts, strict=True) if c is not None and c != 0)
        made = active.reshape(self.n, -1).sum(axis=1) if m > 1 or active.ndim > 1 else active
        count = self.made.get(key)
        self.made[key] = made.astype(np.int64) if count is None else count + made

    def _count_varying(self, call: MadeCall, consts: list) -> None:
        """The token counts that vary by run, summed per run."""
        n, shape = self.n, call.active.shape
        for k, x, c in zip(CALL_INT, call.values, consts, strict=True):
            if c is not None:
                continue  # counted by _count_constants
            if not call.on:
                x = np.where(call.active, x, 0)
            if np.shape(x) != (n,):
                x = np.broadcast_to(x, shape).reshape(n, -1).sum(axis=1)
            self.tokens[k] += x

    def result(self) -> dict[str, np.ndarray]:
        """The same dict as :func:`agentsim.sim.records.run_totals`."""
        cost = np.zeros(self.n)
        for node in self.plan.calls:  # node order: the one fixed summation order
            if node.id in self.costs:
                cost = cost + self.costs[node.id]
            elif node.id in self.cost_tensors:
                cost = cost + row_sum(self.cost_tensors[node.id])
        same = self.every_run
        calls, tokens = self.calls, dict(self.tokens)
        for key, made in self.made.items():
            calls = calls + made
            for k, c in key:
                tokens[k] = tokens[k] + c * made
        return {
            "cost": cost,
            "calls": calls + same["calls"],
            **{f"{k}_tokens": v + same[k] for k, v in tokens.items()},
        }


def _in_order(plan: Plan, scope: tuple[int, ...]) -> bool:
    """Whether a node's instances are evaluated in their flattened order: fan-out axes (evaluated at
    once) only after every repeat axis (evaluated one iteration at a time)."""
    seen_fanout = False
    for m in scope:
        if plan.nodes[m].axis == AT_ONCE:
            seen_fanout = True
        elif seen_fanout:
            return False
    return True


def constant(x):
    """The value of an array that holds one value everywhere by construction (a 0-d array or a
    broadcast view, as constants are drawn), as a NumPy scalar of its dtype; else None.
    Reads no element beyond the first."""
    if isinstance(x, np.ndarray):
        strides = x.strides
        if not strides or (x.size and not any(strides)):
            return x[(0,) * x.ndim]
        return None
    return x if isinstance(x, int | float | np.generic) else None


def lean(x):
    """``x`` as a 0-d array when it holds one value by construction (see :func:`constant`), else ``x``:
    arithmetic on it is then done once instead of per element, with the same IEEE operations."""
    c = constant(x)
    return x if c is None else c


def add_ints(a, b):
    """``a + b`` of integer arrays, kept a broadcast view of one value when both are constants."""
    ca = constant(a)
    cb = None if ca is None else constant(b)
    if cb is None:
        return a + b
    sa, sb = np.shape(a), np.shape(b)
    # the same few sums recur call after call: their views are made once
    return constant_view(ca + cb, sa if sa == sb else np.broadcast_shapes(sa, sb))

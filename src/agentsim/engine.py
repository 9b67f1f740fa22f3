"""The discrete-event engine: each agent run as SimPy processes.

A run is a SimPy process walking the plan tree. Sequential steps are plain
``yield from`` (no extra process); a call or tool is one ``timeout``; a
``parallel`` or ``fanout`` starts one process per branch and waits until the
join is satisfied. Every random number comes from the block's pre-drawn arrays
(:mod:`agentsim.sampling`), read at ``[run][instance]``.

Timing of one call (DESIGN.md §4)::

    ttft     = drawn TTFT x tier.ttft_x + uncached_input / prefill_tps
    decode   = (output + reasoning) / (drawn TPS x tier.output_tps_x)
    t_end    = t_start + (ttft + decode)

Races (``join: any`` or ``{k: N}``): the first ``k`` branches to finish win,
ties broken by branch order. So that ties between branches finishing at the same
instant are decided the same way every time, the join is settled by an event of
lower priority than any other event at that instant. The losing branches are
cancelled at that instant: a call already running is billed its input and the
output generated so far (reasoning first); one that has not started never
happens.

This engine handles one agent run at a time (fresh environment per run); shared
provider limits and workloads run many agents in one environment
(:mod:`agentsim.limits`). The engine does no I/O and keeps no global state.
"""

from __future__ import annotations

import math

import numpy as np
import simpy
from simpy.events import Event

from .context import ONE_HOUR, Ctx
from .plan import (
    COUNT,
    INPUT,
    LATENCY,
    OUTPUT,
    PICK,
    REASONING,
    CallNode,
    ChooseNode,
    FanoutNode,
    ParNode,
    Plan,
    RepeatNode,
    SeqNode,
    SubagentNode,
    ToolNode,
    WaitNode,
)
from .records import (
    BREAKDOWN,
    CALL_FLOAT,
    CALL_INT,
    CANCELLED,
    DONE,
    BlockResult,
    empty_call_tensors,
    empty_span_tensors,
)
from .sampling import Block

__all__ = ["run_block_des"]

SETTLE = 2  # priority below SimPy's NORMAL (1): processed after every other event at the same time

# Breakdown accumulator slots
Q, TTFT, DEC, TOOL, WAIT = range(5)


class _Settle(Event):
    """An event that fires at the current time after all other events of this instant."""

    def __init__(self, env: simpy.Environment):
        super().__init__(env)
        self._ok = True
        self._value = None
        env.schedule(self, priority=SETTLE)


class Flow:
    """A thread of sequential steps: its context and its critical-path breakdown so far."""

    __slots__ = ("acc", "ctx")

    def __init__(self, ctx: Ctx, acc: list[float]):
        self.ctx = ctx
        self.acc = acc


class _Runner:
    """Runs the plan for every run of one block, in one variant."""

    def __init__(self, plan: Plan, block: Block, variant: int, speeds: dict):
        self.plan = plan
        self.block = block
        self.n = n = block.n
        self.dims = block.dims
        self.tl = {key: arr.reshape(n, -1).tolist() for key, arr in block.values.items()}
        self.ttft0 = {nid: a.reshape(n, -1).tolist() for nid, (a, _) in speeds.items()}
        self.tps = {nid: b.reshape(n, -1).tolist() for nid, (_, b) in speeds.items()}
        self.tier_of = {c.id: plan.tiers[c.tiers[variant]] for c in plan.calls}
        self.call_recs: list[tuple] = []
        self.span_recs: list[tuple] = []
        self.dispatch = {
            CallNode: self.call,
            ToolNode: self.tool,
            WaitNode: self.wait,
            SeqNode: self.seq,
            ParNode: self.par,
            FanoutNode: self.fanout,
            RepeatNode: self.repeat,
            ChooseNode: self.choose,
            SubagentNode: self.subagent,
        }
        self.env: simpy.Environment = None  # type: ignore[assignment]
        self.r = 0
        self.end = 0.0

    # ------------------------------------------------------------------ one run
    def run_one(self, r: int) -> tuple[float, list[float]]:
        self.r = r
        self.env = env = simpy.Environment()
        flow = Flow(Ctx(self.plan.ctx), [0.0, 0.0, 0.0, 0.0, 0.0])
        env.process(self._top(flow))
        env.run()
        return self.end, flow.acc

    def _top(self, flow: Flow):
        yield from self.seq(self.plan.root, flow, 0)
        self.end = self.env.now

    # ------------------------------------------------------------------ steps
    def seq(self, node: SeqNode, st: Flow, flat: int):
        dispatch = self.dispatch
        for child in node.steps:
            yield from dispatch[type(child)](child, st, flat)

    def call(self, node: CallNode, st: Flow, flat: int):
        env, r, nid = self.env, self.r, node.id
        tl = self.tl
        tier = self.tier_of[nid]
        i_new = tl[(nid, INPUT)][r][flat]
        out = tl[(nid, OUTPUT)][r][flat]
        reas = tl[(nid, REASONING)][r][flat]
        tps = self.tps[nid][r][flat]
        t0 = env.now
        ttl = tier.ttl_s if tier.ttl_s is not None else st.ctx.cfg.ttl_s
        inp, read, write, w1h = st.ctx.begin_call(tier.index, ttl, i_new, t0)
        ttft = self.ttft0[nid][r][flat] + (inp - read) / tier.prefill_tps
        dec = (out + reas) / tps
        try:
            yield env.timeout(ttft + dec)
        except simpy.Interrupt:
            T = env.now
            if t0 < T:
                t_first = t0 + ttft
                gen = min(math.floor((T - t_first) * tps), out + reas) if t_first < T else 0
                rb = min(reas, gen)
                self.call_recs.append(
                    (nid, r, flat, CANCELLED, t0, t0, t_first, T, ttft, inp, read, write, w1h, gen - rb, rb)
                )
            raise
        self.call_recs.append((nid, r, flat, DONE, t0, t0, t0 + ttft, env.now, ttft, inp, read, write, w1h, out, reas))
        st.ctx.add(i_new + out)
        acc = st.acc
        acc[TTFT] += ttft
        acc[DEC] += dec

    def _span(self, node, st: Flow, flat: int, slot: int, out: int):
        env = self.env
        lat = self.tl[(node.id, LATENCY)][self.r][flat]
        t0 = env.now
        try:
            yield env.timeout(lat)
        except simpy.Interrupt:
            if env.now > t0:
                self.span_recs.append((node.id, self.r, flat, CANCELLED, t0, env.now, 0))
            raise
        self.span_recs.append((node.id, self.r, flat, DONE, t0, env.now, out))
        st.acc[slot] += lat
        if out:
            st.ctx.add(out)

    def tool(self, node: ToolNode, st: Flow, flat: int):
        return self._span(node, st, flat, TOOL, self.tl[(node.id, OUTPUT)][self.r][flat])

    def wait(self, node: WaitNode, st: Flow, flat: int):
        return self._span(node, st, flat, WAIT, 0)

    def repeat(self, node: RepeatNode, st: Flow, flat: int):
        count = self.tl[(node.id, COUNT)][self.r][flat]
        base = flat * self.dims[node.id]
        for i in range(count):
            yield from self.seq(node.body, st, base + i)

    def choose(self, node: ChooseNode, st: Flow, flat: int):
        pick = self.tl[(node.id, PICK)][self.r][flat]
        yield from self.seq(node.options[pick], st, flat)

    def subagent(self, node: SubagentNode, st: Flow, flat: int):
        yield from self.seq(node.body, Flow(Ctx(node.ctx), st.acc), flat)
        st.ctx.add(self.tl[(node.id, OUTPUT)][self.r][flat])

    def par(self, node: ParNode, st: Flow, flat: int):
        return self._join([(b, flat) for b in node.branches], node.k, st)

    def fanout(self, node: FanoutNode, st: Flow, flat: int):
        n = self.tl[(node.id, COUNT)][self.r][flat]
        base = flat * self.dims[node.id]
        k = None if node.join == "all" else node.join
        return self._join([(node.body, base + c) for c in range(n)], k, st)

    def _join(self, branches: list[tuple[SeqNode, int]], k: int | None, st: Flow):
        nb = len(branches)
        if nb == 0:
            return
        env = self.env
        kk = nb if k is None else min(k, nb)
        states = [Flow(st.ctx.fork(), list(st.acc)) for _ in range(nb)]
        ends: list[float | None] = [None] * nb
        done = env.event()
        count = [0]

        def branch(b: int, seq: SeqNode, flat: int):
            try:
                yield from self.seq(seq, states[b], flat)
            except simpy.Interrupt:
                return
            ends[b] = env.now
            count[0] += 1
            if count[0] == kk:
                if kk == nb:
                    done.succeed()
                else:  # decide the race once everything else at this instant has happened
                    _Settle(env).callbacks.append(lambda _ev: done.succeed())

        procs = [env.process(branch(b, seq, flat)) for b, (seq, flat) in enumerate(branches)]
        try:
            yield done
        except simpy.Interrupt:
            for p in procs:
                if p.is_alive:
                    p.interrupt()
            raise
        order = sorted((ends[b], b) for b in range(nb) if ends[b] is not None)
        critical = order[kk - 1][1]
        if kk < nb:
            winners = sorted(b for _, b in order[:kk])
            for p in procs:
                if p.is_alive:
                    p.interrupt()
        else:
            winners = range(nb)
        st.ctx.join([states[b].ctx for b in winners])
        st.acc[:] = states[critical].acc


def _scatter_calls(plan: Plan, block: Block, recs: list[tuple]) -> dict[int, dict[str, np.ndarray]]:
    out = {}
    A = np.array(recs, dtype=np.float64) if recs else np.zeros((0, 15))
    order = np.argsort(A[:, 0], kind="stable")
    A = A[order]
    node_col = A[:, 0].astype(np.int64)
    for node in plan.calls:
        shape = (block.n, *block.shape(node.scope))
        t = empty_call_tensors(shape)
        lo, hi = np.searchsorted(node_col, [node.id, node.id + 1])
        if hi > lo:
            rows = A[lo:hi]
            K = int(np.prod(shape[1:], dtype=np.int64))
            idx = rows[:, 1].astype(np.int64) * K + rows[:, 2].astype(np.int64)
            t["status"].reshape(-1)[idx] = rows[:, 3]
            for j, f in enumerate(("t_submit", "t_start", "t_first", "t_end", "ttft"), start=4):
                t[f].reshape(-1)[idx] = rows[:, j]
            for j, f in enumerate(CALL_INT, start=9):
                t[f].reshape(-1)[idx] = rows[:, j].astype(np.int64)
        out[node.id] = t
    assert CALL_FLOAT == ("t_submit", "t_start", "t_first", "t_end", "ttft")
    return out


def _scatter_spans(plan: Plan, block: Block, recs: list[tuple]) -> dict[int, dict[str, np.ndarray]]:
    out = {}
    A = np.array(recs, dtype=np.float64) if recs else np.zeros((0, 7))
    A = A[np.argsort(A[:, 0], kind="stable")]
    node_col = A[:, 0].astype(np.int64)
    for node in plan.nodes:
        if not isinstance(node, ToolNode | WaitNode):
            continue
        shape = (block.n, *block.shape(node.scope))
        t = empty_span_tensors(shape)
        lo, hi = np.searchsorted(node_col, [node.id, node.id + 1])
        if hi > lo:
            rows = A[lo:hi]
            K = int(np.prod(shape[1:], dtype=np.int64))
            idx = rows[:, 1].astype(np.int64) * K + rows[:, 2].astype(np.int64)
            t["status"].reshape(-1)[idx] = rows[:, 3]
            t["t_start"].reshape(-1)[idx] = rows[:, 4]
            t["t_end"].reshape(-1)[idx] = rows[:, 5]
            t["output"].reshape(-1)[idx] = rows[:, 6].astype(np.int64)
        out[node.id] = t
    return out


def run_block_des(plan: Plan, block: Block, variant: int, speeds: dict) -> BlockResult:
    """Simulate every run of a block in one variant with SimPy."""
    runner = _Runner(plan, block, variant, speeds)
    wall = np.empty(block.n)
    acc = np.empty((block.n, 5))
    for r in range(block.n):
        wall[r], acc[r] = runner.run_one(r)
    return BlockResult(
        variant=variant,
        block=block,
        wall=wall,
        breakdown={k: acc[:, i].copy() for i, k in enumerate(BREAKDOWN)},
        calls=_scatter_calls(plan, block, runner.call_recs),
        spans=_scatter_spans(plan, block, runner.span_recs),
    )


__all__ += ["ONE_HOUR"]

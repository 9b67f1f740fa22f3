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
from itertools import chain

import numpy as np
import simpy
from simpy.events import Event

from .context import Ctx
from .plan import (
    COUNT,
    INPUT,
    LATENCY,
    OUTPUT,
    PICK,
    REASONING,
    U_TPS,
    U_TTFT,
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
        self.n = block.n
        self.dims = block.dims
        constant = {(d.node, d.purpose) for d in plan.draws if d.sampler is not None and d.sampler.is_constant}
        raw = {(c.id, p) for c in plan.calls for p in (U_TTFT, U_TPS)}  # the DES reads the transformed speeds

        def values(key, arr):
            # (run r, instance i) -> Python number at [r * width + i]; a constant is a one-element list
            if key in constant:
                return [arr.item(0)] if arr.size else [0]
            return arr.reshape(-1).tolist()

        self.tl = tl = {key: values(key, arr) for key, arr in block.values.items() if key not in raw}
        self.const = {key: key in constant for key in tl}
        # width of each node's instance axes (its scope), to find (r, i) in the flat lists
        self.width = {nd.id: int(np.prod(block.shape(nd.scope), dtype=np.int64)) for nd in plan.nodes}
        self.call_info = {}
        for c in plan.calls:
            tier = plan.tiers[c.tiers[variant]]
            ttft0, tps = speeds[c.id]
            self.call_info[c.id] = (
                self.width[c.id],
                tl[(c.id, INPUT)], self.const[(c.id, INPUT)],
                tl[(c.id, OUTPUT)], self.const[(c.id, OUTPUT)],
                tl[(c.id, REASONING)], self.const[(c.id, REASONING)],
                ttft0.reshape(-1).tolist(), tps.reshape(-1).tolist(),
                tier.index, tier.ttl_s, tier.prefill_tps,
            )
        self.call_recs: list[tuple] = []
        self.span_recs: list[tuple] = []
        # Each sequence's steps with their handlers (plain functions: no reference cycle), resolved once.
        self.steps_of = {
            node.id: [(_HANDLER[type(ch)], ch) for ch in node.steps] for node in plan.nodes if isinstance(node, SeqNode)
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
        for fn, child in self.steps_of[node.id]:
            yield from fn(self, child, st, flat)

    def call(self, node: CallNode, st: Flow, flat: int):
        env, r = self.env, self.r
        width, inp_l, inp_c, out_l, out_c, reas_l, reas_c, ttft_l, tps_l, key, ttl, prefill = self.call_info[node.id]
        j = r * width + flat
        i_new = inp_l[0] if inp_c else inp_l[j]
        out = out_l[0] if out_c else out_l[j]
        reas = reas_l[0] if reas_c else reas_l[j]
        tps = tps_l[j]
        t0 = env.now
        ctx = st.ctx
        inp, read, write, w1h = ctx.begin_call(key, ctx.cfg.ttl_s if ttl is None else ttl, i_new, t0)
        ttft = ttft_l[j] + (inp - read) / prefill
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
                    (node.id, r, flat, CANCELLED, t0, t0, t_first, T, ttft, inp, read, write, w1h, gen - rb, rb)
                )
            raise
        self.call_recs.append(
            (node.id, r, flat, DONE, t0, t0, t0 + ttft, env.now, ttft, inp, read, write, w1h, out, reas)
        )
        if ctx.cfg.grows:
            ctx.L += i_new + out
        acc = st.acc
        acc[TTFT] += ttft
        acc[DEC] += dec

    def value(self, node, purpose: int, flat: int):
        key = (node.id, purpose)
        return self.tl[key][0] if self.const[key] else self.tl[key][self.r * self.width[node.id] + flat]

    def _span(self, node, st: Flow, flat: int, slot: int, out: int):
        env = self.env
        lat = self.value(node, LATENCY, flat)
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
        return self._span(node, st, flat, TOOL, self.value(node, OUTPUT, flat))

    def wait(self, node: WaitNode, st: Flow, flat: int):
        return self._span(node, st, flat, WAIT, 0)

    def repeat(self, node: RepeatNode, st: Flow, flat: int):
        count = self.value(node, COUNT, flat)
        base = flat * self.dims[node.id]
        for i in range(count):
            yield from self.seq(node.body, st, base + i)

    def choose(self, node: ChooseNode, st: Flow, flat: int):
        pick = self.value(node, PICK, flat)
        yield from self.seq(node.options[pick], st, flat)

    def subagent(self, node: SubagentNode, st: Flow, flat: int):
        yield from self.seq(node.body, Flow(Ctx(node.ctx), st.acc), flat)
        st.ctx.add(self.value(node, OUTPUT, flat))

    def par(self, node: ParNode, st: Flow, flat: int):
        return self._join([(b, flat) for b in node.branches], node.k, st)

    def fanout(self, node: FanoutNode, st: Flow, flat: int):
        n = self.value(node, COUNT, flat)
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


_HANDLER = {
    CallNode: _Runner.call,
    ToolNode: _Runner.tool,
    WaitNode: _Runner.wait,
    SeqNode: _Runner.seq,
    ParNode: _Runner.par,
    FanoutNode: _Runner.fanout,
    RepeatNode: _Runner.repeat,
    ChooseNode: _Runner.choose,
    SubagentNode: _Runner.subagent,
}


def _columns(recs: list[tuple], width: int) -> np.ndarray:
    """Records (tuples of numbers) as a float64 array, one row per record."""
    return np.fromiter(chain.from_iterable(recs), dtype=np.float64, count=width * len(recs)).reshape(-1, width)


def _scatter_calls(plan: Plan, block: Block, recs: list[tuple]) -> dict[int, dict[str, np.ndarray]]:
    out = {}
    A = _columns(recs, 15)
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
    A = _columns(recs, 7)
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


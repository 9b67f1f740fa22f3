"""The discrete-event engine: each agent run as SimPy processes.

A run is a SimPy process walking the plan tree. Sequential steps are plain
``yield from`` (no extra process); a call or tool is one ``timeout``; a
``parallel`` or ``fanout`` starts one process per branch and waits until the
join is satisfied. Every random number comes from the block's pre-drawn arrays
(:mod:`agentsim.plan.sampling`), read at ``[run][instance]``.

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

A ``fail`` step raises :class:`RunFailed` when its draw is below the variant's ``p``: the run stops at
that instant (inside a parallel branch, the other branches are cancelled as race losers are).

This engine handles one agent run at a time (fresh environment per run); shared
provider limits and workloads run many agents in one environment
(:mod:`agentsim.plan.limits`). The engine does no I/O and keeps no global state.
"""

from __future__ import annotations

import math
from array import array

import numpy as np
import simpy
from simpy.events import Event

from agentsim.plan.compiler import (
    COUNT,
    FAIL,
    FIRST_AUDIO,
    INPUT,
    LATENCY,
    OUTPUT,
    PICK,
    REASONING,
    U_ERROR,
    U_JITTER,
    U_TPS,
    U_TTFT,
    CallNode,
    ChooseNode,
    FailNode,
    FanoutNode,
    ParNode,
    PipelineNode,
    Plan,
    RepeatNode,
    SeqNode,
    SubagentNode,
    ToolNode,
    WaitNode,
)
from agentsim.plan.limits import TooLarge
from agentsim.plan.sampling import Block, tier_speeds
from agentsim.pricing.rates import call_cost
from agentsim.sim.context import Ctx
from agentsim.sim.records import (
    BREAKDOWN,
    CALL_FIELDS,
    CALL_INT,
    CANCELLED,
    DONE,
    RUN_FAILED,
    RUN_UNFINISHED,  # noqa: F401 - re-exported for agentsim.sim.workload
    SPAN_FIELDS,
    BlockResult,
    empty_call_tensors,
    empty_span_tensors,
)
from agentsim.sim.streaming import interruption, pipeline_offset, stall_draws, stalled_by, streams

__all__ = ["run_block_des"]

SETTLE = 2  # priority below SimPy's NORMAL (1): processed after every other event at the same time

# Breakdown accumulator slots (STALL: streams that paused, reported only when the plan has stalls)
Q, TTFT, DEC, TOOL, WAIT, STALL = range(6)


class _Settle(Event):
    """An event that fires at the current time after all other events of this instant."""

    def __init__(self, env: simpy.Environment):
        super().__init__(env)
        self._ok = True
        self._value = None
        env.schedule(self, priority=SETTLE)


class Flow:
    """A thread of sequential steps of run ``r``: its context and its critical-path breakdown so far."""

    __slots__ = ("acc", "ctx", "r", "trigger")

    def __init__(self, ctx: Ctx, acc: list[float], r: int):
        self.ctx = ctx
        self.acc = acc
        self.r = r
        self.trigger = None  # (event, pipeline node, pipeline flow) while a call feeds a pipeline


class RunFailed(Exception):
    """A call used up its attempts, or a ``fail`` step failed the run: the run stops here."""


# run status codes (runs table): RUN_OK, RUN_FAILED, RUN_UNFINISHED live in agentsim.sim.records
# attempt outcomes (attempts table)
ATT_OK, ATT_REJECTED, ATT_ERROR, ATT_TIMEOUT, ATT_CANCELLED = range(5)
FAILED = 3  # call status: every attempt failed


class _Runner:
    """Runs the plan for the runs of one block, in one variant.

    Plain scenarios run each run in a fresh environment (:meth:`run_one`); with shared
    accounts every run of a replication, or every run of a workload, shares ``accounts``.
    """

    def __init__(self, plan: Plan, block: Block, variant: int, speeds: dict):
        self.plan = plan
        self.block = block
        self.variant = variant
        self.n = n = block.n
        self.dims = block.dims
        constant = {(d.node, d.purpose) for d in plan.draws if d.sampler is not None and d.sampler.is_constant}
        raw = {(c.id, p) for c in plan.calls for p in (U_TTFT, U_TPS)}  # the DES reads the transformed speeds

        def values(key, arr):
            # (run r, instance i) -> Python number at [r * width + i]; a constant is a one-element list
            if key in constant:
                return [arr.item(0)] if arr.size else [0]
            return arr.reshape(-1).tolist()

        # a variant sees its own counts and picks where they depend on a call's model (Block.values_for)
        self.tl = tl = {key: values(key, arr) for key, arr in block.values_for(variant).items() if key not in raw}
        self.const = {key: key in constant for key in tl}
        # width of each node's instance axes (its scope), to find (r, i) in the flat lists
        self.width = {nd.id: int(np.prod(block.shape(nd.scope), dtype=np.int64)) for nd in plan.nodes}
        self.speeds = speeds
        self.call_info = {}
        for c in plan.calls:
            tier = plan.tiers[c.tiers[variant]]
            ttft0, tps = speeds[c.id]
            self.call_info[c.id] = (
                self.width[c.id],
                tl[(c.id, INPUT)],
                self.const[(c.id, INPUT)],
                tl[(c.id, OUTPUT)],
                self.const[(c.id, OUTPUT)],
                tl[(c.id, REASONING)],
                self.const[(c.id, REASONING)],
                ttft0.reshape(-1).tolist(),
                tps.reshape(-1).tolist(),
                tier.index,
                tier.ttl_s,
                tier.prefill_tps,
            )
        self._tier_speeds: dict[tuple[int, int], tuple[list, list]] = {}
        # time-of-day conditions (agentsim.plan.time_of_day) by tier index: factors read at each call's start
        self.tod = {t.index: plan.time_of_day[t.model] for t in plan.tiers if t.model in plan.time_of_day}
        # Streaming (agentsim.sim.streaming): stall seconds of calls whose tier can stall; calls that can be cut off
        self.stalls: dict[int, list] = {}
        for c in plan.calls:
            sd = stall_draws(plan, block, c, c.tiers[variant])
            if sd is not None:
                self.stalls[c.id] = np.broadcast_to(sd[0], (n, *block.shape(c.scope))).reshape(-1).tolist()
        self.streamed = {c.id for c in plan.calls if c.interrupt is not None}
        self.interrupt_recs = array("d")  # (node, run, instance) of calls cut off by an interruption
        # Records are appended as flat rows of doubles (read by NumPy without conversion).
        self.call_recs = array("d")  # CALL_RECORD rows: cancelled, failed and limited calls
        self.plain_recs = array("d")  # PLAIN_RECORD rows: plain calls that completed (the rest is rebuilt)
        self.span_recs = array("d")
        self.attempt_recs = array("d")
        self.limited = plan.needs_attempts
        handler = dict(_HANDLER)
        if self.limited:
            handler[CallNode] = _Runner.call_limited
        # Each sequence's steps with their handlers (plain functions: no reference cycle), resolved once.
        self.steps_of = {
            node.id: [(handler[type(ch)], ch) for ch in node.steps] for node in plan.nodes if isinstance(node, SeqNode)
        }
        for node in plan.nodes:  # a call and the pipeline after it run as one step (see pipelined)
            if isinstance(node, SeqNode) and any(isinstance(ch, PipelineNode) for ch in node.steps):
                steps = []
                for fn, ch in self.steps_of[node.id]:
                    if isinstance(ch, PipelineNode):
                        fn_call, call = steps.pop()
                        steps.append((_Runner.pipelined, (call, ch, fn_call)))
                    else:
                        steps.append((fn, ch))
                self.steps_of[node.id] = steps
        self.env: simpy.Environment = None  # type: ignore[assignment]
        self.accounts: list = []
        # per-run results
        self.wall = np.zeros(n)
        self.start = np.zeros(n)
        self.acc = np.zeros((n, 6))
        self.status = np.zeros(n, dtype=np.int8)
        self.done: list[simpy.Event | None] = [None] * n

    # ------------------------------------------------------------------ runs
    def run_one(self, r: int) -> None:
        """Run ``r`` alone in a fresh environment (with fresh accounts when there are limits)."""
        self.env = env = simpy.Environment()
        if self.plan.accounts:
            from agentsim.plan.limits import Account

            self.accounts = [Account.create(spec, env) for spec in self.plan.accounts]
            self.__dict__.pop("_adm", None)  # the admission plans name the accounts: drop the old run's
        env.process(self.top(r))
        env.run()

    def share(self, env: simpy.Environment, accounts: list) -> None:
        """Run in ``env`` with ``accounts`` shared with other runners (a workload: many agents at once)."""
        self.env, self.accounts = env, accounts
        self.__dict__.pop("_adm", None)

    def top(self, r: int):
        """The process of run ``r``: walks the plan, records its end, status and breakdown."""
        env = self.env
        t_start = env.now
        self.start[r] = t_start
        flow = Flow(Ctx(self.plan.ctx), [0.0, 0.0, 0.0, 0.0, 0.0, 0.0], r)
        try:
            yield from self.seq(self.plan.root, flow, 0)
        except RunFailed:
            self.status[r] = RUN_FAILED
        self.wall[r] = env.now - t_start
        self.acc[r] = flow.acc

    # ------------------------------------------------------------------ values
    def value(self, node, purpose: int, r: int, flat: int):
        key = (node.id, purpose)
        return self.tl[key][0] if self.const[key] else self.tl[key][r * self.width[node.id] + flat]

    def value_at(self, node_id: int, purpose: int, r: int):
        """A per-run draw of a pseudo-node (the workload's arrival gaps and think times)."""
        key = (node_id, purpose)
        return self.tl[key][0] if self.const[key] else self.tl[key][r]

    def tier_speeds(self, node: CallNode, tier: int) -> tuple[list, list]:
        """(TTFT, TPS) flat lists of a call on another tier (a fallback), from the same draws."""
        key = (node.id, tier)
        if key not in self._tier_speeds:
            ttft0, tps = tier_speeds(self.plan, self.block, node, tier)
            self._tier_speeds[key] = (ttft0.reshape(-1).tolist(), tps.reshape(-1).tolist())
        return self._tier_speeds[key]

    # ------------------------------------------------------------------ steps
    def seq(self, node: SeqNode, st: Flow, flat: int):
        for fn, child in self.steps_of[node.id]:
            yield from fn(self, child, st, flat)

    def call(self, node: CallNode, st: Flow, flat: int):
        env, r = self.env, st.r
        width, inp_l, inp_c, out_l, out_c, reas_l, reas_c, ttft_l, tps_l, key, ttl, prefill = self.call_info[node.id]
        j = r * width + flat
        i_new = inp_l[0] if inp_c else inp_l[j]
        out = out_l[0] if out_c else out_l[j]
        reas = reas_l[0] if reas_c else reas_l[j]
        tps = tps_l[j]
        t0 = env._now  # SimPy's `now` property, without the property call (this is the hot path)
        ctx = st.ctx
        cfg = ctx.cfg
        if cfg.cache:
            inp, read, write, w1h = ctx.begin_call(key, cfg.ttl_s if ttl is None else ttl, i_new, t0)
        else:
            inp, read, write, w1h = ctx.L + i_new, 0, 0, 0
        if self.tod and key in self.tod:  # slow hours: factors of the clock at the call's start
            fx, fy = self.tod[key].factors(t0)
            ttft = ttft_l[j] * fx + (inp - read) / prefill
            tps = tps * fy
        else:
            ttft = ttft_l[j] + (inp - read) / prefill
        dec = (out + reas) / tps
        d = ttft + dec
        stall = 0.0
        if self.stalls and node.id in self.stalls:
            stall = self.stalls[node.id][j]
            d = d + stall
        if node.id in self.streamed or st.trigger is not None:
            yield from self._streamed_call(
                node, st, flat, t0, ttft, tps, i_new, out, reas, stall, d, key, inp, read, write, w1h
            )
            return
        if cfg.cache:
            ctx.mark(key, inp, t0 + d)
        try:
            yield env.timeout(d)
        except simpy.Interrupt:
            self._record_cancelled(node, r, flat, t0, ttft, tps, out, reas, inp, read, write, w1h, key)
            raise
        self.plain_recs.extend((node.id, r, flat, t0, ttft, inp, read, write, w1h))
        if cfg.grows:
            ctx.L += i_new + out
        acc = st.acc
        acc[TTFT] += ttft
        acc[DEC] += dec
        if stall:
            acc[STALL] += stall

    def _streamed_call(self, node, st, flat, t0, ttft, tps, i_new, out, reas, stall, d, key, inp, read, write, w1h):
        """A call that may be interrupted: the shared rule (agentsim.sim.streaming.interruption) decides where."""
        env, r = self.env, st.r
        ctx = st.ctx
        sb, runs, stall_u, hit, t_cut, billed = self._stream_rule(node, flat, r, t0, ttft, tps, out, reas, stall, key)
        if st.trigger is not None:
            self._arm_pipeline(st, node, flat, runs, sb, t0, ttft, stall, stall_u, float(t_cut[0]) if hit[0] else None)
        if not hit[0]:
            if ctx.cfg.cache:
                ctx.mark(key, inp, t0 + d)
            yield from self._cancellable(node, r, flat, t0, ttft, tps, out, reas, inp, read, write, w1h, key, d)
            self.plain_recs.extend((node.id, r, flat, t0, ttft, inp, read, write, w1h))
            if ctx.cfg.grows:
                ctx.L += i_new + out
            acc = st.acc
            acc[TTFT] += ttft
            acc[DEC] += (out + reas) / tps
            if stall:
                acc[STALL] += stall
            return
        T = float(t_cut[0])
        vis = int(billed[0])
        stalled = float(stalled_by(sb, np.array([stall]), np.array([stall_u]), t_cut)[0])
        if ctx.cfg.cache:
            ctx.mark(key, inp, T)
        # (a race may still cancel it before T: what it generated is capped by what T would have billed)
        yield from self._cancellable(node, r, flat, t0, ttft, tps, vis, reas, inp, read, write, w1h, key, T - t0)
        T = env.now
        self.call_recs.extend(
            (node.id, r, flat, DONE, t0, t0, t0 + ttft, T, ttft, inp, read, write, w1h, vis, reas, key)
        )
        self.interrupt_recs.extend((node.id, r, flat))
        if ctx.cfg.grows:
            ctx.L += i_new + vis
        acc = st.acc
        acc[TTFT] += ttft
        acc[DEC] += (T - t0) - ttft - stalled
        if stalled:
            acc[STALL] += stalled

    def _stream_rule(self, node, flat, r, t0, ttft, tps, out, reas, stall, key):
        """One call's token timeline and whether (and where) it is interrupted (agentsim.sim.streaming rules)."""
        tier = self.plan.tiers[key]
        sd = stall_draws(self.plan, self.block, node, key)
        stall_u = 0.0
        if sd is not None:
            stall_u = float(
                np.broadcast_to(sd[1], (self.n, *self.block.shape(node.scope))).reshape(-1)[
                    r * self.width[node.id] + flat
                ]
            )
        runs = np.array([r])
        send = np.array([t0])
        end = send + ((ttft + (out + reas) / tps) + stall)
        a1 = (send + ttft) + reas / tps
        N = np.array([out], dtype=np.int64)
        sb = streams(
            tier, self.block, node, flat, runs, send, a1, end, N, np.array([stall]), np.array([stall_u]), cache=True
        )
        fa = None
        if node.consumer is not None and node.consumer.kind == "speech":
            fa = np.array([self.value(node, FIRST_AUDIO, r, flat)])
        if node.interrupt is not None:
            hit, t_cut, billed = interruption(self.plan, self.block, node, tier, flat, runs, sb, fa)
        else:
            hit, t_cut, billed = np.zeros(1, dtype=bool), end, N
        return sb, runs, stall_u, hit, t_cut, billed

    def _cancellable(self, node, r, flat, t0, ttft, tps, out, reas, inp, read, write, w1h, key, d):
        """Wait ``d``; if a race cancels the call meanwhile, record what it had generated (as in ``call``)."""
        try:
            yield self.env.timeout(d)
        except simpy.Interrupt:
            self._record_cancelled(node, r, flat, t0, ttft, tps, out, reas, inp, read, write, w1h, key)
            raise

    def _record_cancelled(self, node, r, flat, t0, ttft, tps, out, reas, inp, read, write, w1h, key):
        """A plain call cancelled now by a race: billed its input and the tokens generated so far, reasoning first."""
        T = self.env.now
        if t0 < T:
            t_first = t0 + ttft
            gen = min(math.floor((T - t_first) * tps), out + reas) if t_first < T else 0
            rb = min(reas, gen)
            self.call_recs.extend(
                (node.id, r, flat, CANCELLED, t0, t0, t_first, T, ttft, inp, read, write, w1h, gen - rb, rb, key)
            )

    def _arm_pipeline(self, st, node, flat, runs, sb, t0, ttft, stall, stall_u, t_cut):
        """Start the pipeline after ``node`` once it has streamed enough (agentsim.sim.streaming.pipeline_offset)."""
        env = self.env
        event, pipe, pflow = st.trigger
        st.trigger = None
        t_go = float(pipeline_offset(pipe, self.block, flat, runs, sb)[0])
        if t_cut is not None:
            t_go = min(t_go, t_cut)
        t_go = max(t_go, t0)
        # the pipeline's critical path so far: this call's TTFT, decode and stall up to t_go
        acc = list(st.acc)
        elapsed = t_go - t0
        first = min(ttft, elapsed)
        stalled = float(stalled_by(sb, np.array([stall]), np.array([stall_u]), np.array([t_go]))[0])
        acc[TTFT] += first
        acc[DEC] += (elapsed - first) - stalled
        acc[STALL] += stalled
        pflow.acc = acc
        env.timeout(t_go - t0).callbacks.append(lambda _ev: event.succeed())

    def pipelined(self, pair, st: Flow, flat: int):
        """A call and the pipeline after it: the pipeline starts on the call's partial output; both join.

        Like a parallel fork: the pipeline sees the context as it was before the call, and its additions
        are appended after the call's at the join; the later of the two is the critical path.
        """
        call, pipe, call_fn = pair
        env = self.env
        cfg = st.ctx.cfg
        static = not cfg.grows and not cfg.cache
        fa = Flow(st.ctx if static else st.ctx.fork(), list(st.acc), st.r)
        fb = Flow(st.ctx if static else st.ctx.fork(), list(st.acc), st.r)
        start = env.event()
        fa.trigger = (start, pipe, fb)
        ends = [None, None]

        def call_branch():
            try:
                yield from call_fn(self, call, fa, flat)
            except simpy.Interrupt:
                return
            ends[0] = env.now

        def pipe_branch():
            try:
                yield start
                yield from self.seq(pipe.body, fb, flat)
            except simpy.Interrupt:
                return
            ends[1] = env.now

        procs = [env.process(call_branch()), env.process(pipe_branch())]
        try:
            yield procs[0] & procs[1]
        except simpy.Interrupt:
            for p in procs:
                if p.is_alive:
                    p.interrupt()
            raise
        critical = fb if ends[1] >= ends[0] else fa
        if not static:
            st.ctx.join([fa.ctx, fb.ctx])
        st.acc[:] = critical.acc

    def call_limited(self, node: CallNode, st: Flow, flat: int):
        """A call that may wait for, or be refused by, shared accounts, fail, time out and be retried."""
        env, r = self.env, st.r
        width, inp_l, inp_c, out_l, out_c, reas_l, reas_c, ttft_l, tps_l, key, _, _ = self.call_info[node.id]
        j = r * width + flat
        i_new = inp_l[0] if inp_c else inp_l[j]
        out = out_l[0] if out_c else out_l[j]
        reas = reas_l[0] if reas_c else reas_l[j]
        plan = self.plan
        primary = plan.tiers[key]
        tier = primary
        u_err = self.tl[(node.id, U_ERROR)]
        u_jit = self.tl[(node.id, U_JITTER)]
        n_att = len(u_err) // (self.n * width)  # attempts axis size
        base_idx = j * n_att
        ctx = st.ctx
        t_submit = env.now
        failures = 0
        attempt = 0
        while True:
            attempt += 1
            if tier is primary and primary.fallback is not None and failures >= primary.fallback_after:
                tier = plan.tiers[primary.fallback]
            if tier is primary:
                ttft0, tps = ttft_l[j], tps_l[j]
            else:
                tl_ttft, tl_tps = self.tier_speeds(node, tier.index)
                ttft0, tps = tl_ttft[j], tl_tps[j]
            tkey = tier.index
            tttl = ctx.cfg.ttl_s if tier.ttl_s is None else tier.ttl_s
            t_try = env.now
            # --- admission
            held, retry_after, refused = yield from self._admit(tier, ctx, tkey, tttl, i_new, out + reas)
            if refused:
                self.attempt_recs.extend(
                    (node.id, r, flat, attempt, tkey, ATT_REJECTED, t_try, env.now, env.now, 0, 0, 0, 0, 0, 0)
                )
                failures += 1
                if attempt >= tier.max_attempts:
                    self._fail_call(node, r, flat, t_submit, tkey)
                yield env.timeout(self._backoff(tier, attempt, u_jit[base_idx + attempt - 1], retry_after))
                continue
            t0 = env.now
            inp, read, write, w1h = ctx.begin_call(tkey, tttl, i_new, t0)
            if self.tod and tkey in self.tod:  # slow hours: factors of the clock at the attempt's start
                fx, fy = self.tod[tkey].factors(t0)
                ttft0, tps = ttft0 * fx, tps * fy
            ttft = ttft0 + (inp - read) / tier.prefill_tps
            dec = (out + reas) / tps
            d = ttft + dec
            stall = 0.0
            sd = stall_draws(plan, self.block, node, tkey) if plan.has_stalls else None
            if sd is not None:
                stall = float(np.broadcast_to(sd[0], (self.n, *self.block.shape(node.scope))).reshape(-1)[j])
                d = d + stall
            error = u_err[base_idx + attempt - 1] < tier.error_rate
            timeout = tier.timeout_s
            if error:
                d_run, outcome = ttft, ATT_ERROR
                if timeout is not None and timeout < ttft:
                    d_run, outcome = timeout, ATT_TIMEOUT
            elif timeout is not None and d > timeout:
                d_run, outcome = timeout, ATT_TIMEOUT
            else:
                d_run, outcome = d, ATT_OK
            cut = None  # (time, visible tokens billed, stall spent) when the user interrupts this attempt
            if outcome == ATT_OK and (node.id in self.streamed or st.trigger is not None):
                sb, runs, stall_u, hit, t_cut, billed = self._stream_rule(
                    node, flat, r, t0, ttft, tps, out, reas, stall, tkey
                )
                if st.trigger is not None:
                    self._arm_pipeline(
                        st, node, flat, runs, sb, t0, ttft, stall, stall_u, float(t_cut[0]) if hit[0] else None
                    )
                if hit[0]:
                    stalled = float(stalled_by(sb, np.array([stall]), np.array([stall_u]), t_cut)[0])
                    cut = (float(t_cut[0]), int(billed[0]), stalled)
                    d_run = cut[0] - t0
            ctx.mark(tkey, inp, t0 + d_run)
            try:
                yield env.timeout(d_run)
            except simpy.Interrupt:
                self._release(held)
                T = env.now
                if t0 < T:
                    t_first = t0 + ttft
                    gen = min(math.floor((T - t_first) * tps), out + reas) if t_first < T and not error else 0
                    rb = min(reas, gen)
                    self.call_recs.extend(
                        (
                            node.id,
                            r,
                            flat,
                            CANCELLED,
                            t_submit,
                            t0,
                            t_first,
                            T,
                            ttft,
                            inp,
                            read,
                            write,
                            w1h,
                            gen - rb,
                            rb,
                            tkey,
                        )
                    )
                raise
            self._release(held)
            if outcome == ATT_OK:
                vis = out if cut is None else cut[1]
                self.call_recs.extend(
                    (
                        node.id,
                        r,
                        flat,
                        DONE,
                        t_submit,
                        t0,
                        t0 + ttft,
                        env.now,
                        ttft,
                        inp,
                        read,
                        write,
                        w1h,
                        vis,
                        reas,
                        tkey,
                    )
                )
                if attempt > 1:
                    self.attempt_recs.extend(
                        (node.id, r, flat, attempt, tkey, ATT_OK, t_try, t0, env.now, 0, 0, 0, 0, 0, 0)
                    )
                if ctx.cfg.grows:
                    ctx.L += i_new + vis
                acc = st.acc
                acc[Q] += t0 - t_submit
                acc[TTFT] += ttft
                if cut is None:
                    acc[DEC] += dec
                    if stall:
                        acc[STALL] += stall
                else:
                    self.interrupt_recs.extend((node.id, r, flat))
                    acc[DEC] += (env.now - t0) - ttft - cut[2]
                    if cut[2]:
                        acc[STALL] += cut[2]
                return
            # a failed attempt: an error (nothing billed) or a timeout (billed what was generated)
            if outcome == ATT_TIMEOUT:
                T = env.now
                t_first = t0 + ttft
                gen = min(math.floor((T - t_first) * tps), out + reas) if t_first < T and not error else 0
                rb = min(reas, gen)
                billed = (inp, read, write, w1h, gen - rb, rb)
            else:
                billed = (0, 0, 0, 0, 0, 0)
            self.attempt_recs.extend((node.id, r, flat, attempt, tkey, outcome, t_try, t0, env.now, *billed))
            failures += 1
            if attempt >= tier.max_attempts:
                self._fail_call(node, r, flat, t_submit, tkey)
            yield env.timeout(self._backoff(tier, attempt, u_jit[base_idx + attempt - 1], None))

    def _backoff(self, tier, attempt: int, u: float, retry_after: float | None) -> float:
        if retry_after is not None and tier.honour_retry_after:
            return retry_after
        ceiling = min(tier.backoff_cap, tier.backoff_base * 2.0 ** (attempt - 1))
        return u * ceiling if tier.full_jitter else ceiling

    def _fail_call(self, node: CallNode, r: int, flat: int, t_submit: float, tkey: int):
        now = self.env.now
        self.call_recs.extend((node.id, r, flat, FAILED, t_submit, now, now, now, 0.0, 0, 0, 0, 0, 0, 0, tkey))
        raise RunFailed

    def _admission_plan(self, tier) -> tuple[list, list, bool]:
        """(reject-policy accounts, queue-policy accounts, whether any counts tokens) of a tier, cached."""
        plans = self.__dict__.setdefault("_adm", {})
        if tier.index not in plans:
            accounts = [self.accounts[a] for a in tier.accounts]
            plans[tier.index] = (
                [a for a in accounts if a.spec.policy == "reject"],
                [a for a in accounts if a.spec.policy == "queue"],
                any(a.rpm is not None or a.itpm is not None or a.otpm is not None for a in accounts),
            )
        return plans[tier.index]

    def _admit(self, tier, ctx: Ctx, key: int, ttl: float, new_input: int, out_tokens: int):
        """Take room in every account of ``tier``: refused at once by a ``reject`` account that is
        full (HTTP 429, with a retry-after when a bucket is short), or wait in ``queue`` accounts.
        Returns (held slots, retry_after, refused)."""
        if not tier.accounts:
            return [], None, False
        rejecting, queueing, tokens = self._admission_plan(tier)
        if tokens:
            inp, read = ctx.peek(key, ttl, new_input, self.env.now)
            uncached = inp - read
        else:
            uncached = read = 0
        held = []
        try:
            if rejecting:  # all or nothing, at this instant
                waits = []
                for a in rejecting:
                    refused = False
                    if a.slots is not None and not a.slots.free():
                        waits.append(None)
                        refused = True
                    for bucket, need in a.needs(uncached, read, out_tokens):
                        short = bucket.shortfall(need)
                        if short is not None:
                            waits.append(short)
                            refused = True
                    a.rejections += refused
                if waits:
                    known = [w for w in waits if w is not None]
                    return [], (max(known) if len(known) == len(waits) else None), True
                for a in rejecting:
                    for bucket, need in a.needs(uncached, read, out_tokens):
                        bucket.check(need)
                    if a.slots is not None:
                        a.slots.take_now()
                        held.append(a.slots)
            for a in queueing:  # wait in line, in declaration order
                slots = a.slots
                if slots is not None:
                    ev = slots.request()
                    if ev is not None:
                        try:
                            yield ev
                        except simpy.Interrupt:
                            slots.cancel(ev)
                            self._release(held)
                            raise
                    held.append(slots)
                if tokens:
                    for bucket, need in a.needs(uncached, read, out_tokens):
                        ev = bucket.take(need)
                        if ev is not None:
                            try:
                                yield ev
                            except simpy.Interrupt:
                                bucket.cancel(ev)
                                self._release(held)
                                raise
            return held, None, False
        except TooLarge:
            self._release(held)
            return [], None, True

    @staticmethod
    def _release(held: list) -> None:
        for slots in held:
            slots.release()

    def _span(self, node, st: Flow, flat: int, slot: int, out: int):
        env, r = self.env, st.r
        lat = self.value(node, LATENCY, r, flat)
        t0 = env.now
        try:
            yield env.timeout(lat)
        except simpy.Interrupt:
            if env.now > t0:
                self.span_recs.extend((node.id, r, flat, CANCELLED, t0, env.now, 0))
            raise
        self.span_recs.extend((node.id, r, flat, DONE, t0, env.now, out))
        st.acc[slot] += lat
        if out:
            st.ctx.add(out)

    def tool(self, node: ToolNode, st: Flow, flat: int):
        return self._span(node, st, flat, TOOL, self.value(node, OUTPUT, st.r, flat))

    def wait(self, node: WaitNode, st: Flow, flat: int):
        return self._span(node, st, flat, WAIT, 0)

    def repeat(self, node: RepeatNode, st: Flow, flat: int):
        count = self.value(node, COUNT, st.r, flat)
        base = flat * self.dims[node.id]
        for i in range(count):
            yield from self.seq(node.body, st, base + i)

    def choose(self, node: ChooseNode, st: Flow, flat: int):
        pick = self.value(node, PICK, st.r, flat)
        yield from self.seq(node.options[pick], st, flat)

    def fail(self, node: FailNode, st: Flow, flat: int):
        """Fail the run here with probability p (this variant's): the run stops at this instant."""
        if self.value(node, FAIL, st.r, flat) < node.p[self.variant]:
            raise RunFailed
        yield from ()

    def subagent(self, node: SubagentNode, st: Flow, flat: int):
        yield from self.seq(node.body, Flow(Ctx(node.ctx), st.acc, st.r), flat)
        st.ctx.add(self.value(node, OUTPUT, st.r, flat))

    def par(self, node: ParNode, st: Flow, flat: int):
        return self._join([(b, flat) for b in node.branches], node.k, st)

    def fanout(self, node: FanoutNode, st: Flow, flat: int):
        n = self.value(node, COUNT, st.r, flat)
        base = flat * self.dims[node.id]
        k = None if node.join == "all" else node.join
        return self._join([(node.body, base + c) for c in range(n)], k, st)

    def _join(self, branches: list[tuple[SeqNode, int]], k: int | None, st: Flow):
        nb = len(branches)
        if nb == 0:
            return
        env = self.env
        kk = nb if k is None else min(k, nb)
        cfg = st.ctx.cfg
        static = not cfg.grows and not cfg.cache  # nothing can change the context: branches share it
        states = [Flow(st.ctx if static else st.ctx.fork(), list(st.acc), st.r) for _ in range(nb)]
        ends: list[float | None] = [None] * nb
        done = env.event()
        count = [0]

        def branch(b: int, seq: SeqNode, flat: int):
            try:
                yield from self.seq(seq, states[b], flat)
            except simpy.Interrupt:
                return
            except RunFailed as exc:
                if not done.triggered:
                    done.fail(exc)  # the run fails: the parent stops the other branches
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
        except (simpy.Interrupt, RunFailed):
            for p in procs:
                if p.is_alive:
                    p.interrupt()
            raise
        if kk == nb:  # join all: the critical branch is the last (in branch order) to end at the latest time
            critical, latest = 0, ends[0]
            for b in range(1, nb):
                if ends[b] >= latest:
                    critical, latest = b, ends[b]
            winners = range(nb)
        else:
            order = sorted((ends[b], b) for b in range(nb) if ends[b] is not None)
            critical = order[kk - 1][1]
            winners = sorted(b for _, b in order[:kk])
            for p in procs:
                if p.is_alive:
                    p.interrupt()
        if not static:
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
    PipelineNode: None,  # run together with the call before it (see _Runner.pipelined)
    FailNode: _Runner.fail,
}


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


Runner = _Runner  # the public name (workloads drive runners in a shared environment)

# Record layouts after (node, run, instance): see _Runner.call / call_limited / _span.
CALL_RECORD = (*CALL_FIELDS, "tier")  # a call recorded in full (cancelled, failed or limited)
PLAIN_RECORD = ("t_start", "ttft", "input", "cache_read", "cache_write", "cache_write_1h")


def _scatter_calls(plan: Plan, runner: _Runner, variant: int) -> dict[int, dict[str, np.ndarray]]:
    """Call tensors from a runner's records.

    A plain call that completed records only what depended on the run's history (start, TTFT,
    tokens); the rest is rebuilt here with the same operations the DES would have done:
    ``t_first = t_start + ttft``, ``t_end = t_start + (ttft + (output + reasoning) / tps)``.
    """
    block = runner.block
    out = _scatter(plan.calls, block, runner.plain_recs, PLAIN_RECORD, empty_call_tensors)
    for node in plan.calls:
        t = out[node.id]
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
        dec = (output + reasoning) / tps_done
        t["status"][done] = DONE
        t["t_submit"][done] = t0
        t["t_first"][done] = t0 + ttft
        sd = stall_draws(plan, block, node, node.tiers[variant])
        if sd is None:
            t["t_end"][done] = t0 + (ttft + dec)
        else:
            t["t_end"][done] = t0 + ((ttft + dec) + np.broadcast_to(sd[0], done.shape)[done])
        t["output"][done] = output
        t["reasoning"][done] = reasoning
        t["tier"][done] = node.tiers[variant]
    full = _scatter(plan.calls, block, runner.call_recs, CALL_RECORD, empty_call_tensors)
    for node in plan.calls:  # cancelled, failed and limited calls: everything was recorded
        f, t = full[node.id], out[node.id]
        m = f["status"] != 0
        if m.any():
            for name in t:
                t[name][m] = f[name][m]
    return out


def _scatter_spans(plan: Plan, block: Block, recs: list[tuple]) -> dict[int, dict[str, np.ndarray]]:
    nodes = [n for n in plan.nodes if isinstance(n, ToolNode | WaitNode)]
    return _scatter(nodes, block, recs, SPAN_FIELDS, empty_span_tensors)


def attempts_frame(plan: Plan, block: Block, variant: int, recs: list[tuple]) -> dict[str, np.ndarray]:
    """Attempts that did not complete the call (429s, errors, timeouts) and retried successes, as columns."""
    cols = (
        "node",
        "run",
        "instance",
        "attempt",
        "tier",
        "outcome",
        "t_submit",
        "t_start",
        "t_end",
        "input",
        "cache_read",
        "cache_write",
        "cache_write_1h",
        "output",
        "reasoning",
    )
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


def finish_block(plan: Plan, runner: _Runner, block: Block, variant: int, start=None) -> BlockResult:
    """Turn a runner's records into a :class:`BlockResult`."""
    breakdown = {k: runner.acc[:, i].copy() for i, k in enumerate(BREAKDOWN)}
    if plan.has_stalls:
        breakdown["stall"] = runner.acc[:, STALL].copy()
    res = BlockResult(
        variant=variant,
        block=block,
        wall=runner.wall,
        breakdown=breakdown,
        calls=_scatter_calls(plan, runner, variant),
        spans=_scatter_spans(plan, block, runner.span_recs),
        start=start,
    )
    if runner.streamed:
        res.extra["interrupted"] = _interrupted(plan, block, runner.interrupt_recs)
    if plan.needs_attempts:
        att = attempts_frame(plan, block, variant, runner.attempt_recs)
        local = att["run"] - block.start
        extra = np.zeros(block.n)
        np.add.at(extra, local, att["cost"])
        res.extra["failed_attempts_cost_usd"] = extra
        res.extra["run_status"] = runner.status.copy()
        res.extra["attempts"] = att
    elif plan.defines_success:
        res.extra["run_status"] = runner.status.copy()
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


def run_block_des(plan: Plan, block: Block, variant: int, speeds: dict) -> BlockResult:
    """Simulate every run of a block in one variant with SimPy, one run at a time."""
    runner = _Runner(plan, block, variant, speeds)
    for r in range(block.n):
        runner.run_one(r)
    return finish_block(plan, runner, block, variant)

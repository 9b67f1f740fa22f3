"""The discrete-event engine: each agent run as SimPy processes.

A run is a SimPy process walking the plan tree. Sequential steps are plain
``yield from`` (no extra process); a call or tool is one ``timeout``; a
``parallel`` or ``fanout`` starts one process per branch (a branch that is one
fixed call: just its timeout) and waits until the join is satisfied. Every random
number comes from the block's pre-drawn arrays (:mod:`agentsim.plan.sampling`),
read at ``[run][instance]``.

The rules it applies -- a call's timing, what a cut call is billed, which branch
is critical at a join, the breakdown slots -- live in :mod:`agentsim.sim.rules`,
shared with the fast path::

    ttft     = drawn TTFT x tier.ttft_x + uncached_input / prefill_tps
    decode   = (output + reasoning) / (drawn TPS x tier.output_tps_x)
    t_end    = t_start + ((ttft + decode) [+ stall])

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
from simpy.events import Event, Timeout

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
    ContextCfg,
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
from agentsim.sim.rules import (
    DEC,
    N_SLOTS,
    STALL,
    TOOL,
    TTFT,
    WAIT,
    Q,
    critical_all,
    cut_decode,
    cut_tokens,
    decode,
    duration,
    first_token,
    first_visible,
    lead_in,
    race,
)
from agentsim.sim.streaming import interruption, pipeline_offset, stall_draws, stalled_by, streams

__all__ = ["run_block_des"]

SETTLE = 2  # priority below SimPy's NORMAL (1): processed after every other event at the same time


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


def _outcome(error: bool, timeout: float | None, ttft: float, d: float) -> tuple[float, int]:
    """(seconds the attempt runs, its outcome): an error returns at the first token; a timeout cuts it."""
    if error:
        if timeout is not None and timeout < ttft:
            return timeout, ATT_TIMEOUT
        return ttft, ATT_ERROR
    if timeout is not None and d > timeout:
        return timeout, ATT_TIMEOUT
    return d, ATT_OK


def _contexts(plan: Plan) -> dict[int, ContextCfg]:
    """The context configuration each call node runs in: the agent's, or its enclosing subagent's."""
    out = {}
    stack = [(plan.root, plan.ctx)]
    while stack:
        node, cfg = stack.pop()
        if isinstance(node, CallNode):
            out[node.id] = cfg
        if isinstance(node, SubagentNode):
            cfg = node.ctx
        stack.extend((ch, cfg) for ch in node.children())
    return out


class _CallInfo:
    """One call node's numbers for the runs of a block, as flat Python lists read at ``r * width + instance``.

    Per-event NumPy scalar indexing is slow, so everything a call reads is converted once per block.
    ``dec`` (rules.decode) never depends on the run's history. A call is ``fixed`` when nothing else
    does either -- a context that neither grows nor caches, no interruption, no pipeline fed, no
    shared limits -- and
    then its input, TTFT and duration (rules.first_token, rules.duration) are computed here for every
    run at once, with the same operations the scalar path would do.
    """

    __slots__ = (
        "d",
        "dec",
        "fixed",
        "id",
        "inp",
        "key",
        "node",
        "prefill",
        "stall",
        "started",
        "streamed",
        "tps",
        "ttft",
        "ttft0",
        "ttl",
        "values",
        "width",
    )

    def __init__(self, runner: _Runner, c: CallNode, values: dict, cfg: ContextCfg, feeds: bool):
        plan, block = runner.plan, runner.block
        tier = plan.tiers[c.tiers[runner.variant]]
        self.node, self.id, self.width = c, c.id, runner.width[c.id]
        self.key, self.ttl, self.prefill = tier.index, tier.ttl_s, tier.prefill_tps
        self.streamed = c.interrupt is not None
        self.values = [(runner.tl[(c.id, p)], runner.const[(c.id, p)]) for p in (INPUT, OUTPUT, REASONING)]
        shape = (block.n, *block.shape(c.scope))
        ttft0, tps = runner.speeds[c.id]
        i_new, out, reas = (np.broadcast_to(values[(c.id, p)], shape) for p in (INPUT, OUTPUT, REASONING))
        dec = decode(out, reas, tps)
        self.tps = tps.reshape(-1).tolist()
        self.dec = dec.reshape(-1).tolist()
        sd = stall_draws(plan, block, c, c.tiers[runner.variant])
        stall = None if sd is None else np.broadcast_to(sd[0], shape)
        self.stall = None if stall is None else stall.reshape(-1).tolist()
        self.fixed = not (
            cfg.grows or cfg.cache or self.streamed or feeds or plan.needs_attempts or self.key in runner.tod
        )
        if self.fixed:
            inp = cfg.system + i_new
            ttft = first_token(ttft0, inp, 0, tier.prefill_tps)
            self.inp = inp.reshape(-1).tolist()
            self.ttft = ttft.reshape(-1).tolist()
            self.d = duration(ttft, dec, stall).reshape(-1).tolist()
            self.started = [math.nan] * len(self.d)  # t_start of each instance that completed
            self.ttft0 = None
        else:
            self.inp = self.ttft = self.d = self.started = None
            self.ttft0 = ttft0.reshape(-1).tolist()

    def tokens(self, j: int) -> tuple:
        """(new input, output, reasoning) tokens of instance ``j``."""
        return tuple(lst[0] if const else lst[j] for lst, const in self.values)


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
        # time-of-day conditions (agentsim.plan.time_of_day) by tier index: factors read at each call's start
        self.tod = {t.index: plan.time_of_day[t.model] for t in plan.tiers if t.model in plan.time_of_day}
        values = block.values_for(variant)
        ctx_of = _contexts(plan)
        feeding = {n.call.id for n in plan.nodes if isinstance(n, PipelineNode) and n.call is not None}
        self.info = {c.id: _CallInfo(self, c, values, ctx_of[c.id], c.id in feeding) for c in plan.calls}
        self._tier_speeds: dict[tuple[int, int], tuple[list, list]] = {}
        self.streamed = {c.id for c in plan.calls if c.interrupt is not None}
        self.interrupt_recs = array("d")  # (node, run, instance) of calls cut off by an interruption
        # Records are appended as flat rows of doubles (read by NumPy without conversion).
        self.call_recs = array("d")  # CALL_RECORD rows: cancelled, failed and limited calls
        self.plain_recs = array("d")  # PLAIN_RECORD rows: plain calls that completed (the rest is rebuilt)
        self.span_recs = array("d")
        self.attempt_recs = array("d")
        self.limited = plan.needs_attempts
        self.steps_of = self._steps(plan)
        # sequences that are one fixed call (a branch that needs no process of its own: _join_calls)
        self.one_call = {
            sid: steps[0][1] for sid, steps in self.steps_of.items() if len(steps) == 1 and steps[0][0] is None
        }
        self.env: simpy.Environment = None  # type: ignore[assignment]
        self.accounts: list = []
        # per-run results
        self.wall = np.zeros(n)
        self.start = np.zeros(n)
        self.acc = np.zeros((n, N_SLOTS))
        self.status = np.zeros(n, dtype=np.int8)
        self.done: list[simpy.Event | None] = [None] * n

    def _steps(self, plan: Plan) -> dict[int, list]:
        """Each sequence's steps with their handlers (plain functions: no reference cycle), resolved once.

        A call and the pipeline after it run as one step (see :meth:`pipelined`). A plain call whose
        timing is known before the run (:class:`_CallInfo` ``fixed``) has no handler (``None``):
        :meth:`seq` waits for it inline, without a generator of its own.
        """
        handler = dict(_HANDLER)
        if self.limited:
            handler[CallNode] = _Runner.call_limited
        out = {}
        for node in plan.nodes:
            if not isinstance(node, SeqNode):
                continue
            steps = []
            for ch in node.steps:
                if isinstance(ch, PipelineNode):
                    fn_call, call = steps.pop()
                    steps.append((_Runner.pipelined, (call, ch, fn_call)))
                else:
                    steps.append((handler[type(ch)], ch))
            out[node.id] = [
                (None, self.info[ch.id]) if fn is _Runner.call and self.info[ch.id].fixed else (fn, ch)
                for fn, ch in steps
            ]
        return out

    # ------------------------------------------------------------------ runs
    def run_one(self, r: int) -> None:
        """Run ``r`` alone in a fresh environment (with fresh accounts when there are limits).

        The run's top sequence is the process itself (no wrapper generator): its end is recorded by a
        callback, which also takes a :class:`RunFailed` as the run's failure.
        """
        self.env = env = simpy.Environment()
        if self.plan.accounts:
            from agentsim.plan.limits import Account

            self.accounts = [Account.create(spec, env) for spec in self.plan.accounts]
            self.__dict__.pop("_adm", None)  # the admission plans name the accounts: drop the old run's
        flow = Flow(Ctx(self.plan.ctx), [0.0] * N_SLOTS, r)
        env.process(self.seq(self.plan.root, flow, 0)).callbacks.append(lambda ev: self._ended(ev, r, flow))
        env.run()

    def _ended(self, ev: simpy.Event, r: int, flow: Flow) -> None:
        if not ev._ok and isinstance(ev._value, RunFailed):
            ev.defused = True
            self.status[r] = RUN_FAILED
        self.wall[r] = self.env._now
        self.acc[r] = flow.acc

    def share(self, env: simpy.Environment, accounts: list) -> None:
        """Run in ``env`` with ``accounts`` shared with other runners (a workload: many agents at once)."""
        self.env, self.accounts = env, accounts
        self.__dict__.pop("_adm", None)

    def top(self, r: int):
        """The process of run ``r`` in a shared environment: walks the plan, records its end, status and breakdown."""
        env = self.env
        t_start = env.now
        self.start[r] = t_start
        flow = Flow(Ctx(self.plan.ctx), [0.0] * N_SLOTS, r)
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
        env = self.env
        acc = st.acc
        ttft_slot, dec_slot, stall_slot = TTFT, DEC, STALL  # locals: this is the hot path
        for fn, child in self.steps_of[node.id]:
            if fn is not None:
                yield from fn(self, child, st, flat)
                continue
            # a plain call whose timing was computed for every run up front (_CallInfo.fixed): one timeout,
            # and only its start is recorded (finish_block rebuilds the rest from the same arrays)
            c = child
            j = st.r * c.width + flat
            t0 = env._now  # SimPy's `now` property, without the property call (this is the hot path)
            try:
                yield Timeout(env, c.d[j])
            except simpy.Interrupt:
                _, out, reas = c.tokens(j)
                self._record(
                    CANCELLED, c.id, st.r, flat, t0, t0, c.ttft[j], c.tps[j], (c.inp[j], 0, 0, 0), out, reas, c.key
                )
                raise
            c.started[j] = t0
            acc[ttft_slot] += c.ttft[j]
            acc[dec_slot] += c.dec[j]
            if c.stall is not None:
                stall = c.stall[j]
                if stall:
                    acc[stall_slot] += stall

    def call(self, node: CallNode, st: Flow, flat: int):
        """A call in a context that changes (growth, prompt cache), streamed, or feeding a pipeline."""
        env, r = self.env, st.r
        c = self.info[node.id]
        j = r * c.width + flat
        (inp_l, inp_c), (out_l, out_c), (reas_l, reas_c) = c.values  # c.tokens(j), inline: the hot path
        i_new = inp_l[0] if inp_c else inp_l[j]
        out = out_l[0] if out_c else out_l[j]
        reas = reas_l[0] if reas_c else reas_l[j]
        tps = c.tps[j]
        t0 = env._now
        ctx = st.ctx
        cfg = ctx.cfg
        if cfg.cache:
            tokens = ctx.begin_call(c.key, c.ttl if c.ttl is not None else cfg.ttl_s, i_new, t0)
        else:
            tokens = (ctx.L + i_new, 0, 0, 0)
        if self.tod and c.key in self.tod:  # slow hours: factors of the clock at the call's start
            fx, fy = self.tod[c.key].factors(t0)
            tps = tps * fy
            ttft = first_token(c.ttft0[j] * fx, tokens[0], tokens[1], c.prefill)
            dec = decode(out, reas, tps)
        else:
            ttft = first_token(c.ttft0[j], tokens[0], tokens[1], c.prefill)
            dec = c.dec[j]
        stall = None if c.stall is None else c.stall[j]
        d = duration(ttft, dec, stall)
        cut = None  # (time, visible tokens billed, stall spent) when the user interrupts the call
        if c.streamed or st.trigger is not None:
            cut = self._stream_cut(node, st, flat, r, t0, ttft, tps, out, reas, stall or 0.0, c.key)
        if cfg.cache:
            ctx.mark(c.key, tokens[0], t0 + d if cut is None else cut[0])
        try:
            yield Timeout(env, d if cut is None else cut[0] - t0)
        except simpy.Interrupt:
            # a race may cancel it before its end (or its cut): billed what it generated by now
            self._record(
                CANCELLED, node.id, r, flat, t0, t0, ttft, tps, tokens, out if cut is None else cut[1], reas, c.key
            )
            raise
        if cut is None:
            self.plain_recs.extend((node.id, r, flat, t0, ttft, *tokens))
            if cfg.grows:  # self._close(st, i_new, out, ttft, dec, stall), inline: the hot path
                ctx.L += i_new + out
            acc = st.acc
            acc[TTFT] += ttft
            acc[DEC] += dec
            if stall:
                acc[STALL] += stall
        else:
            self._record(DONE, node.id, r, flat, t0, t0, ttft, tps, tokens, cut[1], reas, c.key)
            self.interrupt_recs.extend((node.id, r, flat))
            self._close(st, i_new, cut[1], ttft, cut_decode(env._now, t0, ttft, cut[2]), cut[2])

    def _record(self, status, nid, r, flat, t_submit, t0, ttft, tps, tokens, out, reas, key, generating=True):
        """A call recorded in full at its end (now): DONE with ``out`` and ``reas`` tokens, or CANCELLED
        (a race lost) with the tokens generated by now (rules.cut_tokens; none after an error); a call
        that had not started by now never happened."""
        T = self.env._now
        if status == CANCELLED:
            if not t0 < T:
                return
            out, reas = cut_tokens(T, t0, ttft, tps, out, reas, generating)
        self.call_recs.extend((nid, r, flat, status, t_submit, t0, t0 + ttft, T, ttft, *tokens, out, reas, key))

    @staticmethod
    def _close(st: Flow, i_new: int, out: int, ttft: float, dec: float, stall: float | None) -> None:
        """A finished call's effect on its flow: the context grows; TTFT, DEC and STALL slots add up."""
        if st.ctx.cfg.grows:
            st.ctx.L += i_new + out
        acc = st.acc
        acc[TTFT] += ttft
        acc[DEC] += dec
        if stall:
            acc[STALL] += stall

    def _stream_cut(self, node, st, flat, r, t0, ttft, tps, out, reas, stall, key):
        """Apply the streaming rules to a call: arm the pipeline it feeds (if any) and return
        (cut time, visible tokens billed, stall spent by then) when the user interrupts it, else None."""
        sb, runs, stall_u, hit, t_cut, billed = self._stream_rule(node, flat, r, t0, ttft, tps, out, reas, stall, key)
        if st.trigger is not None:
            self._arm_pipeline(st, node, flat, runs, sb, t0, ttft, stall, stall_u, float(t_cut[0]) if hit[0] else None)
        if not hit[0]:
            return None
        stalled = float(stalled_by(sb, np.array([stall]), np.array([stall_u]), t_cut)[0])
        return float(t_cut[0]), int(billed[0]), stalled

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
        end = send + duration(ttft, decode(out, reas, tps), stall)
        a1 = first_visible(send, ttft, reas, tps)
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

    def _arm_pipeline(self, st, node, flat, runs, sb, t0, ttft, stall, stall_u, t_cut):
        """Start the pipeline after ``node`` once it has streamed enough (agentsim.sim.streaming.pipeline_offset)."""
        env = self.env
        event, pipe, pflow = st.trigger
        st.trigger = None
        cut = None if t_cut is None else np.array([t_cut])
        t_go = float(pipeline_offset(pipe, self.block, flat, runs, sb, cut)[0])
        t_go = max(t_go, t0)
        # the pipeline's critical path so far: this call's TTFT, decode and stall up to t_go
        acc = list(st.acc)
        stalled = float(stalled_by(sb, np.array([stall]), np.array([stall_u]), np.array([t_go]))[0])
        first, dec = lead_in(t0, t_go, ttft, stalled)
        acc[TTFT] += float(first)
        acc[DEC] += float(dec)
        acc[STALL] += stalled
        pflow.acc = acc
        env.timeout(t_go - t0).callbacks.append(lambda _ev: event.succeed())

    def pipelined(self, pair, st: Flow, flat: int):
        """A call and the pipeline after it: the pipeline starts on the call's partial output; both join.

        Like a parallel fork: the pipeline sees the context as it was before the call, and its additions
        are appended after the call's at the join; the later of the two is the critical path (a tie: the
        pipeline, the later in branch order, rules.critical_all).
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
        except (simpy.Interrupt, RunFailed):  # cancelled, or one side failed the run: stop the other now
            for p in procs:
                if p.is_alive:
                    p.interrupt()
            raise
        critical = (fa, fb)[critical_all(ends)]
        if not static:
            st.ctx.join([fa.ctx, fb.ctx])
        st.acc[:] = critical.acc

    def call_limited(self, node: CallNode, st: Flow, flat: int):
        """A call that may wait for, or be refused by, shared accounts, fail, time out and be retried.

        Each attempt is :meth:`_attempt`; between failed attempts the call backs off (:meth:`_backoff`);
        after ``fallback_after`` failures it moves to the fallback tier; after ``max_attempts`` the run fails.
        """
        c = self.info[node.id]
        j = st.r * c.width + flat
        u_err = self.tl[(node.id, U_ERROR)]
        u_jit = self.tl[(node.id, U_JITTER)]
        base = j * (len(u_err) // (self.n * c.width))  # attempts are the last axis of these draws
        primary = tier = self.plan.tiers[c.key]
        t_submit = self.env.now
        failures = 0
        attempt = 0
        while True:
            attempt += 1
            if tier is primary and primary.fallback is not None and failures >= primary.fallback_after:
                tier = self.plan.tiers[primary.fallback]
            ok, retry_after = yield from self._attempt(
                node, c, st, flat, j, tier, attempt, t_submit, u_err[base + attempt - 1]
            )
            if ok:
                return
            failures += 1
            if attempt >= tier.max_attempts:
                self._fail_call(node, st.r, flat, t_submit, tier.index)
            yield self.env.timeout(self._backoff(tier, attempt, u_jit[base + attempt - 1], retry_after))

    def _attempt(self, node, c, st: Flow, flat: int, j: int, tier, attempt: int, t_submit: float, u_err: float):
        """One attempt of a limited call on ``tier``: (succeeded, retry-after of a refusal)."""
        env, r, ctx = self.env, st.r, st.ctx
        i_new, out, reas = c.tokens(j)
        tkey = tier.index
        if tkey == c.key:
            ttft0, tps = c.ttft0[j], c.tps[j]
        else:
            tl_ttft, tl_tps = self.tier_speeds(node, tkey)
            ttft0, tps = tl_ttft[j], tl_tps[j]
        ttl = ctx.cfg.ttl_s if tier.ttl_s is None else tier.ttl_s
        t_try = env.now
        held, retry_after, refused = yield from self._admit(tier, ctx, tkey, ttl, i_new, out + reas)
        if refused:
            self.attempt_recs.extend(
                (node.id, r, flat, attempt, tkey, ATT_REJECTED, t_try, env.now, env.now, 0, 0, 0, 0, 0, 0)
            )
            return False, retry_after
        t0 = env.now
        tokens = ctx.begin_call(tkey, ttl, i_new, t0)
        if self.tod and tkey in self.tod:  # slow hours: factors of the clock at the attempt's start
            fx, fy = self.tod[tkey].factors(t0)
            ttft0, tps = ttft0 * fx, tps * fy
        ttft = first_token(ttft0, tokens[0], tokens[1], tier.prefill_tps)
        dec = decode(out, reas, tps)
        stall = self._stall_on(node, tkey, j)
        d = duration(ttft, dec, stall)
        error = u_err < tier.error_rate
        d_run, outcome = _outcome(error, tier.timeout_s, ttft, d)
        cut = None  # (time, visible tokens billed, stall spent) when the user interrupts this attempt
        if outcome == ATT_OK and (c.streamed or st.trigger is not None):
            cut = self._stream_cut(node, st, flat, r, t0, ttft, tps, out, reas, stall or 0.0, tkey)
            if cut is not None:
                d_run = cut[0] - t0
        ctx.mark(tkey, tokens[0], t0 + d_run)
        try:
            yield env.timeout(d_run)
        except simpy.Interrupt:
            self._release(held)
            self._record(CANCELLED, node.id, r, flat, t_submit, t0, ttft, tps, tokens, out, reas, tkey, not error)
            raise
        self._release(held)
        if outcome == ATT_OK:
            vis = out if cut is None else cut[1]
            self._record(DONE, node.id, r, flat, t_submit, t0, ttft, tps, tokens, vis, reas, tkey)
            if attempt > 1:
                self.attempt_recs.extend(
                    (node.id, r, flat, attempt, tkey, ATT_OK, t_try, t0, env.now, 0, 0, 0, 0, 0, 0)
                )
            st.acc[Q] += t0 - t_submit
            if cut is None:
                self._close(st, i_new, vis, ttft, dec, stall)
            else:
                self.interrupt_recs.extend((node.id, r, flat))
                self._close(st, i_new, vis, ttft, cut_decode(env.now, t0, ttft, cut[2]), cut[2])
            return True, None
        # a failed attempt: an error (nothing billed) or a timeout (billed what was generated)
        billed = (0, 0, 0, 0, 0, 0)
        if outcome == ATT_TIMEOUT:
            billed = (*tokens, *cut_tokens(env.now, t0, ttft, tps, out, reas, not error))
        self.attempt_recs.extend((node.id, r, flat, attempt, tkey, outcome, t_try, t0, env.now, *billed))
        return False, None

    def _stall_on(self, node: CallNode, tkey: int, j: int) -> float | None:
        """Stall seconds of a call's instance ``j`` on tier ``tkey`` (None when the tier cannot stall)."""
        sd = stall_draws(self.plan, self.block, node, tkey) if self.plan.has_stalls else None
        if sd is None:
            return None
        return float(np.broadcast_to(sd[0], (self.n, *self.block.shape(node.scope))).reshape(-1)[j])

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
                    if a.slots is not None and a.slots.capacity != math.inf:
                        a.slots.take_now()
                        held.append(a.slots)
            for a in queueing:  # wait in line, in declaration order
                slots = a.slots
                if slots is not None and slots.capacity != math.inf:
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
            # an account without a concurrency cap only counts its requests in flight: a call still waiting
            # for a rate budget or another account's slot is not in flight yet, so it is counted once admitted
            for a in (*rejecting, *queueing):
                if a.slots is not None and a.slots.capacity == math.inf:
                    a.slots.take_now()
                    held.append(a.slots)
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
        one = self.one_call
        if node.k is None and all(b.id in one for b in node.branches):
            return self._join_calls([(one[b.id], flat) for b in node.branches], st)
        return self._join([(b, flat) for b in node.branches], node.k, st)

    def fanout(self, node: FanoutNode, st: Flow, flat: int):
        n = self.value(node, COUNT, st.r, flat)
        base = flat * self.dims[node.id]
        if node.join == "all":
            c = self.one_call.get(node.body.id)
            if c is not None:
                return self._join_calls([(c, base + i) for i in range(n)], st)
        k = None if node.join == "all" else node.join
        return self._join([(node.body, base + c) for c in range(n)], k, st)

    def _join_calls(self, calls: list[tuple[_CallInfo, int]], st: Flow):
        """Join all of branches that are each one fixed call: a timeout per call, no process per branch.

        The same timeouts, ends and critical branch (rules.critical_all) as :meth:`_join` would give,
        without a generator, a start and an end event per branch. If the parent is cancelled, the calls
        still running are recorded as cancelled now, and their timeouts then do nothing.
        """
        nb = len(calls)
        if nb == 0:
            return
        env, r = self.env, st.r
        t0 = env._now
        ends: list[float | None] = [None] * nb
        left = [nb]
        done = env.event()

        def ended(b: int) -> None:
            if left[0] < 0:  # cancelled
                return
            ends[b] = env._now
            c, flat = calls[b]
            c.started[r * c.width + flat] = t0
            left[0] -= 1
            if left[0] == 0:
                done.succeed()

        for b, (c, flat) in enumerate(calls):
            Timeout(env, c.d[r * c.width + flat]).callbacks.append(lambda _ev, b=b: ended(b))
        try:
            yield done
        except simpy.Interrupt:
            left[0] = -1
            for b, (c, flat) in enumerate(calls):
                if ends[b] is None:
                    j = r * c.width + flat
                    _, out, reas = c.tokens(j)
                    self._record(
                        CANCELLED, c.id, r, flat, t0, t0, c.ttft[j], c.tps[j], (c.inp[j], 0, 0, 0), out, reas, c.key
                    )
            raise
        c, flat = calls[critical_all(ends)]
        j = r * c.width + flat
        acc = st.acc
        acc[TTFT] += c.ttft[j]
        acc[DEC] += c.dec[j]
        if c.stall is not None and c.stall[j]:
            acc[STALL] += c.stall[j]

    def _join(self, branches: list[tuple[SeqNode, int]], k: int | None, st: Flow):
        """Run ``branches`` (sequence, instance) as processes; wait for all, or for the first ``k``.

        The parent carries on with the critical branch's breakdown (rules.critical_all / rules.race);
        in a race the losers are cancelled once everything else at the deciding instant has happened.
        """
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

        def finished(b: int) -> None:
            ends[b] = env._now
            count[0] += 1
            if count[0] == kk:
                if kk == nb:
                    done.succeed()
                else:  # decide the race once everything else at this instant has happened
                    _Settle(env).callbacks.append(lambda _ev: done.succeed())

        def failed(exc: BaseException) -> None:
            if isinstance(exc, RunFailed) and not done.triggered:
                done.fail(exc)  # the run fails: the parent stops the other branches

        if self.limited:  # each branch in a wrapper process (the event order shared accounts were tuned on)

            def branch(b: int, seq: SeqNode, flat: int):
                try:
                    yield from self.seq(seq, states[b], flat)
                except (simpy.Interrupt, RunFailed) as exc:
                    failed(exc)
                    return
                finished(b)

            procs = [env.process(branch(b, seq, flat)) for b, (seq, flat) in enumerate(branches)]
        else:  # each branch's sequence is its process; its end is seen by a callback

            def ended(ev: simpy.Event, b: int) -> None:
                if ev._ok:
                    finished(b)
                elif isinstance(ev._value, simpy.Interrupt | RunFailed):  # cancelled or failed: handled here
                    ev.defused = True
                    failed(ev._value)

            procs = []
            for b, (seq, flat) in enumerate(branches):
                p = env.process(self.seq(seq, states[b], flat))
                p.callbacks.append(lambda ev, b=b: ended(ev, b))
                procs.append(p)
        try:
            yield done
        except (simpy.Interrupt, RunFailed):
            for p in procs:
                if p.is_alive:
                    p.interrupt()
            raise
        if kk == nb:
            critical, winners = critical_all(ends), range(nb)
        else:
            critical, winners = race(ends, kk)
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
    tokens) -- a fixed call only its start -- and the rest is rebuilt here with the rules the DES
    applied (agentsim.sim.rules): ``t_first = t_start + ttft``, ``t_end = t_start + duration``.
    """
    block = runner.block
    out = _scatter(plan.calls, block, runner.plain_recs, PLAIN_RECORD, empty_call_tensors)
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
        dec = decode(output, reasoning, tps_done)
        t["status"][done] = DONE
        t["t_submit"][done] = t0
        t["t_first"][done] = t0 + ttft
        sd = stall_draws(plan, block, node, node.tiers[variant])
        t["t_end"][done] = t0 + duration(ttft, dec, None if sd is None else np.broadcast_to(sd[0], done.shape)[done])
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

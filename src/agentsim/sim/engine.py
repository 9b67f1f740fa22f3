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

    ttft     = drawn TTFT x tier.ttft_x [x f_ttft(input)] + uncached_input / prefill_tps
    decode   = (output + reasoning) / (drawn TPS x tier.output_tps_x [x f_tps(input)])
    t_end    = t_start + ((ttft + decode) [+ stall])

(``f_ttft``, ``f_tps``: the tier's factors by context size, :func:`agentsim.sim.rules.context_speeds`.)

Races (``join: any`` or ``{k: N}``): the first ``k`` branches to finish win,
ties broken by branch order. So that ties between branches finishing at the same
instant are decided the same way every time, the join is settled by an event of
lower priority than any other event at that instant. The losing branches are
cancelled at that instant: a call already running is billed its input and the
output generated so far (reasoning first); one that has not started never
happens.

What each step kind does is its own module's DES form (:mod:`agentsim.steps`), dispatched through the
registry; it is written with the runner's primitives: :meth:`Runner.value` (a pre-drawn number),
:meth:`Runner.seq` (a sequence), :meth:`Runner.span` (a step that only takes time), :meth:`Runner.instances`
and :meth:`Runner.iterate` (a node's instance axis: its copies, its iterations in turn), :meth:`Runner.join`
and :meth:`Runner.join_calls` (branches and their join), and the call (:meth:`Runner.call_step`;
with limits or failures :class:`agentsim.sim.attempts.LimitedCalls`). A :class:`~agentsim.sim.flow.RunFailed`
raised by any of them stops the run (inside a parallel branch, the other branches are cancelled as
race losers are). The runner's parts are collaborators it makes per block, each holding only what it
uses (no reference to the runner): :class:`~agentsim.sim.rows.Recorder` (its records),
:class:`~agentsim.sim.des_joins.Joins` (branches and their joins), :class:`~agentsim.sim.des_streams.StreamedCalls`
(streamed calls), :class:`~agentsim.sim.attempts.LimitedCalls` (limited calls); the runner delegates to them
and sets their environment with its own. Its records become tensors in :mod:`agentsim.sim.des_records`.

This engine handles one agent run at a time (fresh environment per run); shared
provider limits and workloads run many agents in one environment
(:mod:`agentsim.plan.limits`). The engine does no I/O and keeps no global state.
"""

from __future__ import annotations

import math
from array import array

import numpy as np
import simpy
from simpy.events import Timeout

from agentsim.model.registry import step_kind
from agentsim.plan.nodes import COUNT, INPUT, OUTPUT, REASONING, U_TPS, U_TTFT, ContextCfg, Plan, SeqNode
from agentsim.plan.sampling import Block
from agentsim.plan.sizeguard import des_stream_bytes
from agentsim.sim import slots
from agentsim.sim.attempts import LimitedCalls
from agentsim.sim.call_timeline import timeline
from agentsim.sim.context import Ctx
from agentsim.sim.des_joins import Joins
from agentsim.sim.des_records import finish_block
from agentsim.sim.des_streams import StreamedCalls
from agentsim.sim.flow import Flow, RunFailed
from agentsim.sim.records import CANCELLED, DONE, RUN_FAILED, BlockResult
from agentsim.sim.rows import Recorder, plain_row, span_row
from agentsim.sim.rules import (
    DEC,
    STALL,
    TTFT,
    context_speeds,
    decode,
    duration,
    first_token,
)
from agentsim.sim.stalls import stall_draws

__all__ = ["Runner", "run_block_des"]

# Draws read per event are kept as arrays of machine numbers (8 bytes each; a list holds a 32-byte Python
# object per number): indexing one gives the same Python float or int as the list would.
_ARRAY_CODES = {"<f8": "d", "<i8": "q"}


def _contexts(plan: Plan) -> dict[int, ContextCfg]:
    """The context configuration each call node runs in: the agent's, or its enclosing subagent's."""
    out = {}
    stack = [(plan.root, plan.ctx)]
    while stack:
        node, cfg = stack.pop()
        if node.record == "call":
            out[node.id] = cfg
        if node.own_context is not None:
            cfg = node.own_context
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
        "ctx_speed",
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

    def __init__(self, runner: Runner, c, values: dict, cfg: ContextCfg, feeds: bool):
        plan, block = runner.plan, runner.block
        tier = plan.tiers[c.tiers[runner.variant]]
        self.node, self.id, self.width = c, c.id, runner.width[c.id]
        self.key, self.ttl, self.prefill = tier.index, tier.ttl_s, tier.prefill_tps
        self.ctx_speed = tier.context_speed  # factors by context size (None: none), applied per call
        self.streamed = c.interrupt is not None
        self.values = [(runner.tl[(c.id, p)], runner.const[(c.id, p)]) for p in (INPUT, OUTPUT, REASONING)]
        shape = (block.n, *block.shape(c.scope))
        ttft0, tps = runner.speeds[c.id]
        i_new, out, reas = (np.broadcast_to(values[(c.id, p)], shape) for p in (INPUT, OUTPUT, REASONING))
        self.fixed = not (
            cfg.grows or cfg.cache or self.streamed or feeds or plan.needs_attempts or self.key in runner.tod
        )
        if self.fixed and self.ctx_speed is not None:  # the context size is known before the run: scale now
            ttft0, tps = context_speeds(ttft0, tps, cfg.system + i_new, self.ctx_speed)
        dec = decode(out, reas, tps)
        self.tps = tps.reshape(-1).tolist()
        self.dec = dec.reshape(-1).tolist()
        sd = stall_draws(plan, block, c, c.tiers[runner.variant])
        stall = None if sd is None else np.broadcast_to(sd[0], shape)
        self.stall = None if stall is None else stall.reshape(-1).tolist()
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
        (inp_l, inp_c), (out_l, out_c), (reas_l, reas_c) = self.values
        return inp_l[0] if inp_c else inp_l[j], out_l[0] if out_c else out_l[j], reas_l[0] if reas_c else reas_l[j]


class Runner:
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
        self._read_draws(plan, block, variant)
        # width of each node's instance axes (its scope), to find (r, i) in the flat lists
        self.width = {nd.id: int(np.prod(block.shape(nd.scope), dtype=np.int64)) for nd in plan.nodes}
        self.speeds = speeds
        # time-of-day conditions (agentsim.plan.time_of_day) by tier index: factors read at each call's start
        self.tod = {t.index: plan.time_of_day[t.model] for t in plan.tiers if t.model in plan.time_of_day}
        values = block.values_for(variant)
        ctx_of = _contexts(plan)
        feeding = {n.call.id for n in plan.nodes if n.follows_call and n.call is not None}
        self.info = {c.id: _CallInfo(self, c, values, ctx_of[c.id], c.id in feeding) for c in plan.calls}
        self.streamed = {c.id for c in plan.calls if c.interrupt is not None}
        if "_budget" not in block.stream_cache:  # per-token draws kept for the calls streamed one at a time
            block.stream_cache["_budget"] = des_stream_bytes(plan, block.n)
        self.rec = Recorder()  # the block's records, as flat rows of doubles (agentsim.sim.rows)
        self.streams = StreamedCalls(plan, block, self.rec)  # streamed calls: cuts and pipelines
        self.joins = Joins(self.rec, wrapped=plan.needs_attempts)  # branches and their joins
        self.limited = None  # calls under limits and failures (agentsim.sim.attempts), when the plan has any
        if plan.needs_attempts:
            self.limited = LimitedCalls(plan, block, self.info, self.tod, self.tl, self.rec, self.streams.cut)
        self.steps_of = self._steps(plan)
        # sequences that are one fixed call (a branch that needs no process of its own: join_calls)
        self.one_call = {
            sid: steps[0][1] for sid, steps in self.steps_of.items() if len(steps) == 1 and steps[0][0] is None
        }
        self.env: simpy.Environment = None  # type: ignore[assignment]
        self.accounts: list = []
        # per-run results
        self.wall = np.zeros(n)
        self.start = np.zeros(n)
        self.n_slots = slots.count()
        self.acc = np.zeros((n, self.n_slots))
        self.status = np.zeros(n, dtype=np.int8)
        self.done: list[simpy.Event | None] = [None] * n

    def _read_draws(self, plan: Plan, block: Block, variant: int) -> None:
        """The block's draws as flat Python lists (``tl``) read at ``r * width + instance``; a constant: one value."""
        constant = {(d.node, d.purpose) for d in plan.draws if d.sampler is not None and d.sampler.is_constant}
        raw = {(c.id, p) for c in plan.calls for p in (U_TTFT, U_TPS)}  # the DES reads the transformed speeds

        def values(key, arr):
            if key in constant:
                return [arr.item(0)] if arr.size else [0]
            code = _ARRAY_CODES.get(arr.dtype.str)
            if code is None:
                return arr.reshape(-1).tolist()
            return array(code, np.ascontiguousarray(arr.reshape(-1)).tobytes())

        # a variant sees its own counts and picks where they depend on a call's model (Block.values_for)
        self.tl = tl = {key: values(key, arr) for key, arr in block.values_for(variant).items() if key not in raw}
        self.const = {key: key in constant for key in tl}

    def _steps(self, plan: Plan) -> dict[int, list]:
        """Each sequence's steps with their kinds' DES forms (plain functions: no reference cycle), resolved once.

        A call and the step that starts on its output (a pipeline) run as one step, the pair handed to
        the latter's form. A plain call whose timing is known before the run (:class:`_CallInfo`
        ``fixed``) has no form (``None``): :meth:`seq` waits for it inline, without a generator of its own.
        A call's form is what the call kind's would pick at every call (:meth:`call_step`), picked here.
        """
        call_form = type(self).call_limited if self.limited else type(self).call
        out = {}
        for node in plan.nodes:
            if not isinstance(node, SeqNode):
                continue
            steps = []
            for ch in node.steps:
                fn = call_form if ch.record == "call" else step_kind(ch.kind).des
                if ch.follows_call and steps and steps[-1][1] is ch.call:
                    fn_call, call = steps.pop()
                    steps.append((fn, (call, ch, fn_call)))
                else:
                    steps.append((fn, ch))
            out[node.id] = [
                (None, self.info[ch.id])
                if not isinstance(ch, tuple) and ch.record == "call" and self.info[ch.id].fixed
                else (fn, ch)
                for fn, ch in steps
            ]
        return out

    # ------------------------------------------------------------------ runs
    def run_one(self, r: int) -> None:
        """Run ``r`` alone in a fresh environment (with fresh accounts when there are limits).

        The run's top sequence is the process itself (no wrapper generator): its end is recorded by a
        callback, which also takes a :class:`RunFailed` as the run's failure.
        """
        env = simpy.Environment()
        accounts = self.accounts
        if self.plan.accounts:
            from agentsim.plan.limits import Account

            accounts = [Account.create(spec, env) for spec in self.plan.accounts]
        self.share(env, accounts)
        flow = Flow(Ctx(self.plan.ctx), [0.0] * self.n_slots, r)
        env.process(self.seq(self.plan.root, flow, 0)).callbacks.append(lambda ev: self._ended(ev, r, flow))
        env.run()

    def _ended(self, ev: simpy.Event, r: int, flow: Flow) -> None:
        if not ev.ok and isinstance(ev.value, RunFailed):
            ev.defused = True
            self.status[r] = RUN_FAILED
        self.wall[r] = self.env.now
        self.acc[r] = flow.acc

    def share(self, env: simpy.Environment, accounts: list) -> None:
        """Run in ``env`` with ``accounts`` shared with other runners (a workload: many agents at once)."""
        self.env = self.streams.env = self.joins.env = env
        self.accounts = accounts
        if self.limited is not None:
            self.limited.use(env, accounts)

    def top(self, r: int):
        """The process of run ``r`` in a shared environment: walks the plan, records its end, status and breakdown."""
        env = self.env
        t_start = env.now
        self.start[r] = t_start
        flow = Flow(Ctx(self.plan.ctx), [0.0] * self.n_slots, r)
        try:
            yield from self.seq(self.plan.root, flow, 0)
        except RunFailed:
            self.status[r] = RUN_FAILED
        self.wall[r] = env.now - t_start
        self.acc[r] = flow.acc

    # ------------------------------------------------------------------ values
    def value(self, node, purpose: int, r: int, flat: int):
        """The pre-drawn number of ``node`` for ``purpose`` in run ``r``, instance slot ``flat``."""
        key = (node.id, purpose)
        return self.tl[key][0] if self.const[key] else self.tl[key][r * self.width[node.id] + flat]

    def value_at(self, node_id: int, purpose: int, r: int):
        """A per-run draw of a pseudo-node (the workload's arrival gaps and think times)."""
        key = (node_id, purpose)
        return self.tl[key][0] if self.const[key] else self.tl[key][r]

    def instances(self, node, st: Flow, flat: int) -> range:
        """The instance slots of the body of a node with an axis (a repeat's iterations, a fan-out's copies) in its
        instance ``flat`` of run ``st.r``: as many as its count drawn (purpose ``COUNT``)."""
        base = flat * self.dims[node.id]
        return range(base, base + self.value(node, COUNT, st.r, flat))

    def iterate(self, node, st: Flow, flat: int, each):
        """The iterations of a node whose axis is ``IN_TURN`` (repeat, a retry, turns), one after the other:
        ``each(k, slot)`` is iteration ``k``'s form (an iterable the runner yields from) on its instance slot."""
        for k, slot in enumerate(self.instances(node, st, flat)):
            yield from each(k, slot)

    # ------------------------------------------------------------------ steps
    def seq(self, node: SeqNode, st: Flow, flat: int):
        """The steps of ``node`` in order, each with its kind's DES form (a fixed call: inline, one timeout)."""
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
                self.rec.cancel_fixed(c, st.r, flat, t0, env.now)
                raise
            c.started[j] = t0
            acc[ttft_slot] += c.ttft[j]
            acc[dec_slot] += c.dec[j]
            if c.stall is not None:
                stall = c.stall[j]
                if stall:
                    acc[stall_slot] += stall

    def join(self, branches: list[tuple[SeqNode, int]], k: int | None, st: Flow):
        """Run ``branches`` (sequence, instance) as processes (each :meth:`seq`); wait for all, or for the first
        ``k`` (:meth:`Joins.join <agentsim.sim.des_joins.Joins.join>`)."""
        return self.joins.join(branches, k, st, self.seq)

    def join_calls(self, calls: list[tuple], st: Flow):
        """Join all of branches that are each one fixed call ``(_CallInfo, instance)``: a timeout per call, no
        process (:meth:`Joins.join_calls <agentsim.sim.des_joins.Joins.join_calls>`)."""
        return self.joins.join_calls(calls, st)

    def call_step(self, node, st: Flow, flat: int):
        """A call (the call kind's DES form): :meth:`call`, or :meth:`call_limited` with limits or failures."""
        return self.call_limited(node, st, flat) if self.limited else self.call(node, st, flat)

    def call_limited(self, node, st: Flow, flat: int):
        """A call under limits or failures (:meth:`LimitedCalls.call <agentsim.sim.attempts.LimitedCalls.call>`)."""
        return self.limited.call(node, st, flat)

    def call(self, node, st: Flow, flat: int):
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
        ttft0 = c.ttft0[j]
        dec = c.dec[j]
        if self.tod and c.key in self.tod:  # slow hours: factors of the clock at the call's start
            fx, fy = self.tod[c.key].factors(t0)
            ttft0, tps = ttft0 * fx, tps * fy
            dec = None
        if c.ctx_speed is not None:  # speed by context size: the call's whole input (rules.context_speeds)
            ttft0, tps = context_speeds(ttft0, tps, tokens[0], c.ctx_speed)
            dec = None
        ttft = first_token(ttft0, tokens[0], tokens[1], c.prefill)
        stall = None if c.stall is None else c.stall[j]
        if c.streamed or st.trigger is not None:
            tl = timeline(t0, ttft, out, reas, tps, stall, dec)
            yield from self.streams.call(node, st, flat, tl, tokens, i_new, c.key)
            return
        if dec is None:
            dec = (out + reas) / tps  # rules.decode
        d = duration(ttft, dec, stall)
        if cfg.cache:
            ctx.mark(c.key, tokens[0], t0 + d)
        try:
            yield Timeout(env, d)
        except simpy.Interrupt:
            # a race may cancel it before its end: billed what it generated by now
            tl = timeline(t0, ttft, out, reas, tps, stall, dec)
            self.rec.call(CANCELLED, (node.id, r, flat), t0, tl, tokens, c.key, env.now)
            raise
        self.rec.plain.frombytes(plain_row(node.id, r, flat, t0, ttft, *tokens))
        if cfg.grows:  # st.close(i_new, tl), inline: the hot path
            ctx.L += i_new + out
            if cfg.compact_above is not None and cfg.compact_above < ctx.L:
                ctx.compact()
        acc = st.acc
        acc[TTFT] += ttft
        acc[DEC] += dec
        if stall:
            acc[STALL] += stall

    def turn_ended(self, node, st: Flow, flat: int, t0: float) -> None:
        """Instance ``flat`` (a turn) of ``node``'s body in run ``st.r`` ends now, having begun at ``t0``."""
        self.rec.turns.append((node.id, st.r, flat, self.env.now - t0))

    def span(self, node, st: Flow, flat: int, slot: int, seconds: float, out: int):
        """A step that only takes ``seconds`` (a tool, a wait, a listen): a row of the spans table; ``out``
        tokens join the context at its end, and its seconds go to breakdown ``slot``."""
        env, r = self.env, st.r
        t0 = env._now  # (the hot path: as in seq)
        try:
            yield Timeout(env, seconds)
        except simpy.Interrupt:
            if env.now > t0:
                self.rec.spans.frombytes(span_row(node.id, r, flat, CANCELLED, t0, env.now, 0))
            raise
        self.rec.spans.frombytes(span_row(node.id, r, flat, DONE, t0, env._now, out))
        st.acc[slot] += seconds
        if out:
            st.ctx.add(out)


def run_block_des(plan: Plan, block: Block, variant: int, speeds: dict) -> BlockResult:
    """Simulate every run of a block in one variant with SimPy, one run at a time."""
    runner = Runner(plan, block, variant, speeds)
    for r in range(block.n):
        runner.run_one(r)
    return finish_block(plan, runner, block, variant)

"""Calls under shared limits and failures, in the DES: admission, attempts, back-off, fallbacks.

When a plan has provider accounts (``limits:``), error rates or timeouts, every call runs as
:meth:`LimitedCalls.call_limited`: each attempt first takes room in every account of its tier
(:meth:`LimitedCalls._admit`: refused at once by a ``reject`` account that is full -- an HTTP 429, with
a retry-after when a bucket is short -- or waiting in line at ``queue`` accounts), then runs; it may
return an error at its first token (``u < error_rate``, a pre-drawn uniform per attempt) or be cut by
the client's timeout. Between failed attempts the call backs off (``min(cap, base * 2^(attempt-1))``,
times a pre-drawn uniform with full jitter, or the 429's retry-after); after ``fallback_after``
failures it moves to the fallback tier; after ``max_attempts`` the run fails. The final attempt
fills the call's record; the others go to the ``attempts`` table, timed-out ones billed what they
generated (:func:`agentsim.sim.rules.cut_tokens`).

What does not change from one attempt to the next is looked up once per block: a call node's draws of
errors and jitter (:class:`_LimitedCall`), a tier's accounts (:class:`_Admission`), its stall draws. An
attempt's timeline is built as a :class:`~agentsim.sim.call_timeline.CallTimeline` only where a rule
needs one (a streamed call, a cancelled or timed-out attempt); a completed one is recorded from its
numbers, with the same operations (:mod:`agentsim.sim.rules`).

:class:`LimitedCalls` is a part of :class:`agentsim.sim.engine.Runner`, made by it per block (when the
plan has limits or failures) with what it reads and writes and nothing else: the plan, the block, the
calls' numbers (``engine._CallInfo``), the time-of-day conditions, the block's draws, the runner's
:class:`~agentsim.sim.rows.Recorder`, and where a streamed attempt is cut (the runner's
:meth:`StreamedCalls.cut <agentsim.sim.des_streams.StreamedCalls.cut>`); the runner hands it the
environment and the accounts of the runs (:meth:`LimitedCalls.use`).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable

import numpy as np
import simpy
from simpy.events import Timeout

from agentsim.plan.limits import Gate, TooLarge
from agentsim.plan.nodes import U_ERROR, U_JITTER, Plan
from agentsim.plan.sampling import Block, late_draw, tier_speeds
from agentsim.sim.call_timeline import timeline
from agentsim.sim.flow import Flow, RunFailed
from agentsim.sim.records import CANCELLED, DONE
from agentsim.sim.rows import Recorder, attempt_row, call_row
from agentsim.sim.rules import Q, context_speeds, cut_tokens, duration, first_token
from agentsim.sim.stalls import stall_draws

__all__ = ["ATT_CANCELLED", "ATT_ERROR", "ATT_OK", "ATT_REJECTED", "ATT_TIMEOUT", "FAILED", "LimitedCalls"]

# attempt outcomes (attempts table)
ATT_OK, ATT_REJECTED, ATT_ERROR, ATT_TIMEOUT, ATT_CANCELLED = range(5)
FAILED = 3  # call status: every attempt failed
_NOTHING_BILLED = (0, 0, 0, 0, 0, 0)


def _outcome(error: bool, timeout: float | None, ttft: float, d: float) -> tuple[float, int]:
    """(seconds the attempt runs, its outcome): an error returns at the first token; a timeout cuts it."""
    if error:
        if timeout is not None and timeout < ttft:
            return timeout, ATT_TIMEOUT
        return ttft, ATT_ERROR
    if timeout is not None and d > timeout:
        return timeout, ATT_TIMEOUT
    return d, ATT_OK


def _ttl(ctx, tier) -> float | None:
    """The cache lifetime of a call on ``tier``: the tier's own, else the context's."""
    return ctx.cfg.ttl_s if tier.ttl_s is None else tier.ttl_s


class _LimitedCall:
    """A call node's constants for its attempts, in one block: its numbers (``engine._CallInfo``), its tier and
    the fallback's (None: none), and where its pre-drawn error and jitter uniforms are: instance ``j``'s
    attempt ``k`` at ``j * stride + k - 1`` of the flat draws (:meth:`LimitedCalls._uniforms`: drawn when a
    rule first reads them)."""

    __slots__ = ("c", "fallback", "primary", "stride")

    def __init__(self, plan: Plan, c, node):
        self.c = c
        self.stride = next(d.extra[0] for d in plan.draws if d.node == node.id and d.purpose == U_ERROR)
        self.primary = primary = plan.tiers[c.key]
        self.fallback = None if primary.fallback is None else plan.tiers[primary.fallback]


class _Admission:
    """How a tier's calls are admitted, in one simulation's accounts: its ``reject`` accounts as one
    :class:`~agentsim.plan.limits.Gate`, its ``queue`` accounts in declaration order, whether any account
    counts tokens, the slots of the accounts without a concurrency cap (they only count requests in flight,
    from the instant a request is admitted), and the slots a call admitted without queueing holds."""

    __slots__ = ("capped", "counted", "gate", "held", "queueing", "tokens")

    def __init__(self, accounts: list):
        rejecting = [a for a in accounts if a.spec.policy == "reject"]
        self.queueing = [a for a in accounts if a.spec.policy == "queue"]
        self.gate = Gate(rejecting) if rejecting else None
        self.tokens = any(a.rpm is not None or a.itpm is not None or a.otpm is not None for a in accounts)
        self.counted = tuple(
            a.slots for a in (*rejecting, *self.queueing) if a.slots is not None and a.slots.capacity == math.inf
        )
        self.capped = tuple(a.slots for a in rejecting if a.slots is not None and a.slots.capacity != math.inf)
        self.held = (*self.capped, *self.counted)


class _Job:
    """One limited call being attempted: its constants, its flow, its instance, when it was submitted, where
    its records go (node, run, instance) and its drawn tokens (new input, output, reasoning)."""

    __slots__ = ("drawn", "flat", "j", "lc", "node", "st", "t_submit", "where")

    def __init__(self, node, lc: _LimitedCall, st: Flow, flat: int, j: int, t_submit: float):
        self.node, self.lc, self.st, self.flat, self.j, self.t_submit = node, lc, st, flat, j, t_submit
        self.where = (node.id, st.r, flat)
        self.drawn = lc.c.tokens(j)


class LimitedCalls:
    """The runner's calls under limits and failures (see the module doc).

    ``info``: each call node's ``engine._CallInfo``; ``tod``: time-of-day conditions by tier index; ``draws``:
    the block's flat draws by (node, purpose) (per-attempt uniforms drawn with the block are read there, others
    drawn when first read, :meth:`uniforms`); ``stream_cut``: where the user cuts a streamed attempt and the
    pipeline it feeds is armed (``StreamedCalls.cut``). Per call node, per tier's accounts and per (node, tier),
    what does not change between attempts is looked up once and kept.
    """

    __slots__ = (
        "_admissions",
        "_calls",
        "_late",
        "_tier_speeds",
        "_tier_stalls",
        "accounts",
        "block",
        "draws",
        "env",
        "info",
        "plan",
        "rec",
        "stream_cut",
        "tod",
    )

    def __init__(self, plan: Plan, block: Block, info: dict, tod: dict, draws: dict, rec: Recorder,
                 stream_cut: Callable) -> None:  # fmt: skip
        self.plan, self.block, self.info, self.tod, self.draws = plan, block, info, tod, draws
        self.rec, self.stream_cut = rec, stream_cut
        self._calls: dict[int, _LimitedCall] = {}
        self._admissions: dict[int, _Admission] = {}
        self._tier_stalls: dict = {}
        self._tier_speeds: dict[tuple[int, int], tuple[list, list]] = {}
        self._late: dict = {}
        self.env: simpy.Environment = None  # type: ignore[assignment]
        self.accounts: list = []

    def use(self, env: simpy.Environment, accounts: list) -> None:
        """Run in ``env`` with ``accounts`` (a tier's admission names them: the old ones' are dropped)."""
        self.env, self.accounts = env, accounts
        self._admissions = {}

    def call(self, node, st: Flow, flat: int):
        """A call that may wait for, or be refused by, shared accounts, fail, time out and be retried.

        Each attempt is :meth:`_attempt`; between failed attempts the call backs off (:meth:`_backoff`);
        after ``fallback_after`` failures it moves to the fallback tier; after ``max_attempts`` the run fails.
        """
        lc = self._calls.get(node.id)
        if lc is None:
            lc = self._calls[node.id] = _LimitedCall(self.plan, self.info[node.id], node)
        j = st.r * lc.c.width + flat
        base = j * lc.stride - 1
        primary = tier = lc.primary
        job = _Job(node, lc, st, flat, j, self.env._now)
        failures = 0
        attempt = 0
        while True:
            attempt += 1
            if tier is primary and lc.fallback is not None and failures >= primary.fallback_after:
                tier = lc.fallback
            # (an attempt on a tier that cannot error needs no draw: no uniform is below an error rate of 0)
            u_err = self.uniforms(node, U_ERROR)[base + attempt] if tier.error_rate > 0 else 1.0
            ok, retry_after = yield from self._attempt(job, tier, attempt, u_err)
            if ok:
                return
            failures += 1
            if attempt >= tier.max_attempts:
                self._fail_call(node, st.r, flat, job.t_submit, tier.index)
            yield self.env.timeout(self._backoff(node, base + attempt, tier, attempt, retry_after))

    def _attempt(self, job: _Job, tier, attempt: int, u_err: float):
        """One attempt of a limited call on ``tier``: (succeeded, retry-after of a refusal).

        Admitted (:meth:`_admit`, or refused: an attempt record), it runs for its duration -- to an error at
        its first token, the client's timeout or the user's interruption -- as one timeout."""
        env, st, c = self.env, job.st, job.lc.c
        ctx, tkey = st.ctx, tier.index
        i_new, out, reas = job.drawn
        t_try = env._now  # SimPy's `now` without the property call (the hot path, as Runner.seq reads it)
        tokens = None
        held = ()
        if tier.accounts:
            refused, retry_after, tokens, held = yield from self._admission(job, tier, attempt, t_try)
            if refused:
                return False, retry_after
        t0 = env._now
        if tokens is None or t0 != t_try:  # (the context is this flow's own: only the clock can change them)
            tokens = ctx.begin_call(tkey, _ttl(ctx, tier), i_new, t0)
        timing = self._timing(job, tier, t0, tokens, out, reas)
        ttft, tps, dec, stall, d = timing
        error = u_err < tier.error_rate
        timeout = tier.timeout_s
        d_run, outcome = (d, ATT_OK) if not error and timeout is None else _outcome(error, timeout, ttft, d)
        tl = cut = None  # where the user interrupts this attempt (agentsim.sim.call_timeline.Cut)
        if outcome == ATT_OK and (c.streamed or st.trigger is not None):
            tl = timeline(t0, ttft, out, reas, tps, stall, dec)
            cut = self.stream_cut(job.node, st, job.flat, tl, tkey)
            if cut is not None:
                d_run = cut.at - t0
        ctx.mark(tkey, tokens[0], t0 + d_run)
        try:
            yield Timeout(env, d_run)
        except simpy.Interrupt:
            self._release(held)
            tl = timeline(t0, ttft, out, reas, tps, stall, dec)
            self.rec.call(CANCELLED, job.where, job.t_submit, tl, tokens, tkey, env.now, not error)
            raise
        self._release(held)
        if outcome == ATT_OK:
            if cut is None:
                self._completed(job, t0, timing, tokens, tkey, attempt, t_try)
            else:
                self._succeeded(job, tl.cut_at(cut), tokens, tkey, attempt, t_try, i_new)
            return True, None
        # a failed attempt: an error (nothing billed) or a timeout (billed what was generated)
        billed = _NOTHING_BILLED
        if outcome == ATT_TIMEOUT:
            billed = (*tokens, *cut_tokens(env.now, t0, ttft, tps, out, reas, not error))
        self.rec.attempts.frombytes(attempt_row(*job.where, attempt, tkey, outcome, t_try, t0, env.now, *billed))
        return False, None

    def _admission(self, job: _Job, tier, attempt: int, t_try: float):
        """An attempt at ``t_try`` before the tier's accounts, waiting in line where they queue:
        ``(refused, retry-after, tokens, slots held)``, a refusal recorded as a rejected attempt.
        ``tokens``: the call's (input, cache read, ...) at ``t_try`` when an account counts them, else None."""
        tkey = tier.index
        i_new, out, reas = job.drawn
        adm = self._admissions.get(tkey)
        if adm is None:
            adm = self._admissions[tkey] = _Admission([self.accounts[a] for a in tier.accounts])
        tokens = job.st.ctx.begin_call(tkey, _ttl(job.st.ctx, tier), i_new, t_try) if adm.tokens else None
        refused, retry_after = self._admit(adm, tokens, out + reas, t_try)
        held = ()
        if not refused and adm.queueing:
            held = yield from self._wait_in_line(adm, tokens, out + reas)
            refused = held is None
        elif not refused:
            held = adm.held
        if refused:
            now = self.env._now
            self.rec.attempts.frombytes(
                attempt_row(*job.where, attempt, tkey, ATT_REJECTED, t_try, now, now, *_NOTHING_BILLED)
            )
        return refused, retry_after, tokens, held

    @staticmethod
    def _admit(adm: _Admission, tokens: tuple | None, out_tokens: int, now: float) -> tuple[bool, float | None]:
        """(refused, retry-after) of a call at ``now`` with ``tokens`` (None: no account counts them) and
        ``out_tokens`` of output, at a tier's ``reject`` accounts (all or nothing, at this instant: a full one
        refuses it, HTTP 429; a request larger than a bucket is refused without a retry-after). Admitted by
        them, a call that need not queue anywhere is counted in flight (the rest: :meth:`_wait_in_line`)."""
        if adm.gate is not None:
            if tokens is None:
                uncached = read = 0
            else:
                read = tokens[1]
                uncached = tokens[0] - read
            try:
                refused, retry_after = adm.gate.admit(uncached, read, out_tokens, now)
            except TooLarge:
                return True, None
            if refused:
                return True, retry_after
        if not adm.queueing:
            for slots in adm.counted:
                slots.take_now(now)
        return False, None

    def _wait_in_line(self, adm: _Admission, tokens: tuple | None, out_tokens: int):
        """After the ``reject`` accounts: wait in line in each ``queue`` account of the tier, in declaration order,
        for a slot and then for tokens; then count the call in flight. Returns the slots held, or None (a
        request larger than a bucket: refused)."""
        uncached, read = (0, 0) if tokens is None else (tokens[0] - tokens[1], tokens[1])
        held = list(adm.capped)  # the reject accounts' slots, taken
        try:
            for a in adm.queueing:
                slots = a.slots
                if slots is not None and slots.capacity != math.inf:
                    ev = slots.request()
                    if ev is not None:
                        t = self.env.now
                        yield from self._wait_in(slots, ev, held)
                        a.waited_s["concurrency"] += self.env.now - t
                    held.append(slots)
                if adm.tokens:
                    for bucket, need in a.needs(uncached, read, out_tokens):
                        ev = bucket.take(need)
                        if ev is not None:
                            t = self.env.now
                            yield from self._wait_in(bucket, ev, held)
                            a.waited_s[bucket.name] += self.env.now - t
        except TooLarge:
            self._release(held)
            return None
        # an account without a concurrency cap only counts its requests in flight: a call still waiting
        # for a rate budget or another account's slot is not in flight yet, so it is counted once admitted
        now = self.env.now
        for slots in adm.counted:
            slots.take_now(now)
            held.append(slots)
        return held

    def _wait_in(self, line, ev, held: list):
        """Wait for ``ev``, a place in ``line`` (a slot or a bucket's tokens); interrupted (a race lost, a run
        stopped), leave the line and give back the slots ``held``."""
        try:
            yield ev
        except simpy.Interrupt:
            line.cancel(ev)
            self._release(held)
            raise

    def _timing(self, job: _Job, tier, t0: float, tokens: tuple, out: int, reas: int) -> tuple:
        """(TTFT, TPS, decode, stall, duration) of an attempt on ``tier`` sent at ``t0`` with ``tokens``:
        the rules (first_token, decode, duration) at its speeds (:meth:`_speeds_on`) and stall (:meth:`_stall_on`)."""
        c, j = job.lc.c, job.j
        if tier.index == c.key and tier.index not in self.tod and tier.context_speed is None:
            ttft0, tps = c.ttft0[j], c.tps[j]  # (_speeds_on and _stall_on of the call's own tier, inline)
            stall = None if c.stall is None else c.stall[j]
        else:
            ttft0, tps = self._speeds_on(job.node, c, tier, j, t0, tokens[0])
            stall = self._stall_on(job.node, c, tier.index, j)
        ttft = first_token(ttft0, tokens[0], tokens[1], tier.prefill_tps)
        dec = (out + reas) / tps  # rules.decode
        return ttft, tps, dec, stall, duration(ttft, dec, stall)

    def _speeds_on(self, node, c, tier, j: int, t0: float, inp: int) -> tuple[float, float]:
        """(drawn TTFT, TPS) of instance ``j`` on ``tier`` (a fallback's from the same draws), at the clock ``t0``,
        with ``inp`` tokens of context (the call's whole input: agentsim.plan.context_speed)."""
        tkey = tier.index
        if tkey == c.key:
            ttft0, tps = c.ttft0[j], c.tps[j]
        else:
            tl_ttft, tl_tps = self._tier_speeds_of(node, tkey)
            ttft0, tps = tl_ttft[j], tl_tps[j]
        if self.tod and tkey in self.tod:  # slow hours: factors of the clock at the attempt's start
            fx, fy = self.tod[tkey].factors(t0)
            ttft0, tps = ttft0 * fx, tps * fy
        if tier.context_speed is not None:  # speed by context size, as Runner.call applies it
            ttft0, tps = context_speeds(ttft0, tps, inp, tier.context_speed)
        return ttft0, tps

    def _completed(self, job: _Job, t0: float, timing: tuple, tokens: tuple, tkey: int, attempt: int,
                   t_try: float) -> None:  # fmt: skip
        """The attempt that completed the call, uncut: what :meth:`_succeeded` does with its timeline, from its
        numbers (``timing``: :meth:`_timing`'s). Recorded in full (``Recorder.call``: first token ``t0 + ttft``,
        end now), its queue time and its effect on the flow (``Flow.closed``, what ``Flow.close`` does from a
        timeline)."""
        st, now = job.st, self.env._now
        ttft, _tps, dec, stall, _d = timing
        i_new, out, reas = job.drawn
        t_submit = job.t_submit
        self.rec.calls.frombytes(
            call_row(*job.where, DONE, t_submit, t0, t0 + ttft, now, ttft, *tokens, out, reas, tkey)
        )
        if attempt > 1:
            self.rec.attempts.frombytes(
                attempt_row(*job.where, attempt, tkey, ATT_OK, t_try, t0, now, *_NOTHING_BILLED)
            )
        st.acc[Q] += t0 - t_submit
        st.closed(i_new, out, ttft, dec, stall)

    def _succeeded(self, job: _Job, tl, tokens: tuple, tkey: int, attempt: int, t_try: float, i_new: int) -> None:
        """The attempt that completed the call, with its timeline (cut by the user, or not): its record, its
        queue time, its effect on the flow."""
        where = job.where
        now = self.env.now
        self.rec.call(DONE, where, job.t_submit, tl, tokens, tkey, now)
        if attempt > 1:
            self.rec.attempts.frombytes(
                attempt_row(*where, attempt, tkey, ATT_OK, t_try, tl.send, now, *_NOTHING_BILLED)
            )
        job.st.acc[Q] += tl.send - job.t_submit
        if tl.cut is not None:
            self.rec.interrupts.extend(where)
        job.st.close(i_new, tl)

    def _stall_on(self, node, c, tkey: int, j: int) -> float | None:
        """Stall seconds of a call's instance ``j`` on tier ``tkey`` (None when the tier cannot stall)."""
        if tkey == c.key:
            stalls = c.stall
        else:
            key = (node.id, tkey)
            if key not in self._tier_stalls:
                sd = stall_draws(self.plan, self.block, node, tkey)
                shape = (self.block.n, *self.block.shape(node.scope))
                self._tier_stalls[key] = None if sd is None else np.broadcast_to(sd[0], shape).reshape(-1).tolist()
            stalls = self._tier_stalls[key]
        return None if stalls is None else stalls[j]

    def _backoff(self, node, at: int, tier, attempt: int, retry_after: float | None) -> float:
        """Seconds before the next attempt: the refusal's retry-after (when honoured), else the exponential
        back-off, times the pre-drawn jitter uniform at ``at`` with full jitter."""
        if retry_after is not None and tier.honour_retry_after:
            return retry_after
        ceiling = min(tier.backoff_cap, tier.backoff_base * 2.0 ** (attempt - 1))
        return self.uniforms(node, U_JITTER)[at] * ceiling if tier.full_jitter else ceiling

    def uniforms(self, node, purpose: int):
        """A call node's per-attempt uniforms (``U_ERROR``, ``U_JITTER``) in this block, as a flat array: those
        drawn with the block, else drawn when first read (:func:`agentsim.plan.sampling.late_draw`: the values
        ``sample_block`` would give)."""
        key = (node.id, purpose)
        got = self._late.get(key)
        if got is None:
            got = self.draws.get(key)
            if got is None:
                values = late_draw(self.plan, self.block, node.id, purpose)
                got = array("d", np.ascontiguousarray(values.reshape(-1), dtype=np.float64).tobytes())
            self._late[key] = got
        return got

    def _tier_speeds_of(self, node, tier: int) -> tuple[list, list]:
        """(TTFT, TPS) flat lists of a call on another tier (a fallback), from the same draws."""
        key = (node.id, tier)
        if key not in self._tier_speeds:
            ttft0, tps = tier_speeds(self.plan, self.block, node, tier)
            self._tier_speeds[key] = (ttft0.reshape(-1).tolist(), tps.reshape(-1).tolist())
        return self._tier_speeds[key]

    def _fail_call(self, node, r: int, flat: int, t_submit: float, tkey: int):
        now = self.env.now
        self.rec.calls.frombytes(
            call_row(node.id, r, flat, FAILED, t_submit, now, now, now, 0.0, 0, 0, 0, 0, 0, 0, tkey)
        )
        raise RunFailed

    @staticmethod
    def _release(held) -> None:
        for slots in held:
            slots.release()

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

:class:`LimitedCalls` is a part of :class:`agentsim.sim.engine.Runner` (a mixin): it reads the
runner's draws, records and accounts.
"""

from __future__ import annotations

import math

import numpy as np
import simpy

from agentsim.plan.limits import TooLarge
from agentsim.plan.nodes import U_ERROR, U_JITTER
from agentsim.sim.call_timeline import timeline
from agentsim.sim.context import Ctx
from agentsim.sim.flow import Flow, RunFailed
from agentsim.sim.records import CANCELLED, DONE
from agentsim.sim.rules import Q, context_speeds, cut_tokens, first_token
from agentsim.sim.stalls import stall_draws

__all__ = ["ATT_CANCELLED", "ATT_ERROR", "ATT_OK", "ATT_REJECTED", "ATT_TIMEOUT", "FAILED", "LimitedCalls"]

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


class _Job:
    """One limited call being attempted: its node, its numbers, its flow, its instance and when it was submitted."""

    __slots__ = ("c", "flat", "j", "node", "st", "t_submit")

    def __init__(self, node, c, st: Flow, flat: int, j: int, t_submit: float):
        self.node, self.c, self.st, self.flat, self.j, self.t_submit = node, c, st, flat, j, t_submit


class LimitedCalls:
    """The runner's calls under limits and failures (see the module doc)."""

    def call_limited(self, node, st: Flow, flat: int):
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
        job = _Job(node, c, st, flat, j, self.env.now)
        failures = 0
        attempt = 0
        while True:
            attempt += 1
            if tier is primary and primary.fallback is not None and failures >= primary.fallback_after:
                tier = self.plan.tiers[primary.fallback]
            ok, retry_after = yield from self._attempt(job, tier, attempt, u_err[base + attempt - 1])
            if ok:
                return
            failures += 1
            if attempt >= tier.max_attempts:
                self._fail_call(node, st.r, flat, job.t_submit, tier.index)
            yield self.env.timeout(self._backoff(tier, attempt, u_jit[base + attempt - 1], retry_after))

    def _attempt(self, job: _Job, tier, attempt: int, u_err: float):
        """One attempt of a limited call on ``tier``: (succeeded, retry-after of a refusal)."""
        env, ctx, node, c = self.env, job.st.ctx, job.node, job.c
        i_new, out, reas = c.tokens(job.j)
        tkey = tier.index
        ttl = ctx.cfg.ttl_s if tier.ttl_s is None else tier.ttl_s
        t_try = env.now
        held, retry_after, refused = yield from self._admit(tier, ctx, tkey, ttl, i_new, out + reas)
        where = (node.id, job.st.r, job.flat)
        if refused:
            self.attempt_recs.extend((*where, attempt, tkey, ATT_REJECTED, t_try, env.now, env.now, 0, 0, 0, 0, 0, 0))
            return False, retry_after
        t0 = env.now
        tokens = ctx.begin_call(tkey, ttl, i_new, t0)
        ttft0, tps = self._speeds_on(node, c, tier, job.j, t0, tokens[0])
        ttft = first_token(ttft0, tokens[0], tokens[1], tier.prefill_tps)
        tl = timeline(t0, ttft, out, reas, tps, self._stall_on(node, tkey, job.j))
        error = u_err < tier.error_rate
        d_run, outcome = _outcome(error, tier.timeout_s, ttft, tl.duration)
        cut = None  # where the user interrupts this attempt (agentsim.sim.call_timeline.Cut)
        if outcome == ATT_OK and (c.streamed or job.st.trigger is not None):
            cut = self._stream_cut(node, job.st, job.flat, tl, tkey)
            if cut is not None:
                d_run = cut.at - t0
        ctx.mark(tkey, tokens[0], t0 + d_run)
        try:
            yield env.timeout(d_run)
        except simpy.Interrupt:
            self._release(held)
            self._record(CANCELLED, where, job.t_submit, tl, tokens, tkey, not error)
            raise
        self._release(held)
        if outcome == ATT_OK:
            self._succeeded(job, tl if cut is None else tl.cut_at(cut), tokens, tkey, attempt, t_try, i_new)
            return True, None
        # a failed attempt: an error (nothing billed) or a timeout (billed what was generated)
        billed = (0, 0, 0, 0, 0, 0)
        if outcome == ATT_TIMEOUT:
            billed = (*tokens, *cut_tokens(env.now, t0, ttft, tps, out, reas, not error))
        self.attempt_recs.extend((*where, attempt, tkey, outcome, t_try, t0, env.now, *billed))
        return False, None

    def _speeds_on(self, node, c, tier, j: int, t0: float, inp: int) -> tuple[float, float]:
        """(drawn TTFT, TPS) of instance ``j`` on ``tier`` (a fallback's from the same draws), at the clock ``t0``,
        with ``inp`` tokens of context (the call's whole input: agentsim.plan.context_speed)."""
        tkey = tier.index
        if tkey == c.key:
            ttft0, tps = c.ttft0[j], c.tps[j]
        else:
            tl_ttft, tl_tps = self.tier_speeds(node, tkey)
            ttft0, tps = tl_ttft[j], tl_tps[j]
        if self.tod and tkey in self.tod:  # slow hours: factors of the clock at the attempt's start
            fx, fy = self.tod[tkey].factors(t0)
            ttft0, tps = ttft0 * fx, tps * fy
        if tier.context_speed is not None:  # speed by context size, as Runner.call applies it
            ttft0, tps = context_speeds(ttft0, tps, inp, tier.context_speed)
        return ttft0, tps

    def _succeeded(self, job: _Job, tl, tokens: tuple, tkey: int, attempt: int, t_try: float, i_new: int) -> None:
        """The attempt that completed the call: its record, its queue time, its effect on the flow."""
        where = (job.node.id, job.st.r, job.flat)
        self._record(DONE, where, job.t_submit, tl, tokens, tkey)
        if attempt > 1:
            now = self.env.now
            self.attempt_recs.extend((*where, attempt, tkey, ATT_OK, t_try, tl.send, now, 0, 0, 0, 0, 0, 0))
        job.st.acc[Q] += tl.send - job.t_submit
        if tl.cut is not None:
            self.interrupt_recs.extend(where)
        self._close(job.st, i_new, tl)

    def _stall_on(self, node, tkey: int, j: int) -> float | None:
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

    def _fail_call(self, node, r: int, flat: int, t_submit: float, tkey: int):
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

"""The fast path: a whole block of runs evaluated at once with NumPy.

Without shared limits, an agent run's timeline is a max-plus expression over
its steps: a chain adds durations, a parallel join takes the k-th smallest end
time. This module evaluates the plan tree once per block, with every quantity an
array over the block's runs (and over ``fanout`` copies, which become an extra
axis). ``repeat`` iterations and ``choose`` options are evaluated in turn under a
boolean *active* mask: an instance that does not happen leaves every state
array unchanged.

What each step kind does is its own module's vectorised form (:mod:`agentsim.steps`), dispatched
through the registry and written with the evaluator's primitives: :meth:`Evaluator.values` (the
pre-drawn arrays), :meth:`Evaluator.seq`, :meth:`Evaluator.span` (a step that only takes time),
:meth:`Evaluator.counts` and :meth:`Evaluator.iterate` (a node's instance axis: its count, its iterations in
turn under a mask), :meth:`Evaluator.not_made`,
:meth:`Evaluator.call`, :meth:`Evaluator.live` (masks without the runs a ``fail`` step ended: an
evaluator-wide *alive* mask), :meth:`Evaluator.cut` (a race's losers) and :class:`State`.

It reproduces :mod:`agentsim.sim.engine` bit for bit, by construction:

* both read the same pre-drawn arrays (:mod:`agentsim.plan.sampling`);
* both compute each quantity with the same IEEE operations in the same order
  (``t_end = t_start + (ttft + decode)``, ``acc + x`` along the critical path,
  the same prompt-cache rules of :mod:`agentsim.sim.context`, the same race rules);
* everything after the timeline (prices, totals, tables) is shared code.

:class:`VecCtx` is :class:`agentsim.sim.context.Ctx` over arrays. Cache entries of one
(model, tier) are stacked on a last axis; an entry with ``s = -1`` does not exist.
"""

from __future__ import annotations

import numpy as np

from agentsim.model.registry import step_kind
from agentsim.plan.memory import tune_malloc
from agentsim.plan.nodes import COUNT, IN_TURN, INPUT, OUTPUT, REASONING, ContextCfg, Node, Plan, SeqNode
from agentsim.plan.sampling import Block, constant_view
from agentsim.sim import rules
from agentsim.sim.call_timeline import CallSlot, Cut, cut_array, timeline
from agentsim.sim.context import ONE_HOUR
from agentsim.sim.records import (
    CANCELLED,
    DONE,
    NOT_MADE,
    RUN_FAILED,
    RUN_OK,
    BlockResult,
    clear,
    empty_call_tensors,
    empty_span_tensors,
    turn_tensor,
)
from agentsim.sim.stalls import stall_draws, stalled_by
from agentsim.sim.stream_draws import batch_runs
from agentsim.sim.streaming import interruption, slot_values, streams
from agentsim.sim.totals import MadeCall, RunTotals, add_ints, lean

__all__ = ["Evaluator", "State", "VecCtx", "run_block_fast", "summary_only_reasons"]

TTFT, DEC, STALL = rules.TTFT, rules.DEC, rules.STALL  # breakdown slots
_NONE_S = -1  # "no entry" marker for cache entry prefixes


class VecCtx:
    """The context of many runs at once (see :class:`agentsim.sim.context.Ctx` for the rules)."""

    __slots__ = ("L", "cfg", "entries")

    def __init__(self, cfg: ContextCfg, L: np.ndarray, entries: dict | None = None):
        self.cfg = cfg
        self.L = L
        self.entries: dict[int, tuple[np.ndarray, np.ndarray]] = {} if entries is None else entries

    @classmethod
    def fresh(cls, cfg: ContextCfg, shape: tuple[int, ...]) -> VecCtx:
        # a read-only broadcast of one value: a context that never grows costs nothing per run
        return cls(cfg, np.broadcast_to(np.int64(cfg.system), shape))

    def fork(self) -> VecCtx:
        return VecCtx(self.cfg, self.L, dict(self.entries))  # arrays are never modified in place

    def expand(self, n_copies: int) -> VecCtx:
        """The same context for each of ``n_copies`` fanout copies (a new last axis)."""
        L = np.broadcast_to(self.L[..., None], (*self.L.shape, n_copies))  # replaced, never written in place
        entries = {
            k: (np.repeat(S[..., None, :], n_copies, axis=-2), np.repeat(T[..., None, :], n_copies, axis=-2))
            for k, (S, T) in self.entries.items()
        }
        return VecCtx(self.cfg, L, entries)

    def begin_call(self, key: int, ttl: float, new_input: np.ndarray, now: np.ndarray):
        """``(input, cache read, cache write, 1-hour cache write)``; with a cache, every input token not
        read from it is written to it (``write = input - read``: no input is uncached)."""
        inp = add_ints(self.L, new_input)
        zero = constant_view(np.int64(0), inp.shape)  # a count that is zero in every run
        if not self.cfg.cache:
            return inp, zero, zero, zero
        if not self.cfg.per_model:
            key = 0  # one cache per context (DESIGN.md §4)
        read = zero
        if key in self.entries:
            S, T = self.entries[key]
            if S.shape[-1] == 1:  # one entry per run (a chain of calls): no reduction over entries
                S0 = S[..., 0]  # taken only where > 0: no max(., 0) needed
                read = np.where((now - T[..., 0] <= ttl) & (S0 > 0), S0, 0)
            else:
                valid = (now[..., None] - T <= ttl) & (S > 0)
                read = np.max(np.where(valid, S, 0), axis=-1)  # >= 0 already
        write = inp - read
        return inp, read, write, (write if ttl == ONE_HOUR else zero)

    def mark(self, key: int, inp: np.ndarray, t_end: np.ndarray, active: np.ndarray, all_on: bool) -> None:
        """The entry each active call leaves, last used at its end (see :meth:`Ctx.mark`)."""
        if not self.cfg.cache:
            return
        if not self.cfg.per_model:
            key = 0
        new_s = inp if self.cfg.grows else self.L
        new_S, new_T = new_s[..., None], t_end[..., None]
        if key in self.entries and not all_on and self.entries[key][0].shape[-1] == 1:
            # one entry per run: the new one where a call was made, else the old one (what _compact keeps)
            S, T = self.entries[key]
            new_S = np.where(active[..., None], new_S, S)
            new_T = np.where(active[..., None], new_T, T)
        elif key in self.entries and not all_on:
            S, T = self.entries[key]
            new_S = np.concatenate(
                [np.where(active, new_s, _NONE_S)[..., None], np.where(active[..., None], _NONE_S, S)], axis=-1
            )
            new_T = np.concatenate(
                [np.where(active, t_end, -np.inf)[..., None], np.where(active[..., None], -np.inf, T)], axis=-1
            )
            new_S, new_T = _compact(new_S, new_T)
        elif not all_on:
            new_S = np.where(active, new_s, _NONE_S)[..., None]
            new_T = np.where(active, t_end, -np.inf)[..., None]
        self.entries[key] = (new_S, new_T)

    def add(self, tokens: np.ndarray, active: np.ndarray, all_on: bool = False) -> None:
        if self.cfg.grows:
            self.L = add_ints(self.L, tokens) if all_on else np.where(active, self.L + tokens, self.L)
            if self.cfg.compact_above is not None:
                self._compact()

    def _compact(self) -> None:
        """Contexts past ``compact_above`` become ``compact_to`` tokens; their cache entries are gone (S = 0)."""
        over = self.cfg.compact_above < self.L
        if over.any():
            self.L = np.where(over, np.int64(self.cfg.compact_to), self.L)
            self.entries = {k: (np.where(over[..., None], 0, S), T) for k, (S, T) in self.entries.items()}

    def join(self, branches: list[VecCtx], counted: list[np.ndarray]) -> None:
        """Merge branch contexts; ``counted[b]`` says where branch ``b`` is a winner (or did not run)."""
        if not self.cfg.grows and not self.cfg.cache:
            return  # nothing can have changed
        L0 = self.L
        offset = np.zeros_like(L0)
        merged: dict[int, tuple[list, list]] = {}
        # An entry no branch touched (the very arrays the context had before the fork), where every branch
        # counts: its prefixes are at most L0, so the merge would be copies of it, compacted back to it.
        untouched = {}
        if all(bool(w.all()) for w in counted):
            untouched = {k: e for k, e in self.entries.items() if all(b.entries.get(k) is e for b in branches)}
        for b, win in zip(branches, counted, strict=True):
            for key, (S, T) in b.entries.items():
                if key in untouched:
                    continue
                keep = (L0[..., None] >= S) | (offset == 0)[..., None]
                S2 = np.where(win[..., None], np.where(keep, S, L0[..., None]), _NONE_S)
                T2 = np.where(win[..., None], T, -np.inf)
                lst = merged.setdefault(key, ([], []))
                lst[0].append(S2)
                lst[1].append(T2)
            offset = offset + np.where(win, b.L - L0, 0)
        self.L = L0 + offset
        self.entries = {k: _compact(np.concatenate(s, -1), np.concatenate(t, -1)) for k, (s, t) in merged.items()}
        self.entries.update(untouched)

    def join_copies(self, copies: VecCtx, counted: np.ndarray) -> None:
        """Merge fanout copies (the last axis of ``copies``) in copy order."""
        if not self.cfg.grows and not self.cfg.cache:
            return  # nothing can have changed
        L0 = self.L
        add = np.where(counted, copies.L - L0[..., None], 0)
        before = np.cumsum(add, axis=-1) - add  # tokens added by earlier counted copies
        merged = {}
        for key, (S, T) in copies.entries.items():
            keep = (L0[..., None, None] >= S) | (before == 0)[..., None]
            S2 = np.where(counted[..., None], np.where(keep, S, L0[..., None, None]), _NONE_S)
            T2 = np.where(counted[..., None], T, -np.inf)
            shape = (*S2.shape[:-2], S2.shape[-2] * S2.shape[-1])
            merged[key] = _compact(S2.reshape(shape), T2.reshape(shape))
        self.L = L0 + add.sum(axis=-1)
        self.entries = merged


def _compact(S: np.ndarray, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keep, per run, only entries no other entry dominates (longer prefix and fresher).

    A dominated entry can never be the longest live one, so look-ups are unchanged;
    without this the entry axis would grow with every join and partial repeat.
    """
    if S.shape[-1] <= 1:
        return S, T
    order = np.lexsort((-T, -S), axis=-1)  # longest first, then freshest first
    S = np.take_along_axis(S, order, axis=-1)
    T = np.take_along_axis(T, order, axis=-1)
    fresher_before = np.concatenate(
        [np.full((*T.shape[:-1], 1), -np.inf), np.maximum.accumulate(T, axis=-1)[..., :-1]], axis=-1
    )
    keep = (fresher_before < T) & (S != _NONE_S)
    width = max(int(keep.sum(axis=-1).max()) if keep.size else 0, 1)
    pack = np.argsort(~keep, axis=-1, kind="stable")[..., :width]
    kept = np.take_along_axis(keep, pack, axis=-1)
    return (
        np.where(kept, np.take_along_axis(S, pack, axis=-1), _NONE_S),
        np.where(kept, np.take_along_axis(T, pack, axis=-1), -np.inf),
    )


class State:
    """Where a sequence of steps is, for every run at once: time, breakdown slots, context, active runs."""

    __slots__ = ("acc", "active", "ctx", "t")

    def __init__(self, t, acc, ctx, active):
        self.t = t
        self.acc = acc
        self.ctx = ctx
        self.active = active


def _tensors(make, plan: Plan, block: Block, scope: tuple[int, ...]) -> dict[str, np.ndarray]:
    """A node's uninitialised tensors, shape ``(runs, *scope)``, laid out for the evaluator's writes.

    The evaluator writes a repeat one iteration at a time and a fan-out's copies all at once, so
    memory holds the repeat axes first, then runs, then the fan-out axes: every write is then
    contiguous instead of one element per row. Only the memory order changes (a transposed view),
    never a value; :meth:`Evaluator.to_c_order` copies them to C order at the end, which is cheaper
    than the strided writes and keeps readers (pricing, totals: 4x slower on transposed arrays) fast.
    """
    dims = block.shape(scope)
    rep = [i for i, m in enumerate(scope) if plan.nodes[m].axis == IN_TURN]
    if not rep:
        return make((block.n, *dims), fill=False)
    rest = [i for i in range(len(scope)) if i not in rep]
    memory = [1 + i for i in rep] + [0] + [1 + i for i in rest]  # logical axes in memory order
    full = (block.n, *dims)
    perm = [memory.index(a) for a in range(len(full))]
    return {k: a.transpose(perm) for k, a in make(tuple(full[a] for a in memory), fill=False).items()}


class Evaluator:
    """Evaluates the plan for every run of a block, in one variant (see the module doc)."""

    def __init__(self, plan: Plan, block: Block, variant: int, speeds: dict, totals: RunTotals | None = None):
        self.plan = plan
        self.totals = totals  # summary-only: per-run sums instead of per-call tensors (agentsim.sim.totals)
        self.block = block
        self.V = block.values_for(variant)  # this variant's counts and picks (see Block.values_for)
        self.variant = variant
        self.speeds = speeds
        # runs still going: None without fail steps; else (runs,) False once a run failed at a fail step
        self.alive = np.ones(block.n, dtype=bool) if plan.defines_success else None
        self.tier_of = {c.id: plan.tiers[c.tiers[variant]] for c in plan.calls}
        # every element is written below (masked), so the tensors start uninitialised
        if totals is None:
            self.calls = {c.id: _tensors(empty_call_tensors, plan, block, c.scope) for c in plan.calls}
            self.spans = {s.id: _tensors(empty_span_tensors, plan, block, s.scope) for s in plan.spans}
        else:  # summary-only: each call's status and TTFT for the per-call statistics, when asked for
            self.calls = (
                {c.id: _tensors(_samples_of(self.tier_of[c.id]), plan, block, c.scope) for c in plan.calls}
                if totals.samples
                else {}
            )
            # only the spans whose start is kept (a listen's: the end of the user's speech)
            self.spans = {s.id: _tensors(empty_span_tensors, plan, block, s.scope) for s in plan.spans if s.keeps_start}
        self.turns = {n.id: turn_tensor(block, n) for n in plan.turn_nodes}  # kept summary-only too
        self._members: dict[int, list[Node]] = {}
        # The last step of the agent (or of a subagent, whose context ends with it): nothing reads the context
        # after it, so a parallel or fan-out there need not merge its branches' contexts.
        bodies = (plan.root, *(n.children()[0] for n in plan.nodes if n.own_context is not None and n.children()))
        self.last_steps = {b.steps[-1].id for b in bodies if b.steps}
        self.pipe_after = {n.call.id: n for n in plan.nodes if n.follows_call and n.call is not None}
        self.pipe_state: dict[int, tuple] = {}
        self.interrupted = {
            c.id: np.zeros((block.n, *block.shape(c.scope)), dtype=bool) for c in plan.calls if c.interrupt is not None
        }
        # node type -> its kind's vectorised form (plain functions: no reference cycle with the evaluator)
        self.forms = {type(n): step_kind(n.kind).fast for n in plan.nodes if not isinstance(n, SeqNode)}
        self.forms[SeqNode] = Evaluator.seq

    # ------------------------------------------------------------------ helpers
    def to_c_order(self) -> None:
        """Hand the tensors on in C order, as the DES's are (one copy each; see :func:`_tensors`)."""
        for tensors in (*self.calls.values(), *self.spans.values()):
            for f, a in tensors.items():
                tensors[f] = np.ascontiguousarray(a)

    def members(self, node: Node) -> list[Node]:
        """The recorded nodes (calls and spans) inside ``node`` (for cancelling a lost branch)."""
        if node.id not in self._members:
            out = []
            stack = [node]
            while stack:
                x = stack.pop()
                if x.record is not None:
                    out.append(x)
                stack.extend(x.children())
            self._members[node.id] = out
        return self._members[node.id]

    def values(self, node: Node, purpose: int, ix: tuple) -> np.ndarray:
        """The pre-drawn values of ``node`` for ``purpose`` at instance index ``ix``, for every run."""
        return self.V[(node.id, purpose)][(slice(None), *ix)]

    def counts(self, node: Node, ix: tuple) -> np.ndarray:
        """The instance count of a node with an axis (purpose ``COUNT``: a repeat's iterations, a fan-out's copies)
        at instance index ``ix``, for every run."""
        return self.values(node, COUNT, ix)

    def iterate(self, node: Node, st: State, ix: tuple, each) -> None:
        """The iterations of a node whose axis is ``IN_TURN`` (repeat, a retry, turns), in turn for every run:
        ``each(k, st, (*ix, k))`` under the mask of the runs that still iterate (their count is above ``k``).
        The instances no run reaches are marked not made (:meth:`not_made`)."""
        count = self.counts(node, ix)
        outer = st.active
        dim = self.block.dims[node.id]
        for k in range(dim):
            act = self.live(outer & (count > k))
            if not act.any():  # no run does iteration k or later: those instances are not made
                for child in node.children():
                    self.not_made(child, (*ix, slice(k, dim)))
                break
            st.active = act
            each(k, st, (*ix, k))
        st.active = self.live(outer)

    def not_made(self, node: Node, ix: tuple) -> None:
        """Mark the instances at ``ix`` of ``node`` and of every recorded node inside it not made, for every run
        (what a skipped instance leaves; summary-only, a node without tensors has nothing to mark)."""
        for member in self.members(node):
            tensors = (self.calls if member.record == "call" else self.spans).get(member.id)
            if tensors is not None:
                clear(tensors, (slice(None), *ix))

    def live(self, mask: np.ndarray) -> np.ndarray:
        """``mask`` without the runs that have failed at a fail step (``mask`` may have fanout copy axes)."""
        if self.alive is None:
            return mask
        return mask & self.alive.reshape(self.alive.shape + (1,) * (mask.ndim - 1))

    # ------------------------------------------------------------------ steps
    def seq(self, node: SeqNode, st: State, ix: tuple) -> None:
        forms = self.forms
        for child in node.steps:
            forms[type(child)](self, child, st, ix)

    def turn_ended(self, node: Node, st: State, ix: tuple, t0) -> None:
        """Instance ``ix`` (a turn) of ``node``'s body ends now for the runs making it, having begun at ``t0``."""
        done = self.live(st.active)
        self.turns[node.id][(slice(None), *ix)] = np.where(done, st.t - t0, np.nan)

    def span(self, node: Node, st: State, ix: tuple, slot: int, seconds: np.ndarray, out: np.ndarray | None) -> None:
        """A step that only takes ``seconds`` (tool, wait, listen): its span rows, its slot; ``out`` tokens
        (None: none) join the context."""
        sl = (slice(None), *ix)
        t0, active = st.t, st.active
        on = bool(active.all())
        t_end = t0 + seconds
        r = self.spans.get(node.id)
        if r is not None:  # (summary-only: no span tensors)
            made = 0 if out is None else out
            if on:
                r["status"][sl] = DONE
                r["t_start"][sl] = t0
                r["t_end"][sl] = t_end
                r["output"][sl] = made
            else:
                r["status"][sl] = np.where(active, DONE, NOT_MADE)
                r["t_start"][sl] = np.where(active, t0, np.nan)
                r["t_end"][sl] = np.where(active, t_end, np.nan)
                r["output"][sl] = np.where(active, made, 0)
        if on:
            st.t = t_end
            st.acc[slot] = st.acc[slot] + seconds
        else:
            st.t = np.where(active, t_end, t0)
            st.acc[slot] = np.where(active, st.acc[slot] + seconds, st.acc[slot])
        if out is not None:
            st.ctx.add(out, active, on)

    def call(self, node: Node, st: State, ix: tuple) -> None:
        """A call of every run at instance ``ix``: its context and cache, its timeline, interruptions and the
        pipeline it feeds, then its records (or its totals, summary-only) and its effect on the state."""
        nid, V = node.id, self.V
        sl = (slice(None), *ix)
        tier = self.tier_of[nid]
        i_new, out, reas = V[(nid, INPUT)][sl], V[(nid, OUTPUT)][sl], V[(nid, REASONING)][sl]
        ttft0, tps = self.speeds[nid][0][sl], self.speeds[nid][1][sl]
        t0, active = st.t, st.active
        on = bool(active.all())
        pipe = self.pipe_after.get(nid)
        if pipe is not None:  # the context and critical path before the call, for the pipeline's fork
            cfg = st.ctx.cfg
            pre = (st.ctx if (not cfg.grows and not cfg.cache) else st.ctx.fork(), list(st.acc))
        ttl = tier.ttl_s if tier.ttl_s is not None else st.ctx.cfg.ttl_s
        tokens = st.ctx.begin_call(tier.index, ttl, i_new, t0)
        inp, read, write, _ = tokens
        if tier.context_speed is not None:  # speed by context size: the call's whole input (rules.context_speeds)
            ttft0, tps = rules.context_speeds(ttft0, tps, lean(inp), tier.context_speed)
        # constants (broadcast views) are combined once, not per element: the same IEEE operations
        if st.ctx.cfg.cache:  # write = inp - read (begin_call): the uncached input, already computed
            ttft = rules.first_token(ttft0, lean(write), 0, tier.prefill_tps)
        else:
            ttft = rules.first_token(ttft0, lean(inp), lean(read), tier.prefill_tps)
        sd = stall_draws(self.plan, self.block, node, tier.index)
        tl = timeline(t0, ttft, lean(out), lean(reas), tps, None if sd is None else sd[0][sl])
        planned = tl
        if node.interrupt is not None:  # the shared rule of agentsim.sim.streaming, as the DES applies it
            hit, cut = self._interrupt(node, tier, ix, tl, active)
            tl = cut_array(tl, hit, cut)
            out = np.where(hit, cut.output, out)
            self.interrupted[nid][sl] = hit
        t_mark = tl.end if node.interrupt is None else np.where(hit, cut.at, tl.end)
        if pipe is not None:
            go = None if node.interrupt is None else (hit, cut.at)
            t_go, p_stalled = self._pipeline_start(pipe, node, tier, ix, planned, active, go)
            self.pipe_state[pipe.id] = (*pre, t0, t_go, ttft, p_stalled)
        if sd is not None:
            st.acc[STALL] = st.acc[STALL] + np.where(active, tl.stall, 0.0)
        st.ctx.mark(tier.index, inp, t_mark, active, on)
        made = MadeCall(nid, sl, on, active, tokens, out, reas)
        if self.totals is not None:
            self._total(made, tl, st.ctx.cfg.cache)
        else:
            self._record(made, tl, tier)
        if on:
            st.t = tl.end
            st.acc[TTFT] = st.acc[TTFT] + ttft
            st.acc[DEC] = st.acc[DEC] + tl.decode
        else:
            st.t = np.where(active, tl.end, t0)
            st.acc[TTFT] = np.where(active, st.acc[TTFT] + ttft, st.acc[TTFT])
            st.acc[DEC] = np.where(active, st.acc[DEC] + tl.decode, st.acc[DEC])
        st.ctx.add(add_ints(i_new, out) if self.totals is not None else i_new + out, active, on)

    def _total(self, made: MadeCall, tl, cached: bool) -> None:
        """Summary-only: the call's cost and tokens into the per-run totals (and its status and TTFT, when sampled)."""
        # with a cache, write = inp - read (VecCtx.begin_call): the uncached count is 0 by construction
        self.totals.add(made, 0 if cached else None)
        r = self.calls.get(made.nid)
        sl, on, active = made.sl, made.on, made.active
        if r is not None:
            r["status"][sl] = DONE if on else np.where(active, DONE, NOT_MADE)
            r["ttft"][sl] = tl.ttft if on else np.where(active, tl.ttft, np.nan)
            if "tps" in r:  # a speed that depends on the context size: the one the call ran at
                r["tps"][sl] = tl.tps if on else np.where(active, tl.tps, np.nan)

    def _record(self, made: MadeCall, tl, tier) -> None:
        """The call's row of every run at ``made.sl`` in its tensors (not made where not ``made.active``)."""
        inp, read, write, w1h = made.tokens
        sl, on, active = made.sl, made.on, made.active
        fields = (
            ("t_submit", tl.send),
            ("t_start", tl.send),
            ("t_first", tl.first_token),
            ("t_end", tl.end),
            ("ttft", tl.ttft),
            ("input", inp),
            ("cache_read", read),
            ("cache_write", write),
            ("cache_write_1h", w1h),
            ("output", made.output),
            ("reasoning", made.reasoning),
        )
        r = self.calls[made.nid]
        r["tier"][sl] = tier.index
        if on:
            r["status"][sl] = DONE
            for f, x in fields:
                r[f][sl] = x
        else:
            r["status"][sl] = np.where(active, DONE, NOT_MADE)
            for f, x in fields:
                r[f][sl] = np.where(active, x, np.nan if r[f].dtype.kind == "f" else 0)

    def _stream_slots(self, node, tier, ix: tuple, tl, active):
        """Token timelines (agentsim.sim.streaming.streams) of the active calls at ``ix``, one instance slot at a time.

        Yields ``(idx, slot, sb)``; ``idx`` indexes arrays shaped like ``tl.send``.
        """
        shape = tl.send.shape
        dims = self.block.shape(node.scope)
        slots = np.arange(max(1, int(np.prod(dims, dtype=np.int64)))).reshape(dims)[tuple(ix)]
        sd = stall_draws(self.plan, self.block, node, tier.index)

        def full(x):
            return np.broadcast_to(x, shape)

        stall = np.zeros(shape) if tl.stall is None else tl.stall
        t0f, ttftf, tpsf, outf, reasf, stallf, actf = map(
            full, (tl.send, tl.ttft, tl.tps, tl.output, tl.reasoning, stall, active)
        )
        for pos in np.ndindex(np.shape(slots)):
            flat = int(np.asarray(slots)[pos])
            sub = (slice(None), *pos)
            active_runs = np.nonzero(actf[sub])[0]
            if not active_runs.size:
                continue
            # in batches of calls (stream_draws.batch_runs: every rule is per call, the same bits)
            step = batch_runs(int(outf[sub][active_runs].max()))
            for lo in range(0, len(active_runs), step):
                runs = active_runs[lo : lo + step]
                st_u = np.zeros(len(runs)) if sd is None else slot_values(sd[1], self.block, node, runs, flat)
                one = timeline(
                    t0f[sub][runs],
                    ttftf[sub][runs],
                    outf[sub][runs].astype(np.int64),
                    reasf[sub][runs],
                    tpsf[sub][runs],
                    stallf[sub][runs],
                )
                slot = CallSlot(self.block, node, flat, runs)
                sb = streams(tier, slot, one, st_u, cache=True)
                yield (runs, *pos), slot, sb

    def _interrupt(self, node, tier, ix: tuple, tl, active) -> tuple[np.ndarray, Cut]:
        """Where every active call instance at ``ix`` is interrupted: ``(hit, Cut)`` (agentsim.sim.streaming rules)."""
        shape = tl.send.shape
        hit = np.zeros(shape, dtype=bool)
        t_cut = np.full(shape, np.inf)
        billed = np.zeros(shape, dtype=np.int64)
        stalled = np.zeros(shape)
        for idx, slot, sb in self._stream_slots(node, tier, ix, tl, active):
            _drawn, t, h, b = interruption(self.plan, slot, tier, sb)
            hit[idx], t_cut[idx], billed[idx] = h, t, b
            stalled[idx] = np.where(h, stalled_by(sb, t), 0.0)
        return hit, Cut(t_cut, billed, stalled)

    def _pipeline_start(self, pipe, node, tier, ix: tuple, tl, active, cut) -> tuple[np.ndarray, np.ndarray]:
        """When the pipeline after ``node`` starts (``t_go``) and the stall spent by then, as the DES decides.

        ``tl``: the call's planned (uncut) timeline; ``cut``: ``(hit, t)`` where the call is interrupted, or None.
        """
        shape = tl.send.shape
        hit, t_cut = (np.zeros(shape, dtype=bool), np.full(shape, np.inf)) if cut is None else cut
        t_go = np.array(np.broadcast_to(tl.send, shape), dtype=np.float64)
        stalled = np.zeros(shape)
        for idx, slot, sb in self._stream_slots(node, tier, ix, tl, active):
            go = pipe.starts_on(slot, sb, np.where(hit[idx], t_cut[idx], np.inf))
            go = np.maximum(go, sb.send)
            t_go[idx] = go
            stalled[idx] = stalled_by(sb, go)
        return t_go, stalled

    # ------------------------------------------------------------------ races
    def cut(self, branch: Node, ix: tuple, T: np.ndarray, loser: np.ndarray) -> None:
        """Cancel a lost branch at ``T`` where ``loser``: running calls are cut, later ones never happen."""
        if not loser.any():
            return
        depth = len(ix)
        for node in self.members(branch):
            sl = (slice(None), *ix)
            deeper = len(node.scope) - depth
            shape = loser.shape + (1,) * deeper
            m = loser.reshape(shape)
            Tm = np.broadcast_to(T, loser.shape).reshape(shape)
            r = self.calls[node.id] if node.record == "call" else self.spans[node.id]
            status = r["status"][sl]
            t_start, t_end = r["t_start"][sl], r["t_end"][sl]
            m = m & (status != NOT_MADE)
            unfinished = m & ~(t_end <= Tm)
            cancel = unfinished & (t_start < Tm)
            drop = unfinished & ~(t_start < Tm)
            if not (cancel.any() or drop.any()):
                continue
            Tfull = np.broadcast_to(Tm, status.shape)
            if node.record == "call":
                self._cut_call(node, r, sl, Tfull, cancel, drop)
            else:
                r["output"][sl] = np.where(cancel | drop, 0, r["output"][sl])
                r["t_start"][sl] = np.where(drop, np.nan, r["t_start"][sl])
            r["t_end"][sl] = np.where(cancel, Tfull, np.where(drop, np.nan, t_end))
            r["status"][sl] = np.where(cancel, CANCELLED, np.where(drop, NOT_MADE, status))

    def _cut_call(self, node, r: dict, sl: tuple, T: np.ndarray, cancel: np.ndarray, drop: np.ndarray) -> None:
        """A call of a lost branch: billed its input and what it generated by ``T`` (rules.cut_tokens), or dropped."""
        tps = self.speeds[node.id][1][sl]
        cs = self.tier_of[node.id].context_speed
        if cs is not None and cs.tps is not None:  # the speed the call ran at (its context size)
            tps = tps * rules.context_factor_array(r["input"][sl], cs.tps)
        out, reas = r["output"][sl], r["reasoning"][sl]
        vis, rb = rules.cut_tokens_array(T, r["t_first"][sl], tps, out, reas)
        r["output"][sl] = np.where(cancel, vis, np.where(drop, 0, out))
        r["reasoning"][sl] = np.where(cancel, rb, np.where(drop, 0, reas))
        for f in ("input", "cache_read", "cache_write", "cache_write_1h"):
            r[f][sl] = np.where(drop, 0, r[f][sl])
        for f in ("t_submit", "t_start", "t_first", "ttft"):
            r[f][sl] = np.where(drop, np.nan, r[f][sl])


def summary_only_reasons(plan: Plan) -> list[str]:
    """Why a plan needs per-call tensors even for its summary (empty: :func:`run_block_fast` can run it
    ``summary_only``): races cut calls after the fact, and streaming metrics read every call."""
    reasons = list(dict.fromkeys(r for n in plan.nodes if (r := n.summary_only_reason())))
    if plan.has_streaming or plan.has_stalls or any(c.interrupt is not None for c in plan.calls):
        reasons.append("streaming consumers, stalls or interrupts read every call")
    return reasons


def _sample_tensors(shape: tuple[int, ...], fill: bool = True) -> dict[str, np.ndarray]:
    """Status and TTFT of each call (summary-only: what the per-call statistics read)."""
    full = empty_call_tensors(shape, fill)
    return {"status": full["status"], "ttft": full["ttft"]}


def _sample_tensors_tps(shape: tuple[int, ...], fill: bool = True) -> dict[str, np.ndarray]:
    """:func:`_sample_tensors` and each call's output speed (a tier whose speed depends on the context size)."""
    return {**_sample_tensors(shape, fill), "tps": np.full(shape, np.nan) if fill else np.empty(shape)}


def _samples_of(tier):
    """The summary-only tensors a call on ``tier`` keeps: its speed too when it is not the drawn one."""
    cs = tier.context_speed
    return _sample_tensors_tps if cs is not None and cs.tps is not None else _sample_tensors


def run_block_fast(
    plan: Plan, block: Block, variant: int, speeds: dict, *, summary_only: bool = False, samples: bool = True
) -> BlockResult:
    """Evaluate every run of a block in one variant, vectorised.

    ``summary_only`` (a plan without :func:`summary_only_reasons`): no per-call or span tensors; the
    result carries its per-run totals, priced (``totals``, see :mod:`agentsim.sim.totals`),
    and, when ``samples``, each call's ``status``, ``ttft`` and ``tps`` for the per-call statistics.
    """
    from agentsim.sim import slots

    tune_malloc()
    totals = None
    if summary_only:
        totals = RunTotals(plan, block, variant, samples)
    ev = Evaluator(plan, block, variant, speeds, totals)
    n = block.n
    st = State(
        np.zeros(n), [np.zeros(n) for _ in range(slots.count())], VecCtx.fresh(plan.ctx, (n,)), np.ones(n, dtype=bool)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        ev.seq(plan.root, st, ())
    breakdown = {name: st.acc[i] for name, i in slots.slot_names(plan).items()}
    ev.to_c_order()
    res = BlockResult(
        variant=variant,
        block=block,
        wall=st.t,
        breakdown=breakdown,
        calls=ev.calls,
        spans=ev.spans if totals is None else {},
        starts={n.id: ev.spans[n.id]["t_start"] for n in plan.spans if n.keeps_start},
    )
    if totals is not None:
        res.totals = totals.result()
        for nid, t in ev.calls.items():
            if "tps" not in t:  # the drawn speed (a context-dependent one was kept as the calls ran)
                t["tps"] = speeds[nid][1]
    res.interrupted = ev.interrupted
    res.turns = ev.turns
    if ev.alive is not None:
        res.status = np.where(ev.alive, RUN_OK, RUN_FAILED).astype(np.int8)
    return res

"""The fast path: a whole block of runs evaluated at once with NumPy.

Without shared limits, an agent run's timeline is a max-plus expression over
its steps: a chain adds durations, a parallel join takes the k-th smallest end
time. This module evaluates the plan tree once per block, with every quantity an
array over the block's runs (and over ``fanout`` copies, which become an extra
axis). ``repeat`` iterations and ``choose`` options are evaluated in turn under a
boolean *active* mask: an instance that does not happen leaves every state
array unchanged.

A ``fail`` step (outside parallel/fanout branches; plans with one inside run on the DES) clears its
failed runs from an evaluator-wide *alive* mask that every later mask is cut with, so a failed run's
time, cost and context freeze where it failed.

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

from agentsim.plan.compiler import (
    COUNT,
    FAIL,
    FIRST_AUDIO,
    INPUT,
    LATENCY,
    OUTPUT,
    PICK,
    REASONING,
    CallNode,
    ChooseNode,
    ContextCfg,
    FailNode,
    FanoutNode,
    Node,
    ParNode,
    PipelineNode,
    Plan,
    RepeatNode,
    SeqNode,
    SubagentNode,
    ToolNode,
    WaitNode,
)
from agentsim.plan.memory import tune_malloc
from agentsim.plan.sampling import Block, constant_view
from agentsim.sim import rules
from agentsim.sim.context import ONE_HOUR
from agentsim.sim.records import (
    BREAKDOWN,
    CANCELLED,
    DONE,
    NOT_MADE,
    RUN_FAILED,
    RUN_OK,
    BlockResult,
    clear,
    empty_call_tensors,
    empty_span_tensors,
)
from agentsim.sim.streaming import interruption, pipeline_offset, stall_draws, stalled_by, streams
from agentsim.sim.totals import RunTotals, add_ints, lean

__all__ = ["VecCtx", "run_block_fast", "summary_only_reasons"]

TTFT, DEC, TOOL, WAIT, STALL = rules.TTFT, rules.DEC, rules.TOOL, rules.WAIT, rules.STALL  # breakdown slots
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


class _State:
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
    never a value; :meth:`_Evaluator.to_c_order` copies them to C order at the end, which is cheaper
    than the strided writes and keeps readers (pricing, totals: 4x slower on transposed arrays) fast.
    """
    dims = block.shape(scope)
    rep = [i for i, m in enumerate(scope) if isinstance(plan.nodes[m], RepeatNode)]
    if not rep:
        return make((block.n, *dims), fill=False)
    rest = [i for i in range(len(scope)) if i not in rep]
    memory = [1 + i for i in rep] + [0] + [1 + i for i in rest]  # logical axes in memory order
    full = (block.n, *dims)
    perm = [memory.index(a) for a in range(len(full))]
    return {k: a.transpose(perm) for k, a in make(tuple(full[a] for a in memory), fill=False).items()}


class _Evaluator:
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
            self.spans = {
                s.id: _tensors(empty_span_tensors, plan, block, s.scope)
                for s in plan.nodes
                if isinstance(s, ToolNode | WaitNode)
            }
        else:  # summary-only: each call's status and TTFT for the per-call statistics, when asked for
            self.calls = (
                {c.id: _tensors(_sample_tensors, plan, block, c.scope) for c in plan.calls} if totals.samples else {}
            )
            self.spans = {}
        self._members: dict[int, list[Node]] = {}
        # The last step of the agent (or of a subagent, whose context ends with it): nothing reads the context
        # after it, so a parallel or fan-out there need not merge its branches' contexts.
        bodies = (plan.root, *(n.body for n in plan.nodes if isinstance(n, SubagentNode)))
        self.last_steps = {b.steps[-1].id for b in bodies if b is not None and b.steps}
        self.pipe_after = {n.call.id: n for n in plan.nodes if isinstance(n, PipelineNode) and n.call is not None}
        self.pipe_state: dict[int, tuple] = {}
        self.interrupted = {
            c.id: np.zeros((block.n, *block.shape(c.scope)), dtype=bool) for c in plan.calls if c.interrupt is not None
        }

    # ------------------------------------------------------------------ helpers
    def to_c_order(self) -> None:
        """Hand the tensors on in C order, as the DES's are (one copy each; see :func:`_tensors`)."""
        for tensors in (*self.calls.values(), *self.spans.values()):
            for f, a in tensors.items():
                tensors[f] = np.ascontiguousarray(a)

    def members(self, node: Node) -> list[Node]:
        """Call, tool and wait nodes inside ``node`` (for cancelling a lost branch)."""
        if node.id not in self._members:
            out = []
            stack = [node]
            while stack:
                x = stack.pop()
                if isinstance(x, CallNode | ToolNode | WaitNode):
                    out.append(x)
                stack.extend(x.children())
            self._members[node.id] = out
        return self._members[node.id]

    # ------------------------------------------------------------------ steps
    def seq(self, node: SeqNode, st: _State, ix: tuple):
        dispatch = _DISPATCH
        for child in node.steps:
            dispatch[type(child)](self, child, st, ix)

    def call(self, node: CallNode, st: _State, ix: tuple):
        nid, V = node.id, self.V
        sl = (slice(None), *ix)
        tier = self.tier_of[nid]
        i_new = V[(nid, INPUT)][sl]
        out = V[(nid, OUTPUT)][sl]
        reas = V[(nid, REASONING)][sl]
        ttft0 = self.speeds[nid][0][sl]
        tps = self.speeds[nid][1][sl]
        t0, active = st.t, st.active
        on = bool(active.all())
        pipe = self.pipe_after.get(nid)
        if pipe is not None:  # the context and critical path before the call, for the pipeline's fork
            cfg = st.ctx.cfg
            pre_ctx = st.ctx if (not cfg.grows and not cfg.cache) else st.ctx.fork()
            pre_acc = list(st.acc)
        ttl = tier.ttl_s if tier.ttl_s is not None else st.ctx.cfg.ttl_s
        inp, read, write, w1h = st.ctx.begin_call(tier.index, ttl, i_new, t0)
        # constants (broadcast views) are combined once, not per element: the same IEEE operations
        if st.ctx.cfg.cache:  # write = inp - read (begin_call): the uncached input, already computed
            ttft = rules.first_token(ttft0, lean(write), 0, tier.prefill_tps)
        else:
            ttft = rules.first_token(ttft0, lean(inp), lean(read), tier.prefill_tps)
        dec = rules.decode(lean(out), lean(reas), tps)
        sd = stall_draws(self.plan, self.block, node, tier.index)
        stall = None if sd is None else sd[0][sl]
        t_end = t0 + rules.duration(ttft, dec, stall)
        t_mark = t_end
        hit = t_cut = None
        if pipe is not None or node.interrupt is not None:
            out_planned = out
            stall_now = np.zeros(t0.shape) if sd is None else np.broadcast_to(stall, t0.shape)
        if node.interrupt is not None:  # the shared rule of agentsim.sim.streaming, as the DES applies it
            hit, t_cut, billed, stalled = self._interrupt(node, tier, ix, t0, ttft, tps, out, reas, stall_now, active)
            T = t0 + (t_cut - t0)
            t_end = np.where(hit, T, t_end)
            t_mark = np.where(hit, t_cut, t_end)
            dec = np.where(hit, rules.cut_decode(T, t0, ttft, stalled), dec)
            out = np.where(hit, billed, out)
            if sd is not None:
                stall = np.where(hit, stalled, stall)
            self.interrupted[nid][sl] = hit
        if pipe is not None:
            if hit is None:
                hit, t_cut = np.zeros(t0.shape, dtype=bool), np.full(t0.shape, np.inf)
            t_go, p_stalled = self._pipeline_start(
                pipe, node, tier, ix, t0, ttft, tps, out_planned, reas, stall_now, active, hit, t_cut
            )
            self.pipe_state[pipe.id] = (pre_ctx, pre_acc, t0, t_go, ttft, p_stalled)
        if sd is not None:
            st.acc[STALL] = st.acc[STALL] + np.where(active, stall, 0.0)
        st.ctx.mark(tier.index, inp, t_mark, active, on)
        if self.totals is not None:
            # with a cache, write = inp - read (VecCtx.begin_call): the uncached count is 0 by construction
            uncached = 0 if st.ctx.cfg.cache else None
            self.totals.add(nid, sl, on, active, inp, read, write, w1h, out, reas, uncached)
            r = self.calls.get(nid)
            if r is not None:
                r["status"][sl] = DONE if on else np.where(active, DONE, NOT_MADE)
                r["ttft"][sl] = ttft if on else np.where(active, ttft, np.nan)
            if on:
                st.t = t_end
                st.acc[TTFT] = st.acc[TTFT] + ttft
                st.acc[DEC] = st.acc[DEC] + dec
            else:
                st.t = np.where(active, t_end, t0)
                st.acc[TTFT] = np.where(active, st.acc[TTFT] + ttft, st.acc[TTFT])
                st.acc[DEC] = np.where(active, st.acc[DEC] + dec, st.acc[DEC])
            st.ctx.add(add_ints(i_new, out), active, on)
            return
        fields = (
            ("t_submit", t0),
            ("t_start", t0),
            ("t_first", t0 + ttft),
            ("t_end", t_end),
            ("ttft", ttft),
            ("input", inp),
            ("cache_read", read),
            ("cache_write", write),
            ("cache_write_1h", w1h),
            ("output", out),
            ("reasoning", reas),
        )
        r = self.calls[nid]
        r["tier"][sl] = tier.index
        if on:
            r["status"][sl] = DONE
            for f, x in fields:
                r[f][sl] = x
            st.t = t_end
            st.acc[TTFT] = st.acc[TTFT] + ttft
            st.acc[DEC] = st.acc[DEC] + dec
        else:
            r["status"][sl] = np.where(active, DONE, NOT_MADE)
            for f, x in fields:
                r[f][sl] = np.where(active, x, np.nan if r[f].dtype.kind == "f" else 0)
            st.t = np.where(active, t_end, t0)
            st.acc[TTFT] = np.where(active, st.acc[TTFT] + ttft, st.acc[TTFT])
            st.acc[DEC] = np.where(active, st.acc[DEC] + dec, st.acc[DEC])
        st.ctx.add(i_new + out, active, on)

    def _stream_slots(self, node, tier, ix, t0, ttft, tps, out, reas, stall, active):
        """Token timelines (agentsim.sim.streaming.streams) of the active calls at ``ix``, one instance slot at a time.

        Yields ``(idx, flat, runs, sb, stall, stall_u, first_audio)``; ``idx`` indexes arrays shaped like ``t0``.
        """
        shape = t0.shape
        dims = self.block.shape(node.scope)
        slots = np.arange(max(1, int(np.prod(dims, dtype=np.int64)))).reshape(dims)[tuple(ix)]
        sd = stall_draws(self.plan, self.block, node, tier.index)
        fa_all = self.V.get((node.id, FIRST_AUDIO))
        n = self.block.n

        def full(x):
            return np.broadcast_to(x, shape)

        t0f, ttftf, tpsf, outf, reasf, stallf, actf = map(full, (t0, ttft, tps, out, reas, stall, active))
        for pos in np.ndindex(np.shape(slots)):
            flat = int(np.asarray(slots)[pos])
            sub = (slice(None), *pos)
            runs = np.nonzero(actf[sub])[0]
            if not runs.size:
                continue
            send, tt, tp = t0f[sub][runs], ttftf[sub][runs], tpsf[sub][runs]
            N, R, st_s = outf[sub][runs].astype(np.int64), reasf[sub][runs], stallf[sub][runs]
            st_u = np.zeros(len(runs))
            if sd is not None:
                st_u = np.broadcast_to(sd[1], (n, *dims)).reshape(n, -1)[runs, flat]
            end = send + rules.duration(tt, rules.decode(N, R, tp), st_s)
            a1 = rules.first_visible(send, tt, R, tp)
            sb = streams(tier, self.block, node, flat, runs, send, a1, end, N, st_s, st_u, cache=True)
            fa = None if fa_all is None else np.broadcast_to(fa_all, (n, *dims)).reshape(n, -1)[runs, flat]
            yield (runs, *pos), flat, runs, sb, st_s, st_u, fa

    def _interrupt(self, node, tier, ix, t0, ttft, tps, out, reas, stall, active):
        """(hit, t, billed, stalled) of every active call instance at ``ix`` (agentsim.sim.streaming rules)."""
        shape = t0.shape
        hit = np.zeros(shape, dtype=bool)
        t_cut = np.full(shape, np.inf)
        billed = np.zeros(shape, dtype=np.int64)
        stalled = np.zeros(shape)
        for idx, flat, runs, sb, st_s, st_u, fa in self._stream_slots(
            node, tier, ix, t0, ttft, tps, out, reas, stall, active
        ):
            h, t, b = interruption(self.plan, self.block, node, tier, flat, runs, sb, fa)
            hit[idx], t_cut[idx], billed[idx] = h, t, b
            stalled[idx] = np.where(h, stalled_by(sb, st_s, st_u, t), 0.0)
        return hit, t_cut, billed, stalled

    def _pipeline_start(self, pipe, node, tier, ix, t0, ttft, tps, out, reas, stall, active, hit, t_cut):
        """When the pipeline after ``node`` starts (``t_go``) and the stall spent by then, as the DES decides."""
        shape = t0.shape
        t_go = np.array(np.broadcast_to(t0, shape), dtype=np.float64)
        stalled = np.zeros(shape)
        for idx, flat, runs, sb, st_s, st_u, _fa in self._stream_slots(
            node, tier, ix, t0, ttft, tps, out, reas, stall, active
        ):
            go = pipeline_offset(pipe, self.block, flat, runs, sb, np.where(hit[idx], t_cut[idx], np.inf))
            go = np.maximum(go, sb.send)
            t_go[idx] = go
            stalled[idx] = stalled_by(sb, st_s, st_u, go)
        return t_go, stalled

    def pipeline(self, node: PipelineNode, st: _State, ix: tuple):
        """The pipeline after a call (agentsim.sim.engine._Runner.pipelined, vectorised): a fork, then a join."""
        pre_ctx, pre_acc, t0, t_go, ttft, stalled = self.pipe_state.pop(node.id)
        active = st.active
        acc = list(pre_acc)
        first, dec = rules.lead_in(t0, t_go, ttft, stalled)
        acc[TTFT] = acc[TTFT] + first
        acc[DEC] = acc[DEC] + dec
        acc[STALL] = acc[STALL] + stalled
        cfg = st.ctx.cfg
        static = not cfg.grows and not cfg.cache
        pst = _State(t0 + (t_go - t0), acc, pre_ctx if static else pre_ctx.fork(), active)
        self.seq(node.body, pst, ix)
        later = rules.critical_all_array(np.stack([st.t, pst.t], axis=-1)) == 1  # the call, then the pipeline
        st.t = np.where(active, np.where(later, pst.t, st.t), st.t)
        st.acc = [np.where(active & later, p, c) for p, c in zip(pst.acc, st.acc, strict=True)]
        if not static:  # the call's additions, then the pipeline's (rows not running this are unchanged in both)
            pre_ctx.join([st.ctx, pst.ctx], [np.ones(st.t.shape, dtype=bool)] * 2)
            st.ctx = pre_ctx

    def span(self, node, st: _State, ix: tuple):
        sl = (slice(None), *ix)
        lat = self.V[(node.id, LATENCY)][sl]
        is_tool = isinstance(node, ToolNode)
        out = self.V[(node.id, OUTPUT)][sl] if is_tool else 0
        t0, active = st.t, st.active
        on = bool(active.all())
        t_end = t0 + lat
        r = self.spans.get(node.id)
        slot = TOOL if is_tool else WAIT
        if r is None:  # summary-only: no span tensors
            if on:
                st.t = t_end
                st.acc[slot] = st.acc[slot] + lat
            else:
                st.t = np.where(active, t_end, t0)
                st.acc[slot] = np.where(active, st.acc[slot] + lat, st.acc[slot])
        elif on:
            r["status"][sl] = DONE
            r["t_start"][sl] = t0
            r["t_end"][sl] = t_end
            r["output"][sl] = out
            st.t = t_end
            st.acc[slot] = st.acc[slot] + lat
        else:
            r["status"][sl] = np.where(active, DONE, NOT_MADE)
            r["t_start"][sl] = np.where(active, t0, np.nan)
            r["t_end"][sl] = np.where(active, t_end, np.nan)
            r["output"][sl] = np.where(active, out, 0)
            st.t = np.where(active, t_end, t0)
            st.acc[slot] = np.where(active, st.acc[slot] + lat, st.acc[slot])
        if is_tool:
            st.ctx.add(out, active, on)

    def repeat(self, node: RepeatNode, st: _State, ix: tuple):
        count = self.V[(node.id, COUNT)][(slice(None), *ix)]
        outer = st.active
        dim = self.block.dims[node.id]
        for i in range(dim):
            act = self.live(outer & (count > i))
            if not act.any():
                # no run does iteration i or later: mark those instances "not made"
                rest = (slice(None), *ix, slice(i, dim))
                for member in self.members(node.body):
                    tensors = (self.calls if isinstance(member, CallNode) else self.spans).get(member.id)
                    if tensors is not None:  # (summary-only: only the sampled calls have tensors)
                        clear(tensors, rest)
                break
            st.active = act
            self.seq(node.body, st, (*ix, i))
        st.active = self.live(outer)

    def choose(self, node: ChooseNode, st: _State, ix: tuple):
        pick = self.V[(node.id, PICK)][(slice(None), *ix)]
        outer = st.active
        for o, option in enumerate(node.options):
            st.active = outer & (pick == o)
            self.seq(option, st, ix)  # options are exclusive: masked updates never overlap
        st.active = self.live(outer)

    def subagent(self, node: SubagentNode, st: _State, ix: tuple):
        sub = _State(st.t, st.acc, VecCtx.fresh(node.ctx, st.t.shape), st.active)
        self.seq(node.body, sub, ix)
        st.t, st.acc = sub.t, sub.acc
        st.active = self.live(st.active)
        st.ctx.add(self.V[(node.id, OUTPUT)][(slice(None), *ix)], st.active)

    def live(self, mask: np.ndarray) -> np.ndarray:
        """``mask`` without the runs that have failed at a fail step (``mask`` may have fanout copy axes)."""
        if self.alive is None:
            return mask
        return mask & self.alive.reshape(self.alive.shape + (1,) * (mask.ndim - 1))

    def fail(self, node: FailNode, st: _State, ix: tuple):
        """Runs whose draw is below this variant's p fail here: they stop, their time and cost freeze.

        Fail steps inside parallel/fanout branches never get here (the DES runs those plans), so
        every array is one value per run.
        """
        u = self.V[(node.id, FAIL)][(slice(None), *ix)]
        dead = st.active & (u < node.p[self.variant])
        if dead.any():
            self.alive = self.alive & ~dead
            st.active = st.active & ~dead

    def par(self, node: ParNode, st: _State, ix: tuple):
        nb = len(node.branches)
        kk = nb if node.k is None else min(node.k, nb)
        t_fork, active = st.t, st.active
        states = [_State(t_fork, list(st.acc), st.ctx.fork(), active) for _ in range(nb)]
        for b, branch in enumerate(node.branches):
            self.seq(branch, states[b], ix)
        ends = np.stack([s.t for s in states], axis=-1)
        if kk == nb:  # join all
            critical = rules.critical_all_array(ends)[..., None]
            winner = np.ones(ends.shape, dtype=bool)
        else:
            critical, winner = rules.race_array(ends, kk)
        T = np.take_along_axis(ends, critical, axis=-1)[..., 0]
        st.t = np.where(active, T, t_fork)
        for slot in range(len(st.acc)):
            if all(s.acc[slot] is st.acc[slot] for s in states):
                continue  # no branch changed it: every branch, the critical one too, holds the fork's value
            stacked = np.stack([s.acc[slot] for s in states], axis=-1)
            st.acc[slot] = np.take_along_axis(stacked, critical, axis=-1)[..., 0]
        if node.id not in self.last_steps:
            st.ctx.join([s.ctx for s in states], [winner[..., b] | ~active for b in range(nb)])
        if kk < nb:
            for b, branch in enumerate(node.branches):
                self.cut(branch, ix, T, active & ~winner[..., b])

    def fanout(self, node: FanoutNode, st: _State, ix: tuple):
        N = self.block.dims[node.id]
        n = self.V[(node.id, COUNT)][(slice(None), *ix)]
        t_fork, active = st.t, st.active
        if N == 0:
            return
        shape = (*t_fork.shape, N)
        # `full`: every run makes all N copies (the common case of a constant n) -- no masks needed
        full = bool(active.all()) and int(n.min()) == N
        act_c = np.ones(shape, dtype=bool) if full else active[..., None] & (np.arange(N) < n[..., None])
        sub = _State(
            np.broadcast_to(t_fork[..., None], shape),  # read-only views: the body replaces, never writes
            [np.broadcast_to(a[..., None], shape) for a in st.acc],
            st.ctx.expand(N),
            act_c,
        )
        forked = list(sub.acc)  # a slot the body never replaced holds the fork's value in every copy
        self.seq(node.body, sub, (*ix, slice(None)))
        kk = n if node.join == "all" else np.minimum(n, node.join)
        has = active & (kk > 0)
        if node.join == "all":
            ends = sub.t if full else np.where(act_c, sub.t, -np.inf)
            critical = rules.critical_all_array(ends)[..., None]
            winner = act_c
        else:
            ends = np.where(act_c, sub.t, np.inf)
            critical, winner = rules.race_array(ends, kk)
            winner = act_c & winner
        T_raw = np.take_along_axis(ends, critical, axis=-1)[..., 0]
        st.t = T_raw if full else np.where(has, T_raw, t_fork)
        for slot in range(len(st.acc)):
            if sub.acc[slot] is forked[slot]:
                continue  # whichever copy is critical, its value is the fork's: unchanged
            chosen = np.take_along_axis(sub.acc[slot], critical, axis=-1)[..., 0]
            st.acc[slot] = chosen if full else np.where(has, chosen, st.acc[slot])
        if node.id not in self.last_steps:
            st.ctx.join_copies(sub.ctx, winner | ~act_c)
        if node.join != "all":
            self.cut(node.body, (*ix, slice(None)), st.t[..., None], act_c & ~winner)

    # ------------------------------------------------------------------ races
    def cut(self, branch: Node, ix: tuple, T: np.ndarray, loser: np.ndarray):
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
            if isinstance(node, CallNode):
                r = self.calls[node.id]
            else:
                r = self.spans[node.id]
            status = r["status"][sl]
            t_start, t_end = r["t_start"][sl], r["t_end"][sl]
            m = m & (status != NOT_MADE)
            unfinished = m & ~(t_end <= Tm)
            cancel = unfinished & (t_start < Tm)
            drop = unfinished & ~(t_start < Tm)
            if not (cancel.any() or drop.any()):
                continue
            Tfull = np.broadcast_to(Tm, status.shape)
            if isinstance(node, CallNode):
                tps = self.speeds[node.id][1][sl]
                out, reas = r["output"][sl], r["reasoning"][sl]
                vis, rb = rules.cut_tokens_array(Tfull, r["t_first"][sl], tps, out, reas)
                r["output"][sl] = np.where(cancel, vis, np.where(drop, 0, out))
                r["reasoning"][sl] = np.where(cancel, rb, np.where(drop, 0, reas))
                for f in ("input", "cache_read", "cache_write", "cache_write_1h"):
                    r[f][sl] = np.where(drop, 0, r[f][sl])
                for f in ("t_submit", "t_start", "t_first", "ttft"):
                    r[f][sl] = np.where(drop, np.nan, r[f][sl])
            else:
                r["output"][sl] = np.where(cancel | drop, 0, r["output"][sl])
                r["t_start"][sl] = np.where(drop, np.nan, r["t_start"][sl])
            r["t_end"][sl] = np.where(cancel, Tfull, np.where(drop, np.nan, t_end))
            r["status"][sl] = np.where(cancel, CANCELLED, np.where(drop, NOT_MADE, status))


# Node type -> evaluator method (a class-level table: a per-instance dict of bound methods would make a
# reference cycle that keeps a whole block's tensors alive until the cyclic garbage collector runs).
_DISPATCH = {
    CallNode: _Evaluator.call,
    ToolNode: _Evaluator.span,
    WaitNode: _Evaluator.span,
    SeqNode: _Evaluator.seq,
    ParNode: _Evaluator.par,
    FanoutNode: _Evaluator.fanout,
    RepeatNode: _Evaluator.repeat,
    ChooseNode: _Evaluator.choose,
    SubagentNode: _Evaluator.subagent,
    PipelineNode: _Evaluator.pipeline,
    FailNode: _Evaluator.fail,
}


def summary_only_reasons(plan: Plan) -> list[str]:
    """Why a plan needs per-call tensors even for its summary (empty: :func:`run_block_fast` can run it
    ``summary_only``): races cut calls after the fact, and streaming metrics read every call."""
    reasons = []
    if any(isinstance(n, ParNode) and n.k is not None and n.k < len(n.branches) for n in plan.nodes) or any(
        isinstance(n, FanoutNode) and n.join != "all" for n in plan.nodes
    ):
        reasons.append("a race (join: any / k) cancels calls")
    if plan.has_streaming or plan.has_stalls or any(c.interrupt is not None for c in plan.calls):
        reasons.append("streaming consumers, stalls or interrupts read every call")
    if any(isinstance(n, PipelineNode) for n in plan.nodes):
        reasons.append("a pipeline starts from a call's token stream")
    return reasons


def _sample_tensors(shape: tuple[int, ...], fill: bool = True) -> dict[str, np.ndarray]:
    """Status and TTFT of each call (summary-only: what the per-call statistics read)."""
    full = empty_call_tensors(shape, fill)
    return {"status": full["status"], "ttft": full["ttft"]}


def run_block_fast(
    plan: Plan, block: Block, variant: int, speeds: dict, *, summary_only: bool = False, samples: bool = True
) -> BlockResult:
    """Evaluate every run of a block in one variant, vectorised.

    ``summary_only`` (a plan without :func:`summary_only_reasons`): no per-call or span tensors; the
    result carries its per-run totals, priced (``extra["totals"]``, see :mod:`agentsim.sim.totals`),
    and, when ``samples``, each call's ``status``, ``ttft`` and ``tps`` for the per-call statistics.
    """
    tune_malloc()
    totals = None
    if summary_only:
        totals = RunTotals(plan, block, variant, samples)
    ev = _Evaluator(plan, block, variant, speeds, totals)
    n = block.n
    st = _State(
        np.zeros(n), [np.zeros(n) for _ in range(rules.N_SLOTS)], VecCtx.fresh(plan.ctx, (n,)), np.ones(n, dtype=bool)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        ev.seq(plan.root, st, ())
    breakdown = {k: st.acc[i] for i, k in enumerate(BREAKDOWN)}
    if plan.has_stalls:
        breakdown["stall"] = st.acc[STALL]
    ev.to_c_order()
    res = BlockResult(
        variant=variant,
        block=block,
        wall=st.t,
        breakdown=breakdown,
        calls=ev.calls,
        spans=ev.spans,
    )
    if totals is not None:
        res.extra["totals"] = totals.result()
        for nid, t in ev.calls.items():
            t["tps"] = speeds[nid][1]
    if ev.interrupted:
        res.extra["interrupted"] = ev.interrupted
    if ev.alive is not None:
        res.extra["run_status"] = np.where(ev.alive, RUN_OK, RUN_FAILED).astype(np.int8)
    return res

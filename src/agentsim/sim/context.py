"""The conversation context of an agent run, and which of its tokens the prompt cache holds.

Every call sends the whole context (the system prompt, then everything that
joined it so far) followed by the call's own new ``input``. With ``grows: true``
the call's new input and its visible output join the context when it finishes
(reasoning does not), and so does each tool's output.

Prompt caching (``cache: true``) works on *prefixes*. After a call, the provider
holds a cache entry for the prefix it sent that later calls of the same context
will share: the call's whole input when the context grows, else the context
alone (the system prompt). A later call reads from the cache the longest live
entry of its context — by default from its own (model, speed tier) entries, as
providers keep one cache per model and tier (switching model or fast/standard
starts a new cache); with ``cache: {scope: context}`` whatever the previous call
of the same context sent, whichever model made it (DESIGN.md §4 read literally) —
and writes the rest. The first call writes all of its input. An
entry idle for longer than its TTL (5 minutes by default, or 1 hour) is gone;
a call that reads or writes it refreshes it: idle time counts from the call's end
(:meth:`Ctx.mark`), and a call starting ``now`` sees the entries idle at most the TTL.

With ``compact: {above, to}`` (and ``grows``), tokens that take the context past ``above`` make it
``to`` tokens long (an agent's automatic compaction: the history summarised), and the cache holds
nothing of the new context: the next call writes it all.

Parallel branches fork the context: each sees it as it was at the fork. At the
join, the branches that count (all of them, or the first ``k`` finishers) append
their additions in branch order. A branch's cache entries survive the join in
full when everything before them is unchanged (no earlier branch added tokens);
otherwise only the part shared with the fork point still matches. The cache entries fork
with the context: until the join a branch does not see what its siblings write or
refresh (a provider would; tests/test_audit_core.py marks the two cases xfail).

:class:`Ctx` is the per-run (scalar) form used by the DES. The fast path applies
the same rules to whole arrays of runs (:mod:`agentsim.sim.fastpath`).
"""

from __future__ import annotations

from agentsim.plan.nodes import ContextCfg

__all__ = ["ONE_HOUR", "Ctx"]

ONE_HOUR = 3600.0


class Ctx:
    __slots__ = ("L", "cfg", "entries")

    def __init__(self, cfg: ContextCfg, L: int | None = None, entries: dict | None = None):
        self.cfg = cfg
        self.L = cfg.system if L is None else L  # tokens in the context now
        self.entries: dict[int, list[tuple[int, float]]] = {} if entries is None else entries

    def fork(self) -> Ctx:
        # Entry lists are replaced, never mutated, so a shallow copy is a true copy.
        return Ctx(self.cfg, self.L, dict(self.entries))

    def begin_call(self, key: int, ttl: float, new_input: int, now: float) -> tuple[int, int, int, int]:
        """Tokens of a call starting ``now``: (input, cache_read, cache_write, cache_write_1h).

        Changes nothing: once the call's end is known, :meth:`mark` records the entry it leaves.
        """
        inp = self.L + new_input
        if not self.cfg.cache:
            return inp, 0, 0, 0
        if not self.cfg.per_model:
            key = 0  # one cache per context: what the previous call of this context sent (DESIGN.md §4)
        read = 0
        for s, t in self.entries.get(key, ()):
            if now - t <= ttl and s > read:
                read = s
        write = inp - read
        return inp, read, write, (write if ttl == ONE_HOUR else 0)

    def peek(self, key: int, ttl: float, new_input: int, now: float) -> tuple[int, int]:
        """(input, cache_read) a call would have if it started ``now``."""
        inp, read, _, _ = self.begin_call(key, ttl, new_input, now)
        return inp, read

    def mark(self, key: int, inp: int, t_end: float) -> None:
        """The entry a call of ``inp`` input tokens leaves, last used when it ends at ``t_end``."""
        if self.cfg.cache:
            self.entries[key if self.cfg.per_model else 0] = [(inp if self.cfg.grows else self.L, t_end)]

    def add(self, tokens: int) -> None:
        if self.cfg.grows:
            self.L += tokens
            if self.cfg.compact_above is not None and self.cfg.compact_above < self.L:
                self.compact()

    def compact(self) -> None:
        """The context is compacted: a summary of ``compact_to`` tokens, of which the cache holds nothing."""
        self.L = self.cfg.compact_to
        self.entries = {}

    def join(self, winners: list[Ctx]) -> None:
        """Merge the counted branches (in branch order) back into this, the context at the fork."""
        L0 = self.L
        offset = 0
        merged: dict[int, list[tuple[int, float]]] = {}
        for b in winners:
            for key, lst in b.entries.items():
                cand = merged.setdefault(key, [])
                for s, t in lst:
                    cand.append((s if (s <= L0 or offset == 0) else L0, t))
            offset += b.L - L0
        self.L = L0 + offset
        for key, cand in merged.items():
            if len(cand) > 1:
                # Keep only entries not dominated by a longer-and-fresher one (same look-up results).
                cand.sort(key=lambda e: (-e[0], -e[1]))
                kept, best_t = [], None
                for s, t in cand:
                    if best_t is None or t > best_t:
                        kept.append((s, t))
                        best_t = t
                merged[key] = kept
        if winners:
            self.entries = merged

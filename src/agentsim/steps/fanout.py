"""``fanout: {n, steps, join}``: ``n`` copies of the steps run at the same time, joined like ``parallel``.

``n`` is drawn per instance (rounded); the copies are the instances of an axis the fan-out gives its
body (``axis = AT_ONCE``), the block's largest ``n`` wide. Each copy starts with the context of the
fork; at the join the copies that count append their additions in copy order. The join is ``all``,
``any`` or ``{k: N}`` (a ``k`` above the copies drawn waits for all of them). The fast path
evaluates every copy at once on the extra axis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from agentsim.model.base import StrictModel
from agentsim.model.distributions import Dist
from agentsim.model.domain import Of
from agentsim.model.registry import StepKind, register_step
from agentsim.model.steps import Join, KJoin, Step, StepModel, in_order, join_k
from agentsim.plan.distributions import Sampler
from agentsim.plan.nodes import AT_ONCE, COUNT, Node, SeqNode, count_bounds_of

__all__ = ["FanoutNode", "FanoutSpec", "FanoutStep"]


class FanoutSpec(StrictModel):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    n: Annotated[Dist, Of("count")] = Field(description="Number of parallel copies (rounded).")
    steps: list[Step] = Field(min_length=1, description="The steps each copy runs, in order.")
    join: Join = Field("all", description="all, any (the first to finish), or {k: N} (the first N).")


class FanoutStep(StepModel):
    fanout: FanoutSpec


@dataclass(eq=False)
class FanoutNode(Node):
    n: Sampler = None
    body: SeqNode = None
    join: str | int = "all"  # 'all', or k (1 for 'any'), capped at n
    kind = "fanout"
    axis = AT_ONCE
    lanes = True

    def children(self) -> tuple[Node, ...]:
        return (self.body,) if self.body is not None else ()

    def count_bounds(self) -> tuple[float, float]:
        return count_bounds_of(self.n)

    def can_take_time(self, tiers) -> bool:
        return self.n.support[1] >= 0.5 and self.body.can_take_time(tiers)  # counts are rounded

    def mean_time_lower(self, tiers) -> float:
        if self.join == "all" and self.count_bounds()[0] >= 1:
            return self.body.mean_time_lower(tiers)
        return 0.0  # a race, or maybe no copy: no cheap bound

    def summary_only_reason(self) -> str:
        return "a race (join: any / k) cancels calls" if self.join != "all" else ""


def compile_fanout(c, step: FanoutStep, scope, path) -> FanoutNode:
    f = step.fanout
    p = (*path, "fanout")
    node = c.new_node(FanoutNode, f.name or f"fanout{len(c.nodes)}", scope, p)
    node.n = c.sampler(f.n, (*p, "n"), "fanout n")
    c.draw(node, COUNT, scope, node.n, integer=True, counts=True)
    k = join_k(f.join)
    node.join = "all" if k is None else k
    most = node.n.support[1]
    if isinstance(f.join, KJoin) and math.isfinite(most) and 1 <= round(most) < k:
        # as for parallel, whose k cannot exceed its branches
        c.problem(
            (*p, "join", "k"),
            f"join k={k} but there are at most {round(most)} copies (n)",
            f"use a k from 1 to {max(1, round(most))}",
        )
    c.branch_depth += 1
    node.body = c.seq(f.steps, (*scope, node.id), (*p, "steps"))
    c.branch_depth -= 1
    return node


def sequences(step: FanoutStep, here: tuple):
    yield in_order(step.fanout.steps, (*here, "fanout", "steps"))


def des(run, node: FanoutNode, flow, flat: int):
    """A process per copy (or one timeout per copy when the body is one fixed call), then the join."""
    copies = run.instances(node, flow, flat)
    if node.join == "all":
        c = run.one_call.get(node.body.id)
        if c is not None:
            return run.join_calls([(c, slot) for slot in copies], flow)
    k = None if node.join == "all" else node.join
    return run.join([(node.body, slot) for slot in copies], k, flow)


def fast(ev, node: FanoutNode, st, ix: tuple) -> None:
    """Every copy at once on a new last axis; the join takes the critical copy per run."""
    import numpy as np

    from agentsim.sim import rules
    from agentsim.sim.fastpath import State

    N = ev.block.dims[node.id]
    n = ev.counts(node, ix)
    t_fork, active = st.t, st.active
    if N == 0:
        return
    shape = (*t_fork.shape, N)
    # `full`: every run makes all N copies (the common case of a constant n) -- no masks needed
    full = bool(active.all()) and int(n.min()) == N
    act_c = np.ones(shape, dtype=bool) if full else active[..., None] & (np.arange(N) < n[..., None])
    sub = State(
        np.broadcast_to(t_fork[..., None], shape),  # read-only views: the body replaces, never writes
        [np.broadcast_to(a[..., None], shape) for a in st.acc],
        st.ctx.expand(N),
        act_c,
    )
    forked = list(sub.acc)  # a slot the body never replaced holds the fork's value in every copy
    ev.seq(node.body, sub, (*ix, slice(None)))
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
    T_raw = rules.pick_critical(ends, critical)
    st.t = T_raw if full else np.where(has, T_raw, t_fork)
    for slot in range(len(st.acc)):
        if sub.acc[slot] is forked[slot]:
            continue  # whichever copy is critical, its value is the fork's: unchanged
        chosen = rules.pick_critical(sub.acc[slot], critical)
        st.acc[slot] = chosen if full else np.where(has, chosen, st.acc[slot])
    if node.id not in ev.last_steps:
        st.ctx.join_copies(sub.ctx, winner | ~act_c)
    if node.join != "all":
        ev.cut(node.body, (*ix, slice(None)), st.t[..., None], act_c & ~winner)


DOCS = (  # the kind's sections of docs/scenarios.md: (its model, heading, example, where it is written)
    (
        FanoutSpec,
        "Step `fanout`",
        """\
fanout:
  name: search
  n: 8
  steps:
    - call: {name: query, output: 60}
    - tool: {name: web-search, latency: 2.5, output: 3000}
""",
        ("fanout",),
    ),
)


KIND = register_step(
    StepKind(
        "fanout",
        FanoutStep,
        compile_fanout,
        des,
        fast,
        sequences=sequences,
        docs=DOCS,
        units={"FanoutSpec.n": "copies"},
        summary="n copies of its steps at the same time, joined like parallel",
    )
)

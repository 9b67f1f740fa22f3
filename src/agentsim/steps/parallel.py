"""``parallel:``: branches run at the same time, then join -- all of them, the first one (``any``) or the first ``k``.

Written as a list of branches (``parallel: [...]``) or ``{branches: [...], join: all | any | {k: N}}``;
a branch is one step or a list of steps run in order. Each branch starts with the context as it was
at the fork; at the join the branches that count (all, or the ``k`` winners) append their additions
in branch order (:mod:`agentsim.sim.context`). The run carries on with the critical branch's
breakdown (:func:`agentsim.sim.rules.critical_all`, :func:`agentsim.sim.rules.race`): the last to
end (ties: the last in branch order), or the ``k``-th to end in a race, whose losers are cancelled at
that instant (a call already running is billed what it generated).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Discriminator, Field, Tag, field_validator
from pydantic_core import PydanticCustomError

from agentsim.model.base import Problem, StrictModel
from agentsim.model.registry import StepKind, register_step
from agentsim.model.steps import Join, KJoin, Step, StepModel, in_order, join_k
from agentsim.plan.nodes import Node, SeqNode

__all__ = ["Branch", "ParNode", "ParallelSpec", "ParallelStep"]


def _branch_tag(value: Any) -> str:
    return "steps" if isinstance(value, list) else "step"


Branch = Annotated[
    Annotated[Step, Tag("step")] | Annotated[list[Step], Tag("steps")],
    Discriminator(_branch_tag),
]
"""A parallel branch: one step, or a list of steps run in order."""


class ParallelSpec(StrictModel):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    branches: list[Branch] = Field(min_length=1, description="Branches: each one step, or a list of steps in order.")
    join: Join = Field("all", description="all, any (the first to finish), or {k: N} (the first N).")


class ParallelStep(StepModel):
    parallel: list[Branch] | ParallelSpec

    @field_validator("parallel")
    @classmethod
    def _non_empty(cls, v: Any) -> Any:
        if isinstance(v, list) and not v:
            raise PydanticCustomError("empty_parallel", "parallel needs at least one branch", {})
        return v

    @property
    def name(self) -> str | None:
        return None if isinstance(self.parallel, list) else self.parallel.name

    @property
    def branches(self) -> list:
        return self.parallel if isinstance(self.parallel, list) else self.parallel.branches

    @property
    def join(self):
        return "all" if isinstance(self.parallel, list) else self.parallel.join

    @property
    def spec(self) -> ParallelSpec:
        if isinstance(self.parallel, ParallelSpec):
            return self.parallel
        # the branches are valid already (validated as this step's list, non-empty): wrap them without
        # validating them again, which would build ParallelSpec's whole schema a second time (~20 ms)
        return ParallelSpec.model_construct(branches=self.parallel)


@dataclass(eq=False)
class ParNode(Node):
    branches: tuple[SeqNode, ...] = ()
    k: int | None = None  # None: join all
    kind = "parallel"
    lanes = True

    def children(self) -> tuple[Node, ...]:
        return self.branches

    def mean_time_lower(self, tiers) -> float:
        # a race has no cheap bound; join all lasts at least as long as its longest branch
        return 0.0 if self.k is not None else max(b.mean_time_lower(tiers) for b in self.branches)

    def summary_only_reason(self) -> str:
        if self.k is not None and self.k < len(self.branches):
            return "a race (join: any / k) cancels calls"
        return ""


def _base(step: ParallelStep, here: tuple) -> tuple:
    return (*here, "parallel") if isinstance(step.parallel, list) else (*here, "parallel", "branches")


def compile_parallel(c, step: ParallelStep, scope, path) -> ParNode:
    node = c.new_node(ParNode, step.name or f"parallel{len(c.nodes)}", scope, (*path, "parallel"))
    bp = _base(step, path)
    c.branch_depth += 1
    node.branches = tuple(c.branch(b, scope, (*bp, i)) for i, b in enumerate(step.branches))
    c.branch_depth -= 1
    node.k = join_k(step.join)
    return node


def sequences(step: ParallelStep, here: tuple):
    base = _base(step, here)
    for b, branch in enumerate(step.branches):
        if isinstance(branch, list):
            yield in_order(branch, (*base, b))
        else:
            yield [branch], [(*base, b)]


def check(scenario, step: ParallelStep, path: tuple, previous) -> list[Problem]:
    join, n = step.join, len(step.branches)
    if not isinstance(join, str) and join.k > n:
        return [
            Problem(
                (*path, "parallel", "join", "k"),
                f"join k={join.k} but there are only {n} branches",
                f"use a k from 1 to {n}",
            )
        ]
    return []


def des(run, node: ParNode, flow, flat: int):
    """A process per branch (or one timeout per branch that is one fixed call), then the join."""
    one = run.one_call
    if node.k is None and all(b.id in one for b in node.branches):
        return run.join_calls([(one[b.id], flat) for b in node.branches], flow)
    return run.join([(b, flat) for b in node.branches], node.k, flow)


def fast(ev, node: ParNode, st, ix: tuple) -> None:
    """Every branch from the fork's state, then the critical branch per run (and the race's losers cut)."""
    import numpy as np

    from agentsim.sim import rules
    from agentsim.sim.fastpath import State

    nb = len(node.branches)
    kk = nb if node.k is None else min(node.k, nb)
    t_fork, active = st.t, st.active
    states = [State(t_fork, list(st.acc), st.ctx.fork(), active) for _ in range(nb)]
    for b, branch in enumerate(node.branches):
        ev.seq(branch, states[b], ix)
    ends = np.stack([s.t for s in states], axis=-1)
    if kk == nb:  # join all
        critical = rules.critical_all_array(ends)[..., None]
        winner = np.ones(ends.shape, dtype=bool)
    else:
        critical, winner = rules.race_array(ends, kk)
    T = np.take_along_axis(ends, critical, axis=-1)[..., 0]
    st.t = np.where(active, T, t_fork)
    rules.join_breakdown_array(st.acc, [s.acc for s in states], critical)
    if node.id not in ev.last_steps:
        st.ctx.join([s.ctx for s in states], [winner[..., b] | ~active for b in range(nb)])
    if kk < nb:
        for b, branch in enumerate(node.branches):
            ev.cut(branch, ix, T, active & ~winner[..., b])


DOCS = (  # the kind's sections of docs/scenarios.md: (its model, heading, example, where it is written)
    (
        ParallelSpec,
        "Step `parallel`",
        """\
parallel:
  name: reviews
  join: all            # or any, or {k: 2}
  branches:
    - call: {name: review-a, output: 500}
    - [{tool: {name: lint, latency: 3}}, {call: {name: review-b, output: 500}}]
""",
        ("parallel",),
    ),
    (
        KJoin,
        "Join on the first k branches",
        """\
join: {k: 2}
""",
        ("join",),
    ),
)


KIND = register_step(
    StepKind(
        "parallel",
        ParallelStep,
        compile_parallel,
        des,
        fast,
        sequences=sequences,
        check=check,
        docs=DOCS,
        summary="branches at the same time, joined: all of them, the first, or the first k",
    )
)

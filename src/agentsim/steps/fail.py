"""``fail: {name, p}``: the run stops here as a failed run with probability ``p`` (contract v1.1).

``p`` may depend on the model a named call runs on (``{by: act, opus: 0.05, haiku: 0.15}``,
resolved per variant: :mod:`agentsim.plan.by_model`). Each instance draws one uniform ``u`` (purpose
``FAIL``); the run fails where ``u < p[variant]``, so every variant fails the same runs as far as its
``p`` allows (common random numbers). A failed run's time, cost and context stop at the fail step;
summaries describe completed runs and report ``success`` (see :mod:`agentsim.sim.results`).

DES: raises :class:`~agentsim.sim.flow.RunFailed` (inside a parallel branch the other branches are
cancelled as race losers are). Fast path: clears the failed runs from the evaluator's *alive* mask,
which every later mask is cut with. A fail step inside a ``parallel``/``fanout``/``pipeline`` branch
would cancel its sibling branches at a data-dependent instant, which the fast path does not do:
plans with one run on the DES (:meth:`FailNode.des_reason`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from agentsim.model.base import StrictModel
from agentsim.model.distributions import ByModel, ModelProb
from agentsim.model.domain import Of
from agentsim.model.registry import StepKind, register_step
from agentsim.model.steps import StepModel
from agentsim.plan.distributions import uniform
from agentsim.plan.nodes import FAIL, Node
from agentsim.sim.flow import RunFailed

__all__ = ["FailNode", "FailSpec", "FailStep"]


class FailSpec(StrictModel):
    """The run stops here as a failed run with probability ``p`` (contract v1.1)."""

    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    p: Annotated[ModelProb, Of("prob")] = Field(
        description="Probability that the run fails at this step (may depend on a call's model)."
    )


class FailStep(StepModel):
    fail: FailSpec


@dataclass(eq=False)
class FailNode(Node):
    """The run stops here as a failed run with probability ``p[variant]`` (a uniform per instance)."""

    p: tuple[float, ...] = ()  # per variant
    in_branch: bool = False  # inside a parallel, fanout or pipeline branch (the fast path declines these)
    kind = "fail"
    ends_runs = True

    def can_take_time(self, tiers) -> bool:
        return False

    def des_reason(self) -> str:
        if self.in_branch:
            return "a fail step sits inside a parallel, fanout or pipeline branch (it cancels the other branches)"
        return ""


def compile_fail(c, step: FailStep, scope, path) -> FailNode:
    f = step.fail
    p = (*path, "fail")
    node = c.new_node(FailNode, f.name or f"fail{len(c.nodes)}", scope, p)
    node.in_branch = c.branch_depth > 0
    if isinstance(f.p, ByModel):

        def resolve(resolver, node=node, spec=f.p, where=(*p, "p")) -> None:
            values = resolver.values(spec, where)
            node.p = values if values is not None else (0.0,) * resolver.nv

        c.later(resolve)
    else:
        node.p = (float(f.p),) * len(c.variants)
    c.draw(node, FAIL, scope, None, transform=uniform)
    return node


def des(run, node: FailNode, flow, flat: int):
    """Fail the run here with probability p (this variant's): the run stops at this instant."""
    if run.value(node, FAIL, flow.r, flat) < node.p[run.variant]:
        raise RunFailed
    return ()


def fast(ev, node: FailNode, st, ix: tuple) -> None:
    """Runs whose draw is below this variant's p fail here: they stop, their time and cost freeze.

    Fail steps inside parallel/fanout branches never get here (the DES runs those plans), so every
    array is one value per run.
    """
    u = ev.values(node, FAIL, ix)
    dead = st.active & (u < node.p[ev.variant])
    if dead.any():
        ev.alive = ev.alive & ~dead
        st.active = st.active & ~dead


DOCS = (  # the kind's sections of docs/scenarios.md: (its model, heading, example, where it is written)
    (
        FailSpec,
        "Step `fail`",
        """\
fail: {name: wrong-answer, p: {by: act, opus: 0.05, haiku: 0.15}}   # or a plain probability: {p: 0.1}
""",
        ("fail",),
    ),
)


KIND = register_step(
    StepKind(
        "fail",
        FailStep,
        compile_fail,
        des,
        fast,
        docs=DOCS,
        summary="the run stops here as a failed run with probability p",
    )
)

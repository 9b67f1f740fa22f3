"""``subagent: {name, workflow, output}``: run a workflow named under ``workflows:`` with a context of its own.

The workflow's steps are inlined at compile time (a subagent's nodes are the caller's, numbered in
pre-order) and run with a fresh context: the workflow's ``context:`` (default: an empty one). The
subagent's ``output`` tokens (default 0) join the caller's context when it ends; its time is the
caller's time (its steps' breakdown adds to the caller's).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from agentsim.model.base import Problem, StrictModel, suggest
from agentsim.model.distributions import Dist
from agentsim.model.domain import Of
from agentsim.model.registry import StepKind, register_step
from agentsim.model.scenario import ContextSpec
from agentsim.model.steps import StepModel
from agentsim.plan.distributions import Sampler
from agentsim.plan.nodes import MAX_TOKENS, OUTPUT, ContextCfg, Node, SeqNode
from agentsim.sim.context import Ctx
from agentsim.sim.flow import Flow

__all__ = ["SubagentNode", "SubagentSpec", "SubagentStep"]


class SubagentSpec(StrictModel):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    workflow: str = Field(description="A key of the top-level workflows.")
    output: Annotated[Dist, Of("tokens")] = Field(
        0.0, description="Tokens the subagent's answer adds to the caller's context."
    )


class SubagentStep(StepModel):
    subagent: SubagentSpec


@dataclass(eq=False)
class SubagentNode(Node):
    body: SeqNode = None
    ctx: ContextCfg = None
    output: Sampler = None
    kind = "subagent"

    @property
    def own_context(self) -> ContextCfg:
        return self.ctx

    def children(self) -> tuple[Node, ...]:
        return (self.body,) if self.body is not None else ()

    def mean_time_lower(self, tiers) -> float:
        return self.body.mean_time_lower(tiers)


def compile_subagent(c, step: SubagentStep, scope, path) -> SubagentNode:
    s = step.subagent
    p = (*path, "subagent")
    wf = c.sc.workflows[s.workflow]
    node = c.new_node(SubagentNode, s.name or s.workflow, scope, p)
    node.ctx = ContextCfg.from_spec(wf.context or ContextSpec())
    node.output = c.sampler(s.output, (*p, "output"), "subagent output tokens", upper=MAX_TOKENS)
    c.draw(node, OUTPUT, scope, node.output, integer=True)
    node.body = c.seq(wf.steps, scope, ("workflows", s.workflow, "steps"))
    return node


def check(scenario, step: SubagentStep, path: tuple, previous) -> list[Problem]:
    wf = step.subagent.workflow
    if wf in scenario.workflows:
        return []
    hint = suggest(wf, list(scenario.workflows))
    return [
        Problem(
            (*path, "subagent", "workflow"),
            f"workflow '{wf}' is not defined under workflows",
            hint or ("defined: " + ", ".join(scenario.workflows) if scenario.workflows else "add it"),
        )
    ]


def des(run, node: SubagentNode, flow, flat: int):
    yield from run.seq(node.body, Flow(Ctx(node.ctx), flow.acc, flow.r), flat)
    flow.ctx.add(run.value(node, OUTPUT, flow.r, flat))


def fast(ev, node: SubagentNode, st, ix: tuple) -> None:
    from agentsim.sim.fastpath import State, VecCtx

    sub = State(st.t, st.acc, VecCtx.fresh(node.ctx, st.t.shape), st.active)
    ev.seq(node.body, sub, ix)
    st.t, st.acc = sub.t, sub.acc
    st.active = ev.live(st.active)
    st.ctx.add(ev.values(node, OUTPUT, ix), st.active)


DOCS = (  # the kind's sections of docs/scenarios.md: (its model, heading, example, where it is written)
    (
        SubagentSpec,
        "Step `subagent`",
        """\
subagent: {name: research, workflow: researcher, output: 400}
""",
        ("subagent",),
    ),
)


KIND = register_step(
    StepKind(
        "subagent",
        SubagentStep,
        compile_subagent,
        des,
        fast,
        check=check,
        docs=DOCS,
        summary="a named workflow, with a context of its own",
    )
)

"""``choose: {options: [{p, steps}, ...]}``: one option is drawn per instance by its probability, and its steps run.

An option's ``p`` may depend on the model of a named call (resolved per variant, then the options
must sum to 1 in every variant); an option without steps skips. Each instance draws one normal
``z`` (purpose ``PICK``) and picks the option whose cumulative probability interval holds ``Phi(z)``,
so every variant picks from the same draw (common random numbers).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Annotated

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from agentsim.model.base import StrictModel
from agentsim.model.distributions import ByModel, ModelProb
from agentsim.model.domain import Of
from agentsim.model.registry import StepKind, register_step
from agentsim.model.steps import Step, StepModel, in_order
from agentsim.plan.nodes import PICK, Node, SeqNode

if TYPE_CHECKING:
    import numpy as np

__all__ = ["ChooseNode", "ChooseOption", "ChooseSpec", "ChooseStep"]


class ChooseOption(StrictModel):
    p: Annotated[ModelProb, Of("prob")] = Field(
        description="Probability of this option (the options' p sum to 1; may depend on a call's model)."
    )
    steps: list[Step] = Field(default_factory=list, description="The steps of this option (none: skip).")
    name: str | None = Field(None, description="Option name.")


class ChooseSpec(StrictModel):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    options: list[ChooseOption] = Field(min_length=1, description="One option is drawn per run by its p.")

    @model_validator(mode="after")
    def _sums_to_one(self) -> ChooseSpec:
        if any(isinstance(o.p, ByModel) for o in self.options):
            return self  # checked per variant when the plan is compiled
        total = math.fsum(o.p for o in self.options)
        if abs(total - 1.0) > 1e-9:
            raise PydanticCustomError("p_sum", "option probabilities sum to {total}, not 1", {"total": f"{total:.6g}"})
        return self


class ChooseStep(StepModel):
    choose: ChooseSpec


@dataclass(eq=False)
class ChooseNode(Node):
    cum: np.ndarray = None  # cumulative probabilities without the final 1
    options: tuple[SeqNode, ...] = ()
    cums: tuple[np.ndarray, ...] | None = None  # per variant, when an option's p depends on a call's model
    kind = "choose"

    def children(self) -> tuple[Node, ...]:
        return self.options

    def mean_time_lower(self, tiers) -> float:
        probs = [*self.cum.tolist(), 1.0]
        weights = [b - a for a, b in zip([0.0, *probs[:-1]], probs, strict=True)]
        return sum(w * o.mean_time_lower(tiers) for w, o in zip(weights, self.options, strict=True))


def compile_choose(c, step: ChooseStep, scope, path) -> ChooseNode:
    ch = step.choose
    p = (*path, "choose")
    node = c.new_node(ChooseNode, ch.name or f"choose{len(c.nodes)}", scope, p)
    import numpy as np  # a choice's cut points are arrays; validating a scenario without one needs no NumPy

    if any(isinstance(o.p, ByModel) for o in ch.options):
        node.cum = np.zeros(len(ch.options) - 1)  # replaced per variant (cums) once calls are known
        c.later(partial(_resolve, c, node, ch, p))
    else:
        node.cum = np.cumsum([o.p for o in ch.options])[:-1]
    c.draw(node, PICK, scope, None, transform=partial(_pick, node))
    node.options = tuple(
        c.seq(o.steps, scope, (*p, "options", i, "steps"), name=o.name or "") for i, o in enumerate(ch.options)
    )
    return node


def _resolve(c, node: ChooseNode, spec: ChooseSpec, path, resolver) -> None:
    """The cumulative probabilities per variant, when an option's p depends on a call's model."""
    import numpy as np  # imported with the choose step already

    per_option = [resolver.values(o.p, (*path, "options", i, "p")) for i, o in enumerate(spec.options)]
    if any(p is None for p in per_option):
        return
    cums = []
    for v, vname in enumerate(c.variants):
        ps = [p[v] for p in per_option]
        total = math.fsum(ps)
        if abs(total - 1.0) > 1e-9:
            c.problem(
                (*path, "options"),
                f"option probabilities sum to {total:.6g}, not 1, in variant '{vname}'",
                "make the options' p sum to 1 for every model the named call can run on",
            )
        cums.append(np.cumsum(ps)[:-1])
    node.cums = tuple(cums)
    node.cum = cums[0]


def _pick(node: ChooseNode, z, draw, by_variant: dict):
    """The option of each instance: where ``Phi(z)`` falls among the cumulative probabilities."""
    import numpy as np
    from scipy import special

    from agentsim.plan.sampling import per_variant

    if node.cums is not None:  # an option's p depends on a call's model
        return per_variant(special.ndtr(z), node.cums, _index, draw, by_variant)
    return np.searchsorted(node.cum, special.ndtr(z), side="right").astype(np.int64)


def _index(u, cum):
    import numpy as np

    return np.searchsorted(cum, u, side="right").astype(np.int64)


def sequences(step: ChooseStep, here: tuple):
    for o, opt in enumerate(step.choose.options):
        yield in_order(opt.steps, (*here, "choose", "options", o, "steps"))


def des(run, node: ChooseNode, flow, flat: int):
    yield from run.seq(node.options[run.value(node, PICK, flow.r, flat)], flow, flat)


def fast(ev, node: ChooseNode, st, ix: tuple) -> None:
    pick = ev.values(node, PICK, ix)
    outer = st.active
    for o, option in enumerate(node.options):
        st.active = outer & (pick == o)
        ev.seq(option, st, ix)  # options are exclusive: masked updates never overlap
    st.active = ev.live(outer)


DOCS = (  # the kind's sections of docs/scenarios.md: (its model, heading, example, where it is written)
    (
        ChooseSpec,
        "Step `choose`",
        """\
choose:
  name: triage
  options:
    - {p: 0.7, steps: [{call: {name: quick-fix, output: 300}}]}
    - {p: 0.3, name: escalate, steps: [{wait: {name: human, latency: 600}}]}
""",
        ("choose",),
    ),
    (
        ChooseOption,
        "One option of `choose`",
        """\
option: {p: 0.3, name: escalate, steps: [{wait: {latency: 600}}]}
""",
        ("option",),
    ),
)


KIND = register_step(
    StepKind(
        "choose",
        ChooseStep,
        compile_choose,
        des,
        fast,
        sequences=sequences,
        docs=DOCS,
        summary="one option, drawn by its probability",
    )
)

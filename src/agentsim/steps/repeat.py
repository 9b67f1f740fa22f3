"""``repeat: {times | continue_p + max, steps}``: the steps run several times in a row.

``times`` is a count (rounded; a distribution is drawn per instance); or, with ``continue_p``, after
each iteration another follows with probability ``continue_p``, so the body runs at least once and
at most ``max`` times: ``P(count > k) = continue_p^k`` (count = ``1 + floor(log u / log p)``, ``u``
uniform). Either may depend on the model of a named call (``{by: act, opus: 0.7, haiku: 0.82}``,
resolved per variant; every variant transforms the same draws).

The repeat gives its body an instance axis (``axis = IN_TURN``): the body's nodes have one
instance per iteration, the block's largest count wide. The engines run iterations one after the
other (the fast path under a mask of the runs that still iterate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Annotated

from pydantic import BeforeValidator, Field, model_validator
from pydantic_core import PydanticCustomError

from agentsim.model.base import StrictModel, integer
from agentsim.model.distributions import ByModel, ByModelCount, Count, ModelProb, max_p
from agentsim.model.domain import Of
from agentsim.model.registry import StepKind, register_step
from agentsim.model.steps import Step, StepModel, in_order
from agentsim.plan.distributions import Sampler
from agentsim.plan.nodes import COUNT, IN_TURN, Node, SeqNode, count_bounds_of

__all__ = ["RepeatNode", "RepeatSpec", "RepeatStep"]


class RepeatSpec(StrictModel):
    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    times: Annotated[Count | None, Of("count")] = Field(
        None, description="Number of iterations (rounded; may depend on a call's model: {by: CALL, MODEL: n})."
    )
    continue_p: Annotated[ModelProb | None, Of("prob")] = Field(
        None, description="After each iteration another follows with this p (may depend on a call's model)."
    )
    max: Annotated[Annotated[int, BeforeValidator(integer), Field(ge=1)] | None, Of("count", positive=True)] = Field(
        None, description="Cap on iterations with continue_p."
    )
    steps: list[Step] = Field(min_length=1, description="The steps of one iteration, in order.")

    @model_validator(mode="after")
    def _ends(self) -> RepeatSpec:
        if (self.times is None) == (self.continue_p is None):
            raise PydanticCustomError("repeat_count", "repeat needs exactly one of times or continue_p (with max)", {})
        if self.times is not None and self.max is not None:
            raise PydanticCustomError("repeat_max", "max goes with continue_p, not with times", {})
        if self.continue_p is not None and max_p(self.continue_p) >= 1 and self.max is None:
            raise PydanticCustomError(
                "repeat_never_ends",
                "this repeat can never end: continue_p is {p} and there is no max; set continue_p below 1 or add max",
                {"p": max_p(self.continue_p)},
            )
        return self


class RepeatStep(StepModel):
    repeat: RepeatSpec


@dataclass(eq=False)
class RepeatNode(Node):
    times: Sampler | None = None
    continue_p: float | None = None
    max: int | None = None
    body: SeqNode = None
    continue_ps: tuple[float, ...] | None = None  # per variant, when continue_p depends on a call's model
    times_by: tuple[Sampler, ...] | None = None  # per variant, when times depends on a call's model
    kind = "repeat"
    axis = IN_TURN

    def children(self) -> tuple[Node, ...]:
        return (self.body,) if self.body is not None else ()

    def count_bounds(self) -> tuple[float, float]:
        """(mean, largest) number of iterations (the largest count of a distribution: its 1 - 1e-9 quantile)."""
        if self.times is None:  # continue_p (and max): P(count > k) = p^k
            p, cap = max(self.continue_ps or (self.continue_p,)), self.max
            if cap is None:  # p < 1 (validated): a geometric count; its 1 - 1e-9 quantile bounds it
                return 1.0 / (1.0 - p), (1.0 + math.floor(math.log(1e-9) / math.log(p))) if p > 0 else 1.0
            mean = float(cap) if p >= 1 else (1 - p**cap) / (1 - p)
            return mean, float(cap)
        return count_bounds_of(self.times)

    def can_take_time(self, tiers) -> bool:
        # continue_p: at least one iteration; a count is rounded
        positive = self.times is None or self.times.support[1] >= 0.5
        return positive and self.body.can_take_time(tiers)

    def mean_time_lower(self, tiers) -> float:
        return self.count_bounds()[0] * self.body.mean_time_lower(tiers)


def compile_repeat(c, step: RepeatStep, scope, path) -> RepeatNode:
    r = step.repeat
    p = (*path, "repeat")
    node = c.new_node(RepeatNode, r.name or f"repeat{len(c.nodes)}", scope, p)
    if isinstance(r.times, ByModelCount):  # samplers per variant, resolved once calls are known
        c.later(partial(_resolve_times, c, node, r.times, (*p, "times")))
        c.draw(node, COUNT, scope, None, transform=partial(_count, node), counts=True)
    elif r.times is not None:
        node.times = c.sampler(r.times, (*p, "times"), "repeat times")
        c.draw(node, COUNT, scope, node.times, integer=True, counts=True)
    else:
        node.max = r.max
        if isinstance(r.continue_p, ByModel):
            c.later(partial(_resolve_continue, c, node, r.continue_p, (*p, "continue_p")))
        else:
            node.continue_p = r.continue_p
        c.draw(node, COUNT, scope, None, transform=partial(_count, node), counts=True)
    node.body = c.seq(r.steps, (*scope, node.id), (*p, "steps"))
    return node


def _resolve_times(c, node: RepeatNode, spec, path, resolver) -> None:
    counts = resolver.values(spec, path)
    if counts is None:
        node.times_by = (Sampler("constant", {"value": 1.0}),) * resolver.nv
    else:
        made: list[tuple] = []  # one sampler per distinct value, shared by the variants that use it
        for count in counts:
            if not any(count == x for x, _ in made):
                made.append((count, c.sampler(count, path, "repeat times")))
        node.times_by = tuple(next(s for x, s in made if x == count) for count in counts)
    node.times = node.times_by[0]


def _resolve_continue(c, node: RepeatNode, spec, path, resolver) -> None:
    ps = resolver.values(spec, path)
    if ps is None:
        return
    for v, p in enumerate(ps):
        if p >= 1 and node.max is None:
            c.problem(
                path,
                f"this repeat can never end in variant '{list(c.variants)[v]}': "
                f"continue_p is {p:g} and there is no max",
                "set continue_p below 1 or add max",
            )
    node.continue_ps = ps
    node.continue_p = ps[0]


def _count(node: RepeatNode, z, draw, by_variant: dict):
    """The iterations of each instance from its normals (a count per variant where they differ)."""
    from agentsim.plan.sampling import per_variant

    if node.times_by is not None:  # times depends on a call's model
        return per_variant(z, node.times_by, _rounded, draw, by_variant)
    if node.continue_ps is not None:  # continue_p depends on a call's model
        return per_variant(z, node.continue_ps, partial(_continue_count, cap=node.max), draw, by_variant)
    return _continue_count(z, node.continue_p, node.max)


def _rounded(z, s: Sampler):
    import numpy as np

    return np.rint(s.transform(z)).astype(np.int64)


def _continue_count(z, p: float, cap: int | None):
    """Iterations of a ``continue_p`` repeat: at least 1, P(count > k) = p**k, at most ``cap``."""
    import numpy as np
    from scipy import special

    if p <= 0.0:
        k = np.ones(z.shape, dtype=np.int64)
    elif p >= 1.0:
        k = np.full(z.shape, cap, dtype=np.int64)
    else:  # u = Phi(z); count = 1 + floor(log u / log p)
        k = 1 + np.floor(special.log_ndtr(z) / math.log(p)).astype(np.int64)
    if cap is not None:
        k = np.minimum(k, cap)
    return k


def sequences(step: RepeatStep, here: tuple):
    yield in_order(step.repeat.steps, (*here, "repeat", "steps"))


def des(run, node: RepeatNode, flow, flat: int):
    """The body once per iteration, each on its own instance slot (the runner's iteration primitive)."""
    body = node.body
    return run.iterate(node, flow, flat, lambda _k, slot: run.seq(body, flow, slot))


def fast(ev, node: RepeatNode, st, ix: tuple) -> None:
    """Iteration after iteration for every run, under the mask of the runs that still iterate (the evaluator's
    iteration primitive)."""
    body = node.body
    ev.iterate(node, st, ix, lambda _k, st_k, ix_k: ev.seq(body, st_k, ix_k))


DOCS = (  # the kind's sections of docs/scenarios.md: (its model, heading, example, where it is written)
    (
        RepeatSpec,
        "Step `repeat`",
        """\
repeat:
  name: act-observe
  times: {uniform: {low: 30, high: 40}}     # or: continue_p: 0.9 with max: 60
  steps:
    - call: {name: act, output: 250}
    - tool: {name: run, latency: 1.5, output: 800}
""",
        ("repeat",),
    ),
)


KIND = register_step(
    StepKind(
        "repeat",
        RepeatStep,
        compile_repeat,
        des,
        fast,
        sequences=sequences,
        docs=DOCS,
        units={"RepeatSpec.times": "iterations", "RepeatSpec.max": "iterations"},
        summary="its steps several times: a count, or another iteration with probability continue_p",
    )
)

"""A reviewer's step kind and consumer kind, written by the recipes of docs/design.md and touching nothing in src/.

Importing this module registers them (``tests/test_kind_recipe.py`` takes them through every surface in a
fresh interpreter, so the rest of the suite never sees them).

* ``retry: {name, p, max, backoff, steps}`` -- a body that is run again with probability ``p`` after each
  attempt, at most ``max`` attempts in all (``P(attempts > k) = p^k``, capped), with a back-off wait of
  ``backoff`` seconds (drawn per attempt) before every attempt after the first. The attempts are an
  instance axis run in turn (``axis = IN_TURN``, the engines' iteration primitive); the back-off is a span
  of its own node (kind ``retry``) whose time goes to a breakdown slot of the kind's own, ``backoff``.
  Its spec is called ``RetrySpec`` on purpose: the vocabulary has a ``RetrySpec`` too (a model's retries).
* ``skim: {tokens_per_s}`` -- a person skimming the answer at ``tokens_per_s`` without ever waiting for
  text: token ``i`` (1-based) is skimmed at ``max(d_i, send + i / r)``, and ``skim_done_s`` is when the
  last delivered token is (from the send).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial
from typing import Annotated

from pydantic import Field

from agentsim.model.base import StrictModel
from agentsim.model.distributions import Dist
from agentsim.model.domain import Of, Prob
from agentsim.model.registry import ConsumerKind, Slot, StepKind, register_consumer, register_step
from agentsim.model.steps import Step, StepModel, in_order
from agentsim.plan.distributions import Sampler
from agentsim.plan.nodes import COUNT, IN_TURN, LATENCY, ConsumerCfg, Node, SeqNode, can_be_positive
from agentsim.sim.slots import index

# --------------------------------------------------------------------------- the step kind: retry

BACKOFF = Slot("backoff", "retry back-off", "back-off (retry)", "#17becf")


class RetrySpec(StrictModel):
    """A body run again with probability ``p`` after each attempt, at most ``max`` attempts, a back-off between."""

    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    p: Annotated[Prob, Of("prob")] = Field(description="Probability that an attempt is followed by another.")
    max: Annotated[int, Field(ge=1), Of("count", positive=True)] = Field(description="Most attempts in all.")
    backoff: Annotated[Dist, Of("duration")] = Field(0.0, description="Seconds before each attempt after the first.")
    steps: list[Step] = Field(min_length=1, description="The steps of one attempt, in order.")


class RetryStep(StepModel):
    retry: RetrySpec


@dataclass(eq=False)
class BackoffNode(Node):
    """The back-off before an attempt after the first: a span in the retry's attempt axis."""

    seconds: Sampler = None
    kind = "retry"
    record = "span"
    slot = BACKOFF.name

    def can_take_time(self, tiers) -> bool:
        return can_be_positive(self.seconds)


@dataclass(eq=False)
class RetryNode(Node):
    p: float = 0.0
    max: int = 1
    backoff: BackoffNode = None
    body: SeqNode = None
    kind = "retry"
    axis = IN_TURN

    def children(self) -> tuple[Node, ...]:
        return (self.backoff, self.body)

    def count_bounds(self) -> tuple[float, float]:
        p, cap = self.p, self.max
        return (float(cap) if p >= 1 else (1 - p**cap) / (1 - p)), float(cap)

    def can_take_time(self, tiers) -> bool:
        return self.body.can_take_time(tiers)

    def mean_time_lower(self, tiers) -> float:
        return self.body.mean_time_lower(tiers)


def attempts(z, draw, by_variant, p: float, cap: int):
    """Attempts of each instance from its normals: ``1 + floor(log u / log p)`` (``u = Phi(z)``), at most ``cap``."""
    import numpy as np
    from scipy import special

    if p <= 0.0:
        return np.ones(z.shape, dtype=np.int64)
    if p >= 1.0:
        return np.full(z.shape, cap, dtype=np.int64)
    return np.minimum(1 + np.floor(special.log_ndtr(z) / math.log(p)).astype(np.int64), cap)


def compile_retry(c, step: RetryStep, scope, path) -> RetryNode:
    r = step.retry
    p = (*path, "retry")
    node = c.new_node(RetryNode, r.name or f"retry{len(c.nodes)}", scope, p, p=r.p, max=r.max)
    c.draw(node, COUNT, scope, None, transform=partial(attempts, p=r.p, cap=r.max), counts=True)
    inner = (*scope, node.id)
    node.backoff = c.new_node(BackoffNode, f"{node.name} back-off", inner, (*p, "backoff"))
    node.backoff.seconds = c.sampler(r.backoff, (*p, "backoff"), "retry back-off")
    c.draw(node.backoff, LATENCY, inner, node.backoff.seconds)
    node.body = c.seq(r.steps, inner, (*p, "steps"))
    return node


def sequences(step: RetryStep, here: tuple):
    yield in_order(step.retry.steps, (*here, "retry", "steps"))


def retry_des(run, node: RetryNode, flow, flat: int):
    """Attempt after attempt (the runner's iteration primitive), a back-off span before each but the first."""
    backoff, body, slot = node.backoff, node.body, index(BACKOFF.name)

    def attempt(k: int, at: int):
        if k:
            yield from run.span(backoff, flow, at, slot, run.value(backoff, LATENCY, flow.r, at), 0)
        yield from run.seq(body, flow, at)

    return run.iterate(node, flow, flat, attempt)


def retry_fast(ev, node: RetryNode, st, ix: tuple) -> None:
    """The same for every run at once (the evaluator's iteration primitive); the first attempt has no back-off."""
    backoff, body, slot = node.backoff, node.body, index(BACKOFF.name)

    def attempt(k: int, st_k, ix_k: tuple) -> None:
        if k:
            ev.span(backoff, st_k, ix_k, slot, ev.values(backoff, LATENCY, ix_k), None)
        else:
            ev.not_made(backoff, ix_k)
        ev.seq(body, st_k, ix_k)

    ev.iterate(node, st, ix, attempt)


RETRY_DOCS = (
    (
        RetrySpec,
        "Step `retry`",
        """\
retry:
  name: fix
  p: 0.4
  max: 3
  backoff: 2
  steps:
    - call: {name: attempt, output: 200}
""",
        ("retry",),
    ),
)

register_step(
    StepKind(
        "retry",
        RetryStep,
        compile_retry,
        retry_des,
        retry_fast,
        sequences=sequences,
        slots=(BACKOFF,),
        docs=RETRY_DOCS,
        units={"RetrySpec.max": "attempts"},
        summary="its steps again with probability p, at most max attempts, a back-off between",
    )
)

# --------------------------------------------------------------------------- the consumer kind: skim


class SkimSpec(StrictModel):
    """A person skimming the answer at a pace, never waiting for text."""

    tokens_per_s: Annotated[float, Of("speed", positive=True)] = Field(description="Skimming pace, tokens/s.")


@dataclass(frozen=True)
class SkimCfg(ConsumerCfg):
    """A skimmer at ``rate`` tokens per second."""


def compile_skim(c, spec: SkimSpec, node, path, qoe: tuple) -> SkimCfg:
    return SkimCfg("skim", spec.tokens_per_s, qoe_ttft=qoe[0], qoe_rate=qoe[1] or spec.tokens_per_s)


def skim_times(cfg: SkimCfg, sb, n, **draws) -> dict:
    """``skimmed_s``: token ``i`` (1-based) skimmed at ``max(d_i, send + i / r)``; NaN beyond ``n``."""
    import numpy as np

    i = np.arange(1, sb.D.shape[1] + 1)
    t = np.maximum(sb.D, sb.send[:, None] + i[None, :] / cfg.rate)
    return {"skimmed_s": np.where(i[None, :] <= n[:, None], t, np.nan)}


def skim_measure(cfg: SkimCfg, sb, n, stop=None, **draws) -> dict:
    """``skim_done_s``: when the last delivered token is skimmed, from the send (at ``stop`` at the latest)."""
    import numpy as np

    t = skim_times(cfg, sb, n)["skimmed_s"]
    last = np.take_along_axis(t, np.maximum(n - 1, 0)[:, None], axis=1)[:, 0]
    end = np.where(n >= sb.N, last, np.inf)
    done = last if stop is None else np.minimum(last, stop)
    return {"skim_done_s": np.where(n > 0, done - sb.send, np.nan), "_end": end}


SKIM_DOCS = (
    (
        SkimSpec,
        "consumer.skim",
        """\
skim: {tokens_per_s: 40}
""",
        ("skim",),
    ),
)

register_consumer(
    ConsumerKind(
        "skim",
        SkimSpec,
        compile_skim,
        ("skim_done_s",),
        skim_measure,
        since_send=("skim_done_s",),
        timeline=skim_times,
        columns={"skimmed_s": ("skimmed", ":")},
        labels={"skim_done_s": "skimmed"},
        pace=lambda cfg: cfg.rate,
        docs=SKIM_DOCS,
        summary="A person skimming at a pace.",
    )
)

"""Toy step kinds for tests/test_step_kinds.py, written by the recipe of docs/design.md ("Add a step kind").

They live under tests/, outside the package, and register themselves when this module is imported,
before the first scenario is read: nothing in src/ names them.

* ``pause: {name, seconds, tokens}`` -- a fixed delay (``seconds``, drawn per instance) after which
  ``tokens`` join the context; its time goes to the ``wait`` slot. Both engines.
* ``nap: {seconds}`` -- a delay the fast path has no form for: it declares itself DES-only.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from agentsim.model.base import StrictModel
from agentsim.model.distributions import Dist
from agentsim.model.registry import StepKind, register_step
from agentsim.model.steps import StepModel
from agentsim.plan.distributions import Sampler
from agentsim.plan.nodes import LATENCY, OUTPUT, Node, can_be_positive
from agentsim.sim.slots import WAIT


class PauseSpec(StrictModel):
    name: str | None = Field(None, description="Step name.")
    seconds: Dist = Field(description="Seconds the pause lasts.")
    tokens: Dist = Field(0.0, description="Tokens that join the context after it.")


class PauseStep(StepModel):
    pause: PauseSpec


@dataclass(eq=False)
class PauseNode(Node):
    seconds: Sampler = None
    tokens: Sampler = None
    kind = "pause"
    record = "span"
    slot = "wait"

    def can_take_time(self, tiers) -> bool:
        return can_be_positive(self.seconds)


def compile_pause(c, step: PauseStep, scope, path) -> PauseNode:
    p = (*path, "pause")
    node = c.new_node(PauseNode, step.pause.name or f"pause{len(c.nodes)}", scope, p)
    node.seconds = c.sampler(step.pause.seconds, (*p, "seconds"), "pause seconds")
    node.tokens = c.sampler(step.pause.tokens, (*p, "tokens"), "pause tokens")
    c.draw(node, LATENCY, scope, node.seconds)
    c.draw(node, OUTPUT, scope, node.tokens, integer=True)
    return node


def pause_des(run, node, flow, flat):
    r = flow.r
    return run.span(node, flow, flat, WAIT, run.value(node, LATENCY, r, flat), run.value(node, OUTPUT, r, flat))


def pause_fast(ev, node, st, ix):
    ev.span(node, st, ix, WAIT, ev.values(node, LATENCY, ix), ev.values(node, OUTPUT, ix))


register_step(StepKind("pause", PauseStep, compile_pause, pause_des, pause_fast, summary="a toy pause"))


class NapSpec(StrictModel):
    seconds: float = Field(description="Seconds of the nap.")


class NapStep(StepModel):
    nap: NapSpec


@dataclass(eq=False)
class NapNode(Node):
    seconds: float = 0.0
    kind = "nap"
    record = "span"
    slot = "wait"


def compile_nap(c, step: NapStep, scope, path) -> NapNode:
    node = c.new_node(NapNode, f"nap{len(c.nodes)}", scope, (*path, "nap"))
    node.seconds = step.nap.seconds
    return node


def nap_des(run, node, flow, flat):
    return run.span(node, flow, flat, WAIT, node.seconds, 0)


register_step(StepKind("nap", NapStep, compile_nap, nap_des, None, des_only="a nap has no fast-path form (a toy)"))


# --------------------------------------------------------------------------- a toy consumer kind

from agentsim.model.registry import ConsumerKind, register_consumer  # noqa: E402
from agentsim.plan.nodes import ConsumerCfg  # noqa: E402


class GlanceSpec(StrictModel):
    tokens: int = Field(ge=1, description="Tokens the reader glances at.")


@dataclass(frozen=True)
class GlanceCfg(ConsumerCfg):
    tokens: int = 1


def compile_glance(c, spec, node, path, qoe):
    return GlanceCfg("glance", 0.0, qoe_ttft=qoe[0], qoe_rate=qoe[1] or 5.0, tokens=spec.tokens)


def glance_measure(cfg, sb, n, **draws):
    """``glance_s``: when token ``tokens`` (or the last) was delivered, from the send."""
    import numpy as np

    m = np.minimum(cfg.tokens, n)
    d = np.take_along_axis(sb.D, np.maximum(m - 1, 0)[:, None], axis=1)[:, 0]
    return {"glance_s": np.where(m > 0, d - sb.send, np.nan)}


def glance_timeline(cfg, sb, n, **draws):
    import numpy as np

    i = np.arange(sb.D.shape[1])
    return {"glanced_s": np.where(i[None, :] < np.minimum(cfg.tokens, n)[:, None], sb.D, np.nan)}


register_consumer(
    ConsumerKind(
        "glance",
        GlanceSpec,
        compile_glance,
        ("glance_s",),
        glance_measure,
        timeline=glance_timeline,
        columns={"glanced_s": ("glanced", "-.")},
        labels={"glance_s": "glanced"},
        summary="A toy consumer.",
    )
)

"""``listen: {name, end_of_speech, stt}``: a voice turn's input side (contract v1.2, DESIGN.md §3.3).

The step starts when the user stops speaking. The agent first takes ``end_of_speech`` seconds to
decide that the turn is over (end-pointing), then ``stt`` seconds of speech-to-text; both are drawn per
instance, and the step lasts ``end_of_speech + stt``. It adds nothing to the context (what the user
said reaches the model as the next call's ``input``).

Its time goes to a breakdown slot of its own, ``listen`` (reported in ``breakdown_s`` and as the runs
table's ``listen_s`` only when the plan has a listen step), not to ``wait``: it is the voice front
end's share of the turn, which a voice agent wants to see apart from human pauses. Each instance is a
row of the spans table (``kind: listen``), and both engines keep its start -- the end of the user's
speech -- per run and instance in ``BlockResult.starts[node]`` (simulated seconds, as calls' ``t_start``;
NaN where the step did not happen), from which the time from the end of speech to the first audio
(``voice_to_voice_s``) is measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from agentsim.model.base import StrictModel
from agentsim.model.distributions import Dist
from agentsim.model.domain import Of
from agentsim.model.registry import Slot, StepKind, register_step
from agentsim.model.steps import StepModel
from agentsim.plan.distributions import Sampler
from agentsim.plan.nodes import MAX_SECONDS, Node, can_be_positive
from agentsim.sim.slots import index

__all__ = ["END_OF_SPEECH", "LISTEN", "STT", "ListenNode", "ListenSpec", "ListenStep"]

# The draws of a listen node: any purpose unique within the node keys its stream (agentsim.plan.nodes).
END_OF_SPEECH, STT = 24, 25
# Its breakdown slot: reported (breakdown_s.listen, the runs table's listen_s) only when a plan has a listen step
LISTEN = Slot("listen", "listening", "listen (end of speech + STT)", "#c9a227")


class ListenSpec(StrictModel):
    """A voice turn's input side: end-pointing, then speech-to-text (contract v1.2)."""

    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    end_of_speech: Annotated[Dist, Of("duration")] = Field(
        0.0, description="Seconds from the end of the user's speech until the turn is detected as over (end-pointing)."
    )
    stt: Annotated[Dist, Of("duration")] = Field(
        0.0, description="Seconds of speech-to-text after the turn is detected as over."
    )


class ListenStep(StepModel):
    listen: ListenSpec


@dataclass(eq=False)
class ListenNode(Node):
    end_of_speech: Sampler = None
    stt: Sampler = None
    kind = "listen"
    record = "span"
    slot = "listen"
    keeps_start = True  # its start is the end of the user's speech

    def can_take_time(self, tiers) -> bool:
        return can_be_positive(self.end_of_speech) or can_be_positive(self.stt)

    def mean_time_lower(self, tiers) -> float:
        return self.end_of_speech.mean + self.stt.mean


def compile_listen(c, step: ListenStep, scope, path) -> ListenNode:
    spec = step.listen
    p = (*path, "listen")
    node = c.new_node(ListenNode, spec.name or f"listen{len(c.nodes)}", scope, p)
    node.end_of_speech = c.sampler(spec.end_of_speech, (*p, "end_of_speech"), "end of speech", upper=MAX_SECONDS)
    node.stt = c.sampler(spec.stt, (*p, "stt"), "speech-to-text seconds", upper=MAX_SECONDS)
    c.draw(node, END_OF_SPEECH, scope, node.end_of_speech)
    c.draw(node, STT, scope, node.stt)
    return node


def des(run, node: ListenNode, flow, flat: int):
    """One timeout of ``end_of_speech + stt``; its span row keeps the start."""
    r = flow.r
    seconds = run.value(node, END_OF_SPEECH, r, flat) + run.value(node, STT, r, flat)
    return run.span(node, flow, flat, index(LISTEN.name), seconds, 0)


def fast(ev, node: ListenNode, st, ix: tuple) -> None:
    """The same sum for every run at once."""
    ev.span(node, st, ix, index(LISTEN.name), ev.values(node, END_OF_SPEECH, ix) + ev.values(node, STT, ix), None)


DOCS = (  # the kind's sections of docs/scenarios.md: (its model, heading, example, where it is written)
    (
        ListenSpec,
        "Step `listen`",
        """\
listen: {name: user, end_of_speech: 0.2, stt: {lognormal: {median: 0.3, p90: 0.6}}}
""",
        ("listen",),
    ),
)


KIND = register_step(
    StepKind(
        "listen",
        ListenStep,
        compile_listen,
        des,
        fast,
        slots=(LISTEN,),
        docs=DOCS,
        summary="a voice turn's input side: end-pointing and speech-to-text after the user stops speaking",
    )
)

"""``pipeline: {after, steps}``: steps started on the previous call's partial output, beside the rest of its stream.

Right after a call in the same list of steps, a pipeline starts its steps once that call has streamed
``after: {tokens: N}`` tokens (or, ``after: first_sentence``, its first sentence: the call's speech
consumer's ``sentence_tokens``, else the pipeline's own, default 20); the sequence goes on when both
are done (:meth:`PipelineNode.starts_on`; a call interrupted earlier starts it at the
cut). Like a ``parallel`` fork: the pipeline sees the context as it was before the call, its
additions are appended after the call's, and the later of the two is the critical path (a tie: the
pipeline, the later in branch order); the pipeline's critical path starts with the call's TTFT,
decode and stall up to the start (:func:`agentsim.sim.rules.lead_in`).

The call and its pipeline run as one step: the engines arm the pipeline from the call (DES:
``Runner.call`` with ``flow.trigger``; fast path: ``Evaluator.call`` with ``pipe_after``) and this
module forks and joins them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from agentsim.model.base import Problem, StrictModel
from agentsim.model.distributions import Dist
from agentsim.model.domain import Of, PosTokens
from agentsim.model.registry import StepKind, kind_of, register_step
from agentsim.model.steps import Step, StepModel, in_order
from agentsim.plan.distributions import Sampler
from agentsim.plan.nodes import SENTENCES, Node, SeqNode
from agentsim.sim.flow import Flow, RunFailed
from agentsim.sim.slots import DEC, STALL, TTFT

__all__ = ["AfterTokens", "PipelineNode", "PipelineSpec", "PipelineStep"]


class AfterTokens(StrictModel):
    tokens: Annotated[PosTokens, Of("tokens", positive=True)] = Field(
        description="Tokens the previous call must have streamed."
    )


class PipelineSpec(StrictModel):
    """Steps that start on the previous call's partial output, alongside the rest of its stream."""

    name: str | None = Field(None, description="Step name, used in records and variant overrides.")
    after: AfterTokens | Literal["first_sentence"] = Field(
        description="Start once the previous call has streamed {tokens: N} tokens, or its first_sentence."
    )
    sentence_tokens: Annotated[Dist | None, Of("tokens")] = Field(
        None, description="Sentence length for first_sentence (default: the call's speech consumer's, else 20)."
    )
    steps: list[Step] = Field(min_length=1, description="The steps to run, in order.")


class PipelineStep(StepModel):
    pipeline: PipelineSpec


@dataclass(eq=False)
class PipelineNode(Node):
    """Steps started on the previous call's partial output (:meth:`starts_on`)."""

    call: Node = None  # the call just before it in the same sequence
    after_tokens: int | None = None  # None: after the first sentence
    sentence: Sampler = None  # sentence length for after: first_sentence
    body: SeqNode = None
    kind = "pipeline"
    follows_call = True
    lanes = True

    def children(self) -> tuple[Node, ...]:
        return (self.body,) if self.body is not None else ()

    def summary_only_reason(self) -> str:
        return "a pipeline starts from a call's token stream"

    def _sentences(self) -> tuple:
        """The sentence lengths ``after: first_sentence`` reads and the node keying their draws: the call's
        consumer's (a voice's), else the pipeline's own."""
        own = self.call.consumer.sentences() if self.call.consumer is not None else None
        return (own, self.call.id) if own is not None else (self.sentence, self.id)

    def token_draws(self) -> int:
        if self.after_tokens is not None:
            return 0
        sampler, key = self._sentences()
        return int(key == self.id and not sampler.is_constant)  # the call's consumer's are counted with it

    def starts_on(self, slot, sb, cut=None):
        """When the pipeline starts after each call of ``slot``: the delivery of token ``tokens`` (or of the first
        sentence's last token), from the call's token stream ``sb``.

        ``cut`` (optional): when each call is interrupted (``inf``: not). A cut call ends at the cut with the
        tokens that arrived by then: the pipeline starts at the cut at the latest, and at the cut too when its
        token never arrived (even if its chunk, the first, was delivered at ``a_1``): the call has fewer tokens.
        """
        import numpy as np

        from agentsim.sim.stream_draws import first_size
        from agentsim.sim.streaming import ARRIVED_TOL

        N = sb.N
        if self.after_tokens is not None:
            m = np.minimum(self.after_tokens, N)
        else:
            sampler, key = self._sentences()
            m = first_size(sampler, slot.block, key, SENTENCES, slot.flat, np.asarray(slot.runs), N, cache=True)
        m = np.maximum(m, 1) - 1
        t = np.take_along_axis(sb.D, m[:, None], axis=1)[:, 0]
        if cut is not None:
            came = (cut + ARRIVED_TOL) >= np.take_along_axis(sb.A, m[:, None], axis=1)[:, 0]
            t = np.where(came, np.minimum(t, cut), cut)
        return np.where(N > 0, t, sb.end)


def compile_pipeline(c, step: PipelineStep, scope, path) -> PipelineNode:
    pl = step.pipeline
    p = (*path, "pipeline")
    node = c.new_node(PipelineNode, pl.name or f"pipeline{len(c.nodes)}", scope, p)
    if isinstance(pl.after, str):
        spec = pl.sentence_tokens if pl.sentence_tokens is not None else 20.0
        node.sentence = c.sampler(spec, (*p, "sentence_tokens"), "sentence tokens", positive=True)
    else:
        node.after_tokens = pl.after.tokens
    c.branch_depth += 1  # the steps run alongside the call's stream, as a branch does
    node.body = c.seq(pl.steps, scope, (*p, "steps"))
    c.branch_depth -= 1
    return node


def sequences(step: PipelineStep, here: tuple):
    yield in_order(step.pipeline.steps, (*here, "pipeline", "steps"))


def check(scenario, step: PipelineStep, path: tuple, previous) -> list[Problem]:
    if previous is not None and kind_of(previous).name == "call":
        return []
    return [
        Problem(
            (*path, "pipeline"),
            "a pipeline starts on the streamed output of the call just before it, but the step before it is not a call",
            "put the pipeline right after a call in the same list of steps",
        )
    ]


def des(run, pair: tuple, st: Flow, flat: int):
    """The call and its pipeline as two processes, the pipeline started by the call (``trigger``); both join."""
    import simpy

    from agentsim.sim.rules import critical_all

    call, pipe, call_fn = pair
    env = run.env
    cfg = st.ctx.cfg
    static = not cfg.grows and not cfg.cache
    fa = Flow(st.ctx if static else st.ctx.fork(), list(st.acc), st.r)
    fb = Flow(st.ctx if static else st.ctx.fork(), list(st.acc), st.r)
    start = env.event()
    fa.trigger = (start, pipe, fb)
    ends = [None, None]

    def call_branch():
        try:
            yield from call_fn(run, call, fa, flat)
        except simpy.Interrupt:
            return
        ends[0] = env.now

    def pipe_branch():
        try:
            yield start
            yield from run.seq(pipe.body, fb, flat)
        except simpy.Interrupt:
            return
        ends[1] = env.now

    procs = [env.process(call_branch()), env.process(pipe_branch())]
    try:
        yield procs[0] & procs[1]
    except (simpy.Interrupt, RunFailed):  # cancelled, or one side failed the run: stop the other now
        for p in procs:
            if p.is_alive:
                p.interrupt()
        raise
    critical = (fa, fb)[critical_all(ends)]
    if not static:
        st.ctx.join([fa.ctx, fb.ctx])
    st.acc[:] = critical.acc


def fast(ev, node: PipelineNode, st, ix: tuple) -> None:
    """The pipeline after a call (its call armed it: ``ev.pipe_state``), vectorised: a fork, then a join."""
    import numpy as np

    from agentsim.sim import rules
    from agentsim.sim.fastpath import State

    pre_ctx, pre_acc, t0, t_go, ttft, stalled = ev.pipe_state.pop(node.id)
    active = st.active
    acc = list(pre_acc)
    first, dec = rules.lead_in(t0, t_go, ttft, stalled)
    acc[TTFT] = acc[TTFT] + first
    acc[DEC] = acc[DEC] + dec
    acc[STALL] = acc[STALL] + stalled
    cfg = st.ctx.cfg
    static = not cfg.grows and not cfg.cache
    pst = State(t0 + (t_go - t0), acc, pre_ctx if static else pre_ctx.fork(), active)
    ev.seq(node.body, pst, ix)
    later = rules.critical_all_array(np.stack([st.t, pst.t], axis=-1)) == 1  # the call, then the pipeline
    st.t = np.where(active, np.where(later, pst.t, st.t), st.t)
    st.acc = [np.where(active & later, p, c) for p, c in zip(pst.acc, st.acc, strict=True)]
    if not static:  # the call's additions, then the pipeline's (rows not running this are unchanged in both)
        pre_ctx.join([st.ctx, pst.ctx], [np.ones(st.t.shape, dtype=bool)] * 2)
        st.ctx = pre_ctx


DOCS = (  # the kind's sections of docs/scenarios.md: (its model, heading, example, where it is written)
    (
        PipelineSpec,
        "Step `pipeline`",
        """\
pipeline:                      # right after a call: starts once that call has streamed 50 tokens
  after: {tokens: 50}          # or: first_sentence
  steps:
    - tool: {name: tts-warmup, latency: 0.2}
""",
        ("pipeline",),
    ),
    (
        AfterTokens,
        "When a pipeline starts",
        """\
after: {tokens: 50}
""",
        ("after",),
    ),
)


KIND = register_step(
    StepKind(
        "pipeline",
        PipelineStep,
        compile_pipeline,
        des,
        fast,
        sequences=sequences,
        check=check,
        docs=DOCS,
        summary="steps that start on the previous call's partial output (right after a call)",
    )
)

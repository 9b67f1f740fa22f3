"""Compile a scenario into a Plan: the agent as a tree of numbered nodes, ready to run.

The plan is what both engines execute. Compiling does everything that does not
depend on a random draw, once:

* every step becomes a node with a stable id (pre-order), a display name and a
  *scope*: the ``repeat`` and ``fanout`` nodes around it. A node inside a
  ``repeat`` of up to 40 iterations has up to 40 instances per run; its sampled
  values form an array of shape ``(runs, 40)`` (see :mod:`agentsim.plan.sampling`);
* every distribution becomes a :class:`~agentsim.plan.distributions.Sampler`;
* every (model, speed tier) used by any variant becomes a :class:`Tier` with its
  compiled price rates and speed multipliers, and every call knows which tier it
  uses in each variant;
* ``subagent`` steps are inlined with their own context settings;
* a probability or repeat count written ``{by: CALL, MODEL: value}`` is resolved to one value per
  variant from the tier the named call runs on there (:func:`_resolve_by_model`);
* each model's provider ``conditions`` become per-run draws of a pseudo-node (:func:`_compile_conditions`).

Problems found here (a tier a model does not offer, a speed distribution that
can reach zero, an unreadable empirical file, an unknown catalog model) are
reported with the dotted path of the offending value.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from statistics import NormalDist
from typing import TYPE_CHECKING

from agentsim.model.loading import ErrorItem, ScenarioError, line_of, source_of
from agentsim.model.scenario import (
    ByModel,
    ByModelCount,
    CallStep,
    ChooseStep,
    ContextSpec,
    FailStep,
    FanoutStep,
    KJoin,
    ParallelStep,
    PipelineStep,
    Problem,
    RepeatStep,
    RetrySpec,
    Scenario,
    SubagentStep,
    ToolStep,
    WaitStep,
)
from agentsim.plan.distributions import DistError, Sampler, sampler
from agentsim.plan.time_of_day import compile_time_of_day
from agentsim.pricing.rates import PriceError, Rates, compile_price, needs_default_date, today

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "CallNode",
    "ChooseNode",
    "ContextCfg",
    "Draw",
    "FailNode",
    "FanoutNode",
    "Node",
    "ParNode",
    "PipelineNode",
    "Plan",
    "RepeatNode",
    "SeqNode",
    "SubagentNode",
    "Tier",
    "ToolNode",
    "WaitNode",
    "compile_plan",
]

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
MAX_TOKENS = 1e8  # tokens in one call, tool output or context: beyond it a value is a typo (and int64 is near)
MAX_SECONDS = 10 * 365.25 * 86400.0  # a latency beyond 10 years is a typo


# Phi^-1(1 - 1e-12) (the same bits as scipy.special.ndtri), without SciPy: `validate` need not import it
_Z_TOP = NormalDist().inv_cdf(1 - 1e-12)


def _practical_max(s: Sampler) -> float:
    """The largest value a draw takes in practice: the support's top, or the 1 - 1e-12 quantile if unbounded."""
    _, hi = s.support
    if math.isfinite(hi):
        return hi
    return s.quantile(_Z_TOP)


# What a draw is for; part of the random-stream key, so never renumber.
U_TTFT, U_TPS, INPUT, OUTPUT, REASONING, LATENCY, COUNT, PICK, ARRIVAL, THINK, U_ERROR, U_JITTER = range(12)
# Streaming (contract v1.1), appended after the v1 purposes. Per call: whether and how long its stream stalls and
# after which token (raw normals), whether and when it is interrupted, its text-to-speech first-audio latency.
# CHUNKS, GAPS and SENTENCES key the per-token streams of agentsim.sim.streaming (not drawn by sample_block).
STALL_P, STALL_S, STALL_AT, INTERRUPT_P, INTERRUPT_X, FIRST_AUDIO, CHUNKS, GAPS, SENTENCES = range(12, 21)
FAIL, COND_TTFT, COND_TPS = 21, 22, 23  # a fail step's uniform; a model's per-run condition factors


@dataclass(frozen=True)
class Tier:
    """A model at one speed tier: how a call on it is timed and priced."""

    index: int
    model: str
    speed: str
    ttft: Sampler
    output_tps: Sampler
    ttft_x: float
    tps_x: float
    prefill_tps: float  # math.inf when the model has no prefill term
    rates: Rates
    ttl_s: float | None  # the model's own cache TTL, overriding the context's
    error_rate: float = 0.0
    timeout_s: float | None = None
    max_attempts: int = 3
    backoff_base: float = 0.5
    backoff_cap: float = 8.0
    full_jitter: bool = True
    honour_retry_after: bool = True
    fallback: int | None = None  # tier index to use after `fallback_after` failures
    fallback_after: int | None = None
    accounts: tuple[int, ...] = ()  # indices into Plan.accounts
    stream: StreamCfg | None = None  # how the answer arrives (None: evenly, one token at a time)

    @property
    def label(self) -> str:
        return self.model if self.speed == "standard" else f"{self.model}@{self.speed}"


@dataclass(frozen=True)
class StreamCfg:
    """A tier's stream description (see agentsim.sim.streaming): chunk sizes, gap jitter, one possible stall."""

    chunk: Sampler  # tokens per delivered chunk, drawn per chunk
    jitter_cv: float
    stall_p: float
    stall_s: Sampler  # seconds of the stall, drawn per call (from raw normals)


@dataclass(frozen=True)
class ConsumerCfg:
    """Who consumes a call's streamed answer (see agentsim.sim.streaming)."""

    kind: str  # "reader", "speech", "render", or "none" (no consumer, but interruptible: common metrics)
    rate: float  # tokens/s: reading pace (reader), speaking rate (speech); 0 for render
    first_audio: Sampler | None = None  # speech: seconds from a sentence's last token to its audio
    sentence: Sampler | None = None  # speech: tokens per sentence, drawn per sentence
    render_tokens: int | None = None  # render: tokens needed to first draw (None: all of them)
    qoe_ttft: float = 1.0  # expected TTFT of the Andes QoE
    qoe_rate: float = 5.0  # expected pace (tokens/s) of the Andes QoE


@dataclass(frozen=True)
class InterruptCfg:
    p: float
    after: str  # "first_token" or "first_audio"
    delay: Sampler


@dataclass(frozen=True)
class ContextCfg:
    system: int
    grows: bool
    cache: bool
    ttl_s: float
    per_model: bool = False  # cache entries per (model, tier) instead of per context

    @classmethod
    def from_spec(cls, spec: ContextSpec) -> ContextCfg:
        return cls(spec.system, spec.grows, spec.cache_on, TTL_SECONDS[spec.cache_ttl or "5m"], spec.cache_per_model)


@dataclass(eq=False)
class Node:
    id: int
    name: str
    scope: tuple[int, ...]  # ids of the enclosing repeat/fanout nodes, outermost first
    path: tuple = ()

    kind = "node"

    def children(self) -> tuple[Node, ...]:
        """The nodes directly inside this one, in order (the one walk every tree reader uses)."""
        return ()


@dataclass(eq=False)
class CallNode(Node):
    input: Sampler = None
    output: Sampler = None
    reasoning: Sampler = None
    tiers: tuple[int, ...] = ()  # tier index per variant
    consumer: ConsumerCfg | None = None
    interrupt: InterruptCfg | None = None
    kind = "call"


@dataclass(eq=False)
class ToolNode(Node):
    latency: Sampler = None
    output: Sampler = None
    kind = "tool"


@dataclass(eq=False)
class WaitNode(Node):
    latency: Sampler = None
    kind = "wait"


@dataclass(eq=False)
class SeqNode(Node):
    steps: tuple[Node, ...] = ()
    kind = "seq"

    def children(self) -> tuple[Node, ...]:
        return self.steps


@dataclass(eq=False)
class ParNode(Node):
    branches: tuple[SeqNode, ...] = ()
    k: int | None = None  # None: join all
    kind = "parallel"

    def children(self) -> tuple[Node, ...]:
        return self.branches


@dataclass(eq=False)
class FanoutNode(Node):
    n: Sampler = None
    body: SeqNode = None
    join: str | int = "all"  # 'all', or k (1 for 'any'), capped at n
    kind = "fanout"

    def children(self) -> tuple[Node, ...]:
        return (self.body,) if self.body is not None else ()


@dataclass(eq=False)
class RepeatNode(Node):
    times: Sampler | None = None
    continue_p: float | None = None
    max: int | None = None
    body: SeqNode = None
    continue_ps: tuple[float, ...] | None = None  # per variant, when continue_p depends on a call's model
    times_by: tuple[Sampler, ...] | None = None  # per variant, when times depends on a call's model
    kind = "repeat"

    def children(self) -> tuple[Node, ...]:
        return (self.body,) if self.body is not None else ()


@dataclass(eq=False)
class ChooseNode(Node):
    cum: np.ndarray = None  # cumulative probabilities without the final 1
    options: tuple[SeqNode, ...] = ()
    cums: tuple[np.ndarray, ...] | None = None  # per variant, when an option's p depends on a call's model
    kind = "choose"

    def children(self) -> tuple[Node, ...]:
        return self.options


@dataclass(eq=False)
class PipelineNode(Node):
    """Steps started on the previous call's partial output (see agentsim.sim.streaming.pipeline_offset)."""

    call: CallNode = None  # the call just before it in the same sequence
    after_tokens: int | None = None  # None: after the first sentence
    sentence: Sampler = None  # sentence length for after: first_sentence
    body: SeqNode = None
    kind = "pipeline"

    def children(self) -> tuple[Node, ...]:
        return (self.body,) if self.body is not None else ()


@dataclass(eq=False)
class FailNode(Node):
    """The run stops here as a failed run with probability ``p[variant]`` (a uniform per instance)."""

    p: tuple[float, ...] = ()  # per variant
    in_branch: bool = False  # inside a parallel or fanout branch (the fast path declines these)
    kind = "fail"


@dataclass(eq=False)
class SubagentNode(Node):
    body: SeqNode = None
    ctx: ContextCfg = None
    output: Sampler = None
    kind = "subagent"

    def children(self) -> tuple[Node, ...]:
        return (self.body,) if self.body is not None else ()


@dataclass(frozen=True)
class Draw:
    """One sampled quantity of a node: a stream of its own, an array per block."""

    node: int
    purpose: int
    scope: tuple[int, ...]
    sampler: Sampler | None  # None: keep the raw normals (TTFT, TPS: transformed per variant; attempts)
    integer: bool = False
    extra: tuple[int, ...] = ()  # trailing axes of fixed size (e.g. attempts of a call)


@dataclass(frozen=True)
class WorkloadCfg:
    """Many agents over time, in one simulation (see agentsim.sim.workload)."""

    node: int  # pseudo-node id keying the arrival / think-time draws
    kind: str  # "open" (Poisson arrivals) or "closed" (a fixed number of agents)
    rate_per_s: float | None
    concurrent: int | None
    think: Sampler | None
    duration_s: float
    warmup_s: float


@dataclass
class Plan:
    scenario: Scenario
    root: SeqNode
    ctx: ContextCfg
    tiers: list[Tier]
    variants: list[str]
    nodes: list[Node]
    draws: list[Draw] = field(default_factory=list)
    accounts: list = field(default_factory=list)  # agentsim.plan.limits.AccountSpec
    workload: WorkloadCfg | None = None
    prices_as_of: dt.date | None = None  # date of catalog prices without their own date (None: none used)
    conditions: dict[str, int] = field(default_factory=dict)  # model -> pseudo-node of its per-run factors
    time_of_day: dict = field(default_factory=dict)  # model -> agentsim.plan.time_of_day.TimeOfDay

    @property
    def defines_success(self) -> bool:
        """Whether runs can fail by design (a ``fail`` step), so success is reported."""
        return any(isinstance(n, FailNode) for n in self.nodes)

    @property
    def needs_attempts(self) -> bool:
        """Whether calls can fail or be refused (and so need the DES's retry logic)."""
        return bool(self.accounts) or any(t.error_rate > 0 or t.timeout_s is not None for t in self.tiers)

    @property
    def has_stalls(self) -> bool:
        """Whether some call's stream can stall (its breakdown then has a ``stall`` slot)."""
        return any(t.stream is not None and t.stream.stall_p > 0 for t in self.tiers)

    @property
    def has_streaming(self) -> bool:
        """Whether some call has a consumer (the summary then has a ``streaming`` section)."""
        return any(c.consumer is not None for c in self.calls)

    @property
    def calls(self) -> list[CallNode]:
        return [n for n in self.nodes if isinstance(n, CallNode)]

    def nodes_of(self, kind: type) -> list[Node]:
        return [n for n in self.nodes if isinstance(n, kind)]


class _Compiler:
    def __init__(self, scenario: Scenario, base_dir: Path | None):
        self.sc = scenario
        self.base_dir = base_dir
        self.problems: list[Problem] = []
        self.nodes: list[Node] = []
        self.draws: list[Draw] = []
        self.tiers: list[Tier] = []
        self._tier_index: dict[tuple[str, str], int] = {}
        self._samplers: dict[tuple, Sampler] = {}
        self.variants = scenario.variant_specs()
        self._model_rates: dict[str, Rates] = {}
        self.prices_as_of = scenario.prices_as_of or today()  # one date for the whole compile
        self._groups: list[str] = []  # names of the enclosing named steps, outermost first
        self._by_model: list[tuple] = []  # (node, kind, spec, path): probabilities resolved per variant at the end
        self._branch_depth = 0  # parallel/fanout branches around the step being compiled

    # ------------------------------------------------------------------ helpers
    def problem(self, path, message, hint=""):
        self.problems.append(Problem(tuple(path), message, hint))

    def sampler(self, spec, path, what: str, *, positive=False, upper: float | None = None) -> Sampler:
        try:
            s = sampler(spec, self.base_dir)
        except DistError as exc:
            self.problem((*path, *exc.subpath), exc.message, exc.hint)
            return Sampler("constant", {"value": 1.0})
        if upper is not None:
            top = _practical_max(s)
            if top > upper:
                unit = "tokens" if upper == MAX_TOKENS else "s"
                self.problem(
                    path,
                    f"{what} can reach {top:.3g} {unit}, above the limit of {upper:.3g} {unit}",
                    "check the value for a typo, or clip it with max:"
                    if s.family != "constant"
                    else "check the value for a typo",
                )
                return Sampler("constant", {"value": 1.0})
        lo, _ = s.support
        if positive and not s.strictly_positive:
            self.problem(
                path,
                f"{what} must be above zero but this distribution can reach {lo:g}",
                "add a positive min, e.g. min: 1" if s.family != "constant" else "use a positive number",
            )
        elif not positive and lo < 0:
            self.problem(
                path,
                f"{what} cannot be negative but this distribution can reach {lo:g}",
                "add min: 0" if s.family != "constant" else "use a number of at least 0",
            )
        return s

    def new_node(self, cls, name, scope, path, **kw) -> Node:
        node = cls(id=len(self.nodes), name=name, scope=scope, path=tuple(path), **kw)
        self.nodes.append(node)
        return node

    def draw(self, node, purpose, scope, s, integer=False):
        self.draws.append(Draw(node.id, purpose, scope, s, integer))

    def rates_of(self, model: str) -> Rates:
        if model not in self._model_rates:
            spec = self.sc.models[model].price
            try:
                self._model_rates[model] = compile_price(spec, self.prices_as_of)
            except PriceError as exc:
                self.problem(("models", model, "price", *exc.subpath), exc.message, exc.hint)
                self._model_rates[model] = compile_price(type(spec)(input_mtok=0, output_mtok=0))
        return self._model_rates[model]

    def tier(self, model: str, speed: str, where: tuple) -> int | None:
        key = (model, speed)
        if key in self._tier_index:
            return self._tier_index[key]
        mspec = self.sc.models.get(model)
        if mspec is None:
            return None
        if speed != "standard" and speed not in mspec.speeds:
            from agentsim.model.scenario import suggest

            tiers = ["standard", *mspec.speeds]
            self.problem(
                where,
                f"model '{model}' has no speed tier '{speed}'",
                suggest(speed, tiers) or "its tiers: " + ", ".join(tiers),
            )
            return None
        mpath = ("models", model)
        ttft = self.sampler(mspec.ttft, (*mpath, "ttft"), "ttft", upper=MAX_SECONDS)
        tps = self.sampler(mspec.output_tps, (*mpath, "output_tps"), "output_tps", positive=True)
        base_rates = self.rates_of(model)
        ttft_x = tps_x = 1.0
        rates = base_rates
        if speed != "standard":
            sspec = mspec.speeds[speed]
            ttft_x, tps_x = sspec.ttft_x, sspec.output_tps_x
            if sspec.price is not None:
                try:
                    rates = compile_price(sspec.price, self.prices_as_of)
                except PriceError as exc:
                    self.problem((*mpath, "speeds", speed, "price", *exc.subpath), exc.message, exc.hint)
            elif sspec.price_x is not None:
                rates = base_rates.scaled(sspec.price_x, f"{base_rates.source} x{sspec.price_x:g}")
            # neither: the tier is billed at the model's own price
        stream_spec, spath = mspec.stream, (*mpath, "stream")
        if speed != "standard" and mspec.speeds[speed].stream is not None:
            stream_spec, spath = mspec.speeds[speed].stream, (*mpath, "speeds", speed, "stream")
        stream = self.stream(stream_spec, spath)
        ttl = TTL_SECONDS[mspec.cache.ttl] if mspec.cache is not None else None
        prefill = mspec.prefill_tps if mspec.prefill_tps is not None else math.inf
        retry = mspec.retry or RetrySpec()
        t = Tier(
            len(self.tiers),
            model,
            speed,
            ttft,
            tps,
            ttft_x,
            tps_x,
            prefill,
            rates,
            ttl,
            error_rate=mspec.error_rate,
            timeout_s=mspec.timeout,
            max_attempts=retry.max_attempts,
            backoff_base=retry.backoff_base,
            backoff_cap=retry.backoff_cap,
            full_jitter=retry.jitter == "full",
            honour_retry_after=retry.honour_retry_after,
            stream=stream,
        )
        self.tiers.append(t)
        self._tier_index[key] = t.index
        if mspec.fallback is not None:
            fb = self.tier(mspec.fallback.model, "standard", ("models", model, "fallback", "model"))
            self.tiers[t.index] = replace(t, fallback=fb, fallback_after=mspec.fallback.after)
        return t.index

    def stream(self, spec, path) -> StreamCfg | None:
        if spec is None:
            return None
        chunk = self.sampler(spec.chunk_tokens, (*path, "chunk_tokens"), "chunk tokens", positive=True)
        stall_p, stall_s = 0.0, Sampler("constant", {"value": 0.0})
        if spec.stall is not None:
            stall_p = spec.stall.p
            stall_s = self.sampler(spec.stall.seconds, (*path, "stall", "seconds"), "stall seconds")
        return StreamCfg(chunk, spec.jitter_cv, stall_p, stall_s)

    def consumer(self, spec, path) -> ConsumerCfg | None:
        if spec is None:
            return None
        q = spec.qoe
        qoe_ttft = q.expected_ttft if q is not None else 1.0
        qoe_rate = q.tokens_per_s if q is not None else None
        if spec.reader is not None:
            rate = spec.reader.rate
            return ConsumerCfg("reader", rate, qoe_ttft=qoe_ttft, qoe_rate=qoe_rate or rate)
        if spec.speech is not None:
            sp, sp_path = spec.speech, (*path, "speech")
            return ConsumerCfg(
                "speech",
                sp.tokens_per_s,
                first_audio=self.sampler(sp.first_audio, (*sp_path, "first_audio"), "first audio"),
                sentence=self.sampler(
                    sp.sentence_tokens, (*sp_path, "sentence_tokens"), "sentence tokens", positive=True
                ),
                qoe_ttft=qoe_ttft,
                qoe_rate=qoe_rate or sp.tokens_per_s,
            )
        tokens = spec.render.tokens
        return ConsumerCfg(
            "render",
            0.0,
            render_tokens=None if tokens == "all" else tokens,
            qoe_ttft=qoe_ttft,
            qoe_rate=qoe_rate or 5.0,
        )

    # ------------------------------------------------------------------ steps
    def seq(self, steps, scope, path, name="") -> SeqNode:
        node = self.new_node(SeqNode, name, scope, path)
        node.steps = tuple(self.step(s, scope, (*path, i)) for i, s in enumerate(steps))
        for prev, step in zip(node.steps, node.steps[1:], strict=False):
            if isinstance(step, PipelineNode) and isinstance(prev, CallNode):
                step.call = prev
        return node

    def branch(self, branch, scope, path) -> SeqNode:
        if isinstance(branch, list):
            return self.seq(branch, scope, path)
        node = self.new_node(SeqNode, "", scope, path)
        node.steps = (self.step(branch, scope, path),)
        return node

    def step(self, step, scope, path) -> Node:
        from agentsim.model.scenario import step_name

        name = step_name(step)
        if name and not isinstance(step, CallStep):
            self._groups.append(name)
            try:
                return self._step(step, scope, path)
            finally:
                self._groups.pop()
        return self._step(step, scope, path)

    def _step(self, step, scope, path) -> Node:
        if isinstance(step, CallStep):
            return self.call(step, scope, path)
        if isinstance(step, ToolStep):
            t = step.tool
            p = (*path, "tool")
            node = self.new_node(ToolNode, t.name or f"tool{len(self.nodes)}", scope, p)
            node.latency = self.sampler(t.latency, (*p, "latency"), "tool latency", upper=MAX_SECONDS)
            node.output = self.sampler(t.output, (*p, "output"), "tool output tokens", upper=MAX_TOKENS)
            self.draw(node, LATENCY, scope, node.latency)
            self.draw(node, OUTPUT, scope, node.output, integer=True)
            return node
        if isinstance(step, WaitStep):
            w = step.wait
            p = (*path, "wait")
            node = self.new_node(WaitNode, w.name or f"wait{len(self.nodes)}", scope, p)
            node.latency = self.sampler(w.latency, (*p, "latency"), "wait latency", upper=MAX_SECONDS)
            self.draw(node, LATENCY, scope, node.latency)
            return node
        if isinstance(step, ParallelStep):
            spec = step.spec
            p = (*path, "parallel")
            bp = p if isinstance(step.parallel, list) else (*p, "branches")
            node = self.new_node(ParNode, spec.name or f"parallel{len(self.nodes)}", scope, p)
            self._branch_depth += 1
            node.branches = tuple(self.branch(b, scope, (*bp, i)) for i, b in enumerate(spec.branches))
            self._branch_depth -= 1
            node.k = _join_k(spec.join)
            return node
        if isinstance(step, FanoutStep):
            f = step.fanout
            p = (*path, "fanout")
            node = self.new_node(FanoutNode, f.name or f"fanout{len(self.nodes)}", scope, p)
            node.n = self.sampler(f.n, (*p, "n"), "fanout n")
            self.draw(node, COUNT, scope, node.n, integer=True)
            k = _join_k(f.join)
            node.join = "all" if k is None else k
            most = node.n.support[1]
            if isinstance(f.join, KJoin) and math.isfinite(most) and 1 <= round(most) < k:
                # as for parallel, whose k cannot exceed its branches
                self.problem(
                    (*p, "join", "k"),
                    f"join k={k} but there are at most {round(most)} copies (n)",
                    f"use a k from 1 to {max(1, round(most))}",
                )
            self._branch_depth += 1
            node.body = self.seq(f.steps, (*scope, node.id), (*p, "steps"))
            self._branch_depth -= 1
            return node
        if isinstance(step, RepeatStep):
            r = step.repeat
            p = (*path, "repeat")
            node = self.new_node(RepeatNode, r.name or f"repeat{len(self.nodes)}", scope, p)
            if isinstance(r.times, ByModelCount):  # samplers per variant, resolved once calls are known
                self._by_model.append((node, "times", r.times, (*p, "times")))
                self.draw(node, COUNT, scope, None)
            elif r.times is not None:
                node.times = self.sampler(r.times, (*p, "times"), "repeat times")
                self.draw(node, COUNT, scope, node.times, integer=True)
            else:
                node.max = r.max
                if isinstance(r.continue_p, ByModel):
                    self._by_model.append((node, "repeat", r.continue_p, (*p, "continue_p")))
                else:
                    node.continue_p = r.continue_p
                self.draw(node, COUNT, scope, None)
            node.body = self.seq(r.steps, (*scope, node.id), (*p, "steps"))
            return node
        if isinstance(step, ChooseStep):
            c = step.choose
            p = (*path, "choose")
            node = self.new_node(ChooseNode, c.name or f"choose{len(self.nodes)}", scope, p)
            import numpy as np  # a choice's cut points are arrays; validating a scenario without one needs no NumPy

            if any(isinstance(o.p, ByModel) for o in c.options):
                node.cum = np.zeros(len(c.options) - 1)  # replaced per variant (cums) once calls are known
                self._by_model.append((node, "choose", c, p))
            else:
                node.cum = np.cumsum([o.p for o in c.options])[:-1]
            self.draw(node, PICK, scope, None)
            node.options = tuple(
                self.seq(o.steps, scope, (*p, "options", i, "steps"), name=o.name or "")
                for i, o in enumerate(c.options)
            )
            return node
        if isinstance(step, PipelineStep):
            pl = step.pipeline
            p = (*path, "pipeline")
            node = self.new_node(PipelineNode, pl.name or f"pipeline{len(self.nodes)}", scope, p)
            if isinstance(pl.after, str):
                spec = pl.sentence_tokens if pl.sentence_tokens is not None else 20.0
                node.sentence = self.sampler(spec, (*p, "sentence_tokens"), "sentence tokens", positive=True)
            else:
                node.after_tokens = pl.after.tokens
            self._branch_depth += 1  # the steps run alongside the call's stream, as a branch does
            node.body = self.seq(pl.steps, scope, (*p, "steps"))
            self._branch_depth -= 1
            return node
        if isinstance(step, FailStep):
            f = step.fail
            p = (*path, "fail")
            node = self.new_node(FailNode, f.name or f"fail{len(self.nodes)}", scope, p)
            node.in_branch = self._branch_depth > 0
            if isinstance(f.p, ByModel):
                self._by_model.append((node, "fail", f.p, (*p, "p")))
            else:
                node.p = (float(f.p),) * len(self.variants)
            self.draw(node, FAIL, scope, None)
            return node
        if isinstance(step, SubagentStep):
            s = step.subagent
            p = (*path, "subagent")
            wf = self.sc.workflows[s.workflow]
            node = self.new_node(SubagentNode, s.name or s.workflow, scope, p)
            node.ctx = ContextCfg.from_spec(wf.context or ContextSpec())
            node.output = self.sampler(s.output, (*p, "output"), "subagent output tokens", upper=MAX_TOKENS)
            self.draw(node, OUTPUT, scope, node.output, integer=True)
            node.body = self.seq(wf.steps, scope, ("workflows", s.workflow, "steps"))
            return node
        raise AssertionError(type(step))  # pragma: no cover

    def call(self, step: CallStep, scope, path) -> CallNode:
        c = step.call
        p = (*path, "call")
        declared = c.model if c.model is not None else next(iter(self.sc.models))
        name = c.name or f"{declared}#{len(self.nodes)}"
        node = self.new_node(CallNode, name, scope, p)
        node.input = self.sampler(c.input, (*p, "input"), "input tokens", upper=MAX_TOKENS)
        node.output = self.sampler(c.output, (*p, "output"), "output tokens", upper=MAX_TOKENS)
        node.reasoning = self.sampler(c.reasoning, (*p, "reasoning"), "reasoning tokens", upper=MAX_TOKENS)
        tiers = []
        # Variant keys: the call's own name, then enclosing named steps (innermost first), then the model.
        names = ([c.name] if c.name else []) + self._groups[::-1]
        for vname, v in self.variants.items():
            vpath = ("variants", vname)
            model = declared
            by_name = next((n for n in names if n in v.model), None)
            if by_name is not None:
                model = v.model[by_name]
            elif declared in v.model:
                model = v.model[declared]
            speed, where = c.speed or "standard", (*p, "speed")
            by_name = next((n for n in names if n in v.speed), None)
            if by_name is not None:
                speed, where = v.speed[by_name], (*vpath, "speed", by_name)
            elif model in v.speed:
                speed, where = v.speed[model], (*vpath, "speed", model)
            elif c.speed is not None and model != declared:
                where = (*vpath, "model")
            t = self.tier(model, speed, where)
            tiers.append(t if t is not None else 0)
        node.tiers = tuple(tiers)
        self.draw(node, U_TTFT, scope, None)
        self.draw(node, U_TPS, scope, None)
        self.draw(node, INPUT, scope, node.input, integer=True)
        self.draw(node, OUTPUT, scope, node.output, integer=True)
        self.draw(node, REASONING, scope, node.reasoning, integer=True)
        own = c.consumer is not None
        node.consumer = self.consumer(
            c.consumer if own else self.sc.consumer, (*p, "consumer") if own else ("consumer",)
        )
        if node.consumer is None and c.interrupt is not None:
            node.consumer = ConsumerCfg("none", 0.0)  # an interruptible call still reports its stream
        if node.consumer is not None and node.consumer.first_audio is not None:
            self.draw(node, FIRST_AUDIO, scope, node.consumer.first_audio)
        if c.interrupt is not None:
            it, ip = c.interrupt, (*p, "interrupt")
            after = "first_token" if it.after_first_token is not None else "first_audio"
            spec = it.after_first_token if after == "first_token" else it.after_first_audio
            node.interrupt = InterruptCfg(it.p, after, self.sampler(spec, (*ip, f"after_{after}"), "interrupt delay"))
            self.draw(node, INTERRUPT_P, scope, None)
            self.draw(node, INTERRUPT_X, scope, node.interrupt.delay)
        return node


def _join_k(join) -> int | None:
    if join == "all":
        return None
    if join == "any":
        return 1
    assert isinstance(join, KJoin)
    return join.k


def compile_plan(scenario: Scenario, *, file: str | None = None, lines: dict | None = None) -> Plan:
    """Compile a validated scenario; raise :class:`ScenarioError` on problems found."""
    src = source_of(scenario)
    base_dir = Path(src).parent if src else None
    comp = _Compiler(scenario, base_dir)
    ctx = ContextCfg.from_spec(scenario.agent.context)
    for where, cspec in [(("agent",), scenario.agent.context)] + [
        (("workflows", w), wf.context) for w, wf in scenario.workflows.items() if wf.context is not None
    ]:
        if cspec.system > MAX_TOKENS:
            comp.problem(
                (*where, "context", "system"),
                f"{cspec.system:.3g} system tokens is above the limit of {MAX_TOKENS:.3g}",
                "check the value (a typo?)",
            )
    root = comp.seq(scenario.agent.steps, (), ("agent", "steps"), name="agent")
    _resolve_by_model(comp)
    # Every model must compile even if no step uses it (a typo in an unused price is still a typo).
    for model in scenario.models:
        comp.tier(model, "standard", ("models", model))
        for speed in scenario.models[model].speeds:
            comp.tier(model, speed, ("models", model, "speeds", speed))
    accounts = _compile_accounts(comp, scenario)
    _stall_draws(comp)
    workload = _compile_workload(comp, scenario)
    if workload is not None and workload.kind == "closed":
        from agentsim.plan.sizeguard import zero_time_reason

        zero = zero_time_reason(root, comp.tiers, workload.think)
        if zero:
            comp.problem(
                ("workload", "concurrent"),
                f"a run of this agent can take no simulated time ({zero}), so the closed workload's agents "
                "would start run after run at the same instant and the simulation would never end",
                "give the agent a step that takes time, or a workload.think_time above zero",
            )
    conditions = _compile_conditions(comp, scenario)
    _attempt_draws(comp, accounts)
    if comp.problems:
        file = file or src or "<scenario>"
        lines = lines or {}
        seen, items = set(), []
        for p in comp.problems:
            if (p.path, p.message) in seen:
                continue
            seen.add((p.path, p.message))
            items.append(ErrorItem(file, line_of(lines, p.path), p.path, p.message, p.hint))
        raise ScenarioError(items)
    specs = [s for m in scenario.models.values() for s in (m.price, *(t.price for t in m.speeds.values()))]
    as_of = comp.prices_as_of if needs_default_date(specs) else scenario.prices_as_of
    return Plan(
        scenario,
        root,
        ctx,
        comp.tiers,
        list(comp.variants),
        comp.nodes,
        comp.draws,
        accounts,
        workload,
        as_of,
        conditions,
        compile_time_of_day(scenario),
    )


def _compile_conditions(comp: _Compiler, scenario: Scenario) -> dict[str, int]:
    """Per-run provider-condition factors: one pseudo-node per model with ``conditions`` (after all real
    nodes and the workload's pseudo-node), drawn with scope () so each run has one factor per model."""
    out: dict[str, int] = {}
    for i, (model, mspec) in enumerate(scenario.models.items()):
        cond = mspec.conditions
        if cond is None:
            continue
        node = len(comp.nodes) + 1 + i
        where = ("models", model, "conditions")
        ttft_x = comp.sampler(cond.ttft_x, (*where, "ttft_x"), "conditions ttft_x", positive=True)
        tps_x = comp.sampler(cond.output_tps_x, (*where, "output_tps_x"), "conditions output_tps_x", positive=True)
        comp.draws.append(Draw(node, COND_TTFT, (), ttft_x))
        comp.draws.append(Draw(node, COND_TPS, (), tps_x))
        out[model] = node
    return out


def _resolve_by_model(comp: _Compiler) -> None:
    """Turn every ``{by: CALL, MODEL: p}`` probability into one value per variant.

    The named call's tier in each variant picks the value: a ``MODEL@TIER`` key first, then
    ``MODEL``, then ``default``. Every problem (an unknown call, model or tier, a missing value,
    choose options that do not sum to 1 in some variant) is reported with its dotted path.
    """
    from agentsim.model.scenario import suggest

    calls: dict[str, list[CallNode]] = {}
    for n in comp.nodes:
        if isinstance(n, CallNode):
            calls.setdefault(n.name, []).append(n)
    models = comp.sc.models
    nv = len(comp.variants)

    def values(spec, path) -> tuple | None:
        """The value per variant (a probability; for a ByModelCount, the number or distribution given)."""
        if not isinstance(spec, ByModel | ByModelCount):
            return (float(spec),) * nv
        as_value = float if isinstance(spec, ByModel) else (lambda x: x)
        ok = True
        for key in spec.table:
            model, _, tier = key.partition("@")
            if model not in models:
                comp.problem(
                    (*path, key),
                    f"'{key}' is not a model defined under models",
                    suggest(model, list(models)) or "models: " + ", ".join(models),
                )
                ok = False
            elif tier and tier != "standard" and tier not in models[model].speeds:
                tiers = ["standard", *models[model].speeds]
                comp.problem(
                    (*path, key),
                    f"model '{model}' has no speed tier '{tier}'",
                    suggest(tier, tiers) or "its tiers: " + ", ".join(tiers),
                )
                ok = False
        named = calls.get(spec.by, [])
        if not named:
            comp.problem(
                (*path, "by"),
                f"no call is named '{spec.by}'",
                suggest(spec.by, [k for k in calls if "#" not in k]) or "name the call whose model decides this value",
            )
            return None
        if not ok:
            return None
        out = []
        for v, vname in enumerate(comp.variants):
            found = []
            for node in named:
                t = comp.tiers[node.tiers[v]]
                for key in (f"{t.model}@{t.speed}", t.model):
                    if key in spec.table:
                        found.append(as_value(spec.table[key]))
                        break
                else:
                    if spec.default is None:
                        comp.problem(
                            path,
                            f"no value for model '{t.label}': call '{spec.by}' runs on it in variant '{vname}'",
                            f"add '{t.model}: P' (or '{t.model}@{t.speed}: P') or 'default: P'",
                        )
                        return None
                    found.append(as_value(spec.default))
            if any(x != found[0] for x in found):
                comp.problem(
                    (*path, "by"),
                    f"the calls named '{spec.by}' run on models with different values in variant '{vname}'",
                    "give those calls distinct names and refer to one of them",
                )
                return None
            out.append(found[0])
        return tuple(out)

    for node, kind, spec, path in comp._by_model:
        if kind == "fail":
            p = values(spec, path)
            node.p = p if p is not None else (0.0,) * nv
        elif kind == "times":
            counts = values(spec, path)
            if counts is None:
                node.times_by = (Sampler("constant", {"value": 1.0}),) * nv
            else:
                made: list[tuple] = []  # one sampler per distinct value, shared by the variants that use it
                for c in counts:
                    if not any(c == x for x, _ in made):
                        made.append((c, comp.sampler(c, path, "repeat times")))
                node.times_by = tuple(next(s for x, s in made if x == c) for c in counts)
            node.times = node.times_by[0]
        elif kind == "repeat":
            ps = values(spec, path)
            if ps is None:
                continue
            for v, p in enumerate(ps):
                if p >= 1 and node.max is None:
                    comp.problem(
                        path,
                        f"this repeat can never end in variant '{list(comp.variants)[v]}': "
                        f"continue_p is {p:g} and there is no max",
                        "set continue_p below 1 or add max",
                    )
            node.continue_ps = ps
            node.continue_p = ps[0]
        else:  # choose
            import numpy as np  # imported with the choose step already

            per_option = [values(o.p, (*path, "options", i, "p")) for i, o in enumerate(spec.options)]
            if any(p is None for p in per_option):
                continue
            cums = []
            for v, vname in enumerate(comp.variants):
                ps = [p[v] for p in per_option]
                total = math.fsum(ps)
                if abs(total - 1.0) > 1e-9:
                    comp.problem(
                        (*path, "options"),
                        f"option probabilities sum to {total:.6g}, not 1, in variant '{vname}'",
                        "make the options' p sum to 1 for every model the named call can run on",
                    )
                cums.append(np.cumsum(ps)[:-1])
            node.cums = tuple(cums)
            node.cum = cums[0]


def _compile_accounts(comp: _Compiler, scenario: Scenario) -> list:
    """Account specs, and each tier's accounts (``opus`` covers every tier of opus, ``opus@fast`` one)."""
    from agentsim.model.scenario import suggest

    if scenario.limits:  # agentsim.plan.limits imports SimPy: not for a scenario without limits
        from agentsim.plan.limits import AccountSpec

    accounts = []
    member: dict[int, list[int]] = {t.index: [] for t in comp.tiers}
    for name, spec in (scenario.limits or {}).items():
        idx = len(accounts)
        accounts.append(
            AccountSpec(
                idx,
                name,
                spec.concurrency,
                spec.rpm,
                spec.input_tpm,
                spec.output_tpm,
                spec.policy,
                spec.count_cache_reads,
            )
        )
        if spec.concurrency is None and spec.rpm is None and spec.input_tpm is None and spec.output_tpm is None:
            comp.problem(
                ("limits", name),
                "this account sets no limit",
                "give at least one of concurrency, rpm, input_tpm, output_tpm",
            )
        for i, ref in enumerate(spec.models):
            model, _, tier = ref.partition("@")
            where = ("limits", name, "models", i)
            if model not in scenario.models:
                comp.problem(
                    where,
                    f"model '{model}' is not defined under models",
                    suggest(model, list(scenario.models)) or "defined: " + ", ".join(scenario.models),
                )
                continue
            tiers = ["standard", *scenario.models[model].speeds]
            if tier and tier not in tiers:
                comp.problem(
                    where,
                    f"model '{model}' has no speed tier '{tier}'",
                    suggest(tier, tiers) or "its tiers: " + ", ".join(tiers),
                )
                continue
            for t in comp.tiers:
                if t.model == model and (not tier or t.speed == tier):
                    member[t.index].append(idx)
    for t in list(comp.tiers):
        comp.tiers[t.index] = replace(t, accounts=tuple(sorted(set(member.get(t.index, ())))))
    return accounts


def _compile_workload(comp: _Compiler, scenario: Scenario) -> WorkloadCfg | None:
    wl = scenario.workload
    if wl is None or not wl.simulates_many:
        return None
    node = len(comp.nodes)  # a pseudo-node after all real ones keys the workload's own draws
    duration = wl.duration.total_seconds
    warmup = wl.warmup.total_seconds if wl.warmup is not None else 0.0
    if warmup >= duration:
        comp.problem(
            ("workload", "warmup"),
            f"warmup ({warmup:g} s) is not shorter than duration ({duration:g} s)",
            "shorten warmup or lengthen duration",
        )
    think = None
    if wl.arrivals is not None:
        from agentsim.plan.distributions import Sampler

        rate = wl.arrivals.per_hour / 3600.0
        gap = Sampler("exponential", {"mean": 1.0 / rate})
        comp.draws.append(Draw(node, ARRIVAL, (), gap))
        return WorkloadCfg(node, "open", rate, None, None, duration, warmup)
    if wl.think_time is not None:
        think = comp.sampler(wl.think_time, ("workload", "think_time"), "think time")
        comp.draws.append(Draw(node, THINK, (), think))
    return WorkloadCfg(node, "closed", None, wl.concurrent, think, duration, warmup)


def _attempt_draws(comp: _Compiler, accounts: list) -> None:
    """Per call and attempt: a draw deciding a server error, and one for back-off jitter."""
    tiers = comp.tiers
    if not accounts and not any(t.error_rate > 0 or t.timeout_s is not None for t in tiers):
        return
    for node in comp.nodes:
        if not isinstance(node, CallNode):
            continue
        attempts = 1
        for t in node.tiers:
            attempts = max(attempts, tiers[t].max_attempts)
            if tiers[t].fallback is not None:
                attempts = max(attempts, tiers[tiers[t].fallback].max_attempts)
        comp.draws.append(Draw(node.id, U_ERROR, node.scope, None, extra=(attempts,)))
        comp.draws.append(Draw(node.id, U_JITTER, node.scope, None, extra=(attempts,)))


def _stall_draws(comp: _Compiler) -> None:
    """Per call whose tier can stall: whether (STALL_P), how long (STALL_S) and after which token (STALL_AT)."""
    tiers = comp.tiers
    for node in comp.nodes:
        if not isinstance(node, CallNode):
            continue
        used = set(node.tiers) | {tiers[t].fallback for t in node.tiers if tiers[t].fallback is not None}
        if any(tiers[t].stream is not None and tiers[t].stream.stall_p > 0 for t in used):
            for purpose in (STALL_P, STALL_S, STALL_AT):
                comp.draws.append(Draw(node.id, purpose, node.scope, None))

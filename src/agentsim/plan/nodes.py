"""What a compiled plan is made of: nodes, draws, tiers, and the plan itself.

A plan is a tree of numbered **nodes** (pre-order ids), one per step, that both engines execute.
:class:`Node` is the base every step kind's node derives from (their classes live with their kinds,
in :mod:`agentsim.steps`); it declares, with defaults, what every reader of the tree asks a node
instead of asking which kind it is:

* :meth:`Node.children` -- the nodes directly inside it (the one walk of the tree);
* ``record`` -- ``"call"`` or ``"span"`` when its instances are rows of the calls or spans table;
* ``axis`` -- :data:`IN_TURN` or :data:`AT_ONCE` when it gives its body an instance axis (iterations made
  one after another: a repeat's; or copies made at once: a fan-out's), with :meth:`Node.count_bounds` for
  the size guard and its count drawn as purpose ``COUNT`` with ``counts=True``;
* ``lanes`` -- whether each child runs beside the others (a lane of its own in the timeline);
* ``own_context`` -- the context its children run in, when it starts a fresh one (a subagent);
* ``ends_runs`` -- whether it can end a run as failed (the summary then reports success);
* ``follows_call`` -- whether it starts on the partial output of the call just before it (then
  :meth:`Node.starts_on` says when, and :meth:`Node.token_draws` what it draws to know);
* ``slot`` -- the breakdown slot its own time goes to (``tool``, ``wait``, ``listen``);
* ``keeps_start`` -- whether the engines keep each instance's start (a listen: the end of the user's speech);
* ``turn`` -- whether each instance of its body is a turn of the person's conversation: the engines keep
  how long each took (``BlockResult.turns``), which the runs table sums to what the person waited;
* :meth:`Node.can_take_time` / :meth:`Node.mean_time_lower` -- the size guard's bounds on time;
* :meth:`Node.des_reason` / :meth:`Node.summary_only_reason` -- why the fast path cannot run it, or
  must keep every call of it.

A :class:`Draw` is one sampled quantity of a node: ``(node, purpose)`` keys its random stream (see
:mod:`agentsim.plan.sampling`), so a purpose need only be unique within its node; the shared ones are
numbered here and never renumbered. A :class:`Tier` is a model at one speed tier.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from agentsim.model.scenario import ContextSpec, Scenario
from agentsim.plan.context_speed import ContextSpeed
from agentsim.plan.distributions import Sampler
from agentsim.pricing.rates import Rates

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "AT_ONCE",
    "IN_TURN",
    "ConsumerCfg",
    "ContextCfg",
    "Draw",
    "InterruptCfg",
    "Node",
    "Plan",
    "SeqNode",
    "StreamCfg",
    "Tier",
    "WorkloadCfg",
]

TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
IN_TURN, AT_ONCE = "in_turn", "at_once"  # a node's instance axis: iterations one after another, or copies at once
MAX_TOKENS = 1e8  # tokens in one call, tool output or context: beyond it a value is a typo (and int64 is near)
MAX_SECONDS = 10 * 365.25 * 86400.0  # a latency beyond 10 years is a typo

# What a draw is for; part of the random-stream key, so never renumber.
U_TTFT, U_TPS, INPUT, OUTPUT, REASONING, LATENCY, COUNT, PICK, ARRIVAL, THINK, U_ERROR, U_JITTER = range(12)
# Streaming (contract v1.1), appended after the v1 purposes. Per call: whether and how long its stream stalls and
# after which token (raw normals), whether and when it is interrupted, its text-to-speech first-audio latency.
# CHUNKS, GAPS and SENTENCES key the per-token streams of agentsim.sim.streaming (not drawn by sample_block).
STALL_P, STALL_S, STALL_AT, INTERRUPT_P, INTERRUPT_X, FIRST_AUDIO, CHUNKS, GAPS, SENTENCES = range(12, 21)
FAIL, COND_TTFT, COND_TPS = 21, 22, 23  # a fail step's uniform; a model's per-run condition factors
# A stall process (contract v1.2; listen steps use 24 and 25 on their own nodes): per instance slot, the
# k-th row of STALL_GAPS places a call's k-th stall (chunks or tokens after the previous one, geometric) and
# the k-th row of STALL_LENS is its length; token-major, like CHUNKS (not drawn by sample_block).
STALL_GAPS, STALL_LENS = 26, 27


@dataclass(frozen=True)
class StreamCfg:
    """A tier's stream description (see agentsim.sim.streaming): chunk sizes, gap jitter, stalls."""

    chunk: Sampler  # tokens per delivered chunk, drawn per chunk
    jitter_cv: float
    stall_p: float  # the stall form's probability (per call, per chunk or per token; 1 for a schedule)
    stall_s: Sampler  # seconds of a stall, drawn per stall (from raw normals)
    stall_form: str = "once"  # "once" (one stall with probability stall_p), "per_chunk", "per_token", "at_chunks"
    stall_at: tuple[int, ...] = ()  # at_chunks: the chunks (1-based) before which the stream stalls

    @property
    def stall_process(self) -> bool:
        """Whether stalls follow a process along the stream (any number per call), not one per call."""
        return self.stall_form != "once" and self.stall_p > 0


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
    context_speed: ContextSpeed | None = None  # factors by context size (agentsim.plan.context_speed)

    @property
    def label(self) -> str:
        return self.model if self.speed == "standard" else f"{self.model}@{self.speed}"


@dataclass(frozen=True)
class ConsumerCfg:
    """Who consumes a call's streamed answer: the base of each consumer kind's compiled form (its module in
    agentsim.consumers adds its own fields). It declares, with defaults, what the readers of a call ask a
    consumer instead of asking which kind it is (:meth:`sentences`, :meth:`token_draws`)."""

    kind: str  # the consumer kind's name, or "none" (no consumer, but interruptible: the common metrics)
    rate: float  # tokens/s it consumes at (a reading pace, a speaking rate); 0 for none
    qoe_ttft: float = 1.0  # expected TTFT of the Andes QoE
    qoe_rate: float = 5.0  # expected pace (tokens/s) of the Andes QoE

    def sentences(self) -> Sampler | None:
        """The sentence lengths (tokens, drawn per sentence) it cuts the answer into, or None (a pipeline after
        the call that starts on the first sentence uses these, keyed by the call, else its own)."""
        return None

    def token_draws(self) -> int:
        """How many per-token random matrices (runs x tokens) it draws per instance (the size guard counts them)."""
        return 0


@dataclass(frozen=True)
class InterruptCfg:
    p: float
    after: str  # "first_token", "first_word" (the same instant: the first visible token delivered) or "first_audio"
    delay: Sampler


@dataclass(frozen=True)
class ContextCfg:
    system: int
    grows: bool
    cache: bool
    ttl_s: float
    per_model: bool = False  # cache entries per (model, tier) instead of per context
    compact_above: int | None = None  # compaction: past this many tokens the context becomes compact_to tokens
    compact_to: int = 0

    @classmethod
    def from_spec(cls, spec: ContextSpec) -> ContextCfg:
        c = spec.compact
        return cls(
            spec.system,
            spec.grows,
            spec.cache_on,
            TTL_SECONDS[spec.cache_ttl or "5m"],
            spec.cache_per_model,
            c.above if c is not None else None,
            c.to if c is not None else 0,
        )


def can_be_positive(s: Sampler | None) -> bool:
    """Whether a draw of ``s`` can be above zero (a step lasting ``s`` seconds can take time)."""
    return s is not None and s.support[1] > 0


def count_bounds_of(s: Sampler) -> tuple[float, float]:
    """(mean, largest) of a count drawn from ``s`` (rounded; an unbounded one: its 1 - 1e-9 quantile)."""
    _, hi = s.support
    if not math.isfinite(hi):
        import numpy as np

        hi = float(s.ppf(np.array([1 - 1e-9]))[0])
    try:
        mean = s.mean
    except Exception:  # pragma: no cover - a mean that does not integrate: the largest count bounds it
        mean = hi
    return max(0.0, float(mean)), max(0.0, float(round(hi)) if math.isfinite(hi) else math.inf)


@dataclass(eq=False)
class Node:
    """A step of the plan (see the module doc for what each attribute tells the readers of the tree)."""

    id: int
    name: str
    scope: tuple[int, ...]  # ids of the enclosing repeat/fanout nodes, outermost first
    path: tuple = ()

    kind: ClassVar[str] = "node"
    record: ClassVar[str | None] = None  # "call" or "span": its instances are rows of the calls or spans table
    axis: ClassVar[str | None] = None  # IN_TURN or AT_ONCE: it gives its body an instance axis
    lanes: ClassVar[bool] = False  # each child runs beside the others (a lane of its own in the timeline)
    own_context: ClassVar[ContextCfg | None] = None  # the fresh context its children run in (a subagent's)
    ends_runs: ClassVar[bool] = False  # it can end a run as failed
    follows_call: ClassVar[bool] = False  # it starts on the partial output of the call just before it
    slot: ClassVar[str | None] = None  # the breakdown slot its own time goes to (agentsim.sim.slots)
    keeps_start: ClassVar[bool] = False  # a span whose start the engines keep per run (BlockResult.starts)
    turn: ClassVar[bool] = False  # each body instance is a turn of the person's: its duration is kept

    def children(self) -> tuple[Node, ...]:
        """The nodes directly inside this one, in order (the one walk every tree reader uses)."""
        return ()

    def count_bounds(self) -> tuple[float, float]:
        """(mean, largest) number of instances of its body per instance of itself (nodes with an axis)."""
        return 1.0, 1.0

    def can_take_time(self, tiers: list[Tier]) -> bool:
        """Whether some run of this node can take simulated time (the size guard's closed-loop check)."""
        return any(child.can_take_time(tiers) for child in self.children())

    def mean_time_lower(self, tiers: list[Tier]) -> float:
        """A lower bound of the mean simulated time of this node without queueing (0: no cheap bound)."""
        return 0.0

    def des_reason(self) -> str:
        """Why the fast path cannot run a plan with this node ('' when it can)."""
        return ""

    def summary_only_reason(self) -> str:
        """Why the fast path must keep per-call tensors for this node even for a summary ('' when not)."""
        return ""

    def starts_on(self, slot: Any, stream: Any, cut: Any = None) -> Any:
        """A node that ``follows_call``: when it starts in each call of ``slot`` (an array, absolute seconds), from
        the call's token ``stream`` (agentsim.sim.streaming.StreamBatch) and where it is ``cut`` (``inf``: not)."""
        raise NotImplementedError(f"a {self.kind} node does not start on a call's stream")

    def token_draws(self) -> int:
        """A node that ``follows_call``: the per-token random matrices it draws on the call's stream per instance."""
        return 0


@dataclass(eq=False)
class SeqNode(Node):
    """Steps run one after the other (an agent's steps, a branch, a repeat's body...)."""

    steps: tuple[Node, ...] = ()
    kind: ClassVar[str] = "seq"

    def children(self) -> tuple[Node, ...]:
        return self.steps

    def mean_time_lower(self, tiers: list[Tier]) -> float:
        return sum(s.mean_time_lower(tiers) for s in self.steps)


@dataclass(slots=True)
class Draw:
    """One sampled quantity of a node: a stream of its own, an array per block.

    ``sampler`` turns the stream's standard normals into values; without one, ``transform`` does
    (``transform(z, variant_values)``: see :func:`agentsim.plan.sampling.sample_block`), and without
    either the raw normals are kept (TTFT, TPS: transformed per variant).
    """

    node: int
    purpose: int
    scope: tuple[int, ...]
    sampler: Sampler | None  # None: `transform`, or the raw normals
    integer: bool = False
    extra: tuple[int, ...] = ()  # trailing axes of fixed size (e.g. attempts of a call)
    transform: Callable | None = None  # (z, per-variant arrays out) -> values, when there is no sampler
    counts: bool = False  # the values are the instance counts of the node's axis (a repeat's, a fanout's)
    late: bool = False  # drawn when first read (agentsim.plan.sampling.late_draw), not with its block


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
    inputs: tuple = ()  # files the compile read (empirical CSV files), as Paths
    memo: dict = field(default_factory=dict, repr=False, compare=False)  # what is worked out from it once

    def __post_init__(self) -> None:
        self.calls: list[Any] = [n for n in self.nodes if n.record == "call"]
        self.spans: list[Node] = [n for n in self.nodes if n.record == "span"]
        self.turn_nodes: list[Node] = [n for n in self.nodes if n.turn]

    @property
    def defines_success(self) -> bool:
        """Whether runs can fail by design (a ``fail`` step), so success is reported."""
        return any(n.ends_runs for n in self.nodes)

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

    def nodes_of(self, kind: str) -> list[Node]:
        """The nodes of one step kind (``plan.nodes_of("listen")``)."""
        return [n for n in self.nodes if n.kind == kind]

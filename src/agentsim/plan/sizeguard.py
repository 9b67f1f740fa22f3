"""Size guards: what a simulation will cost, estimated before any work starts, and refused when absurd.

A scenario can ask for more than any machine can give — ``runs: 10^12``, a repeat of
``10^9`` iterations, ``10^9`` arrivals per hour, ten million concurrent agents —, or for
something that never ends: a closed workload whose runs can take no simulated time
(every agent starts its next run at the same instant, forever). Without a guard these
run with no progress until the memory is gone.

:func:`check_plan` estimates, from the compiled plan alone (no draw is made):

* **work**: simulated model calls and the other step instances (tools, waits, listens, fail
  steps, the copies of a fan-out's body...), all variants together: the expected instances of one
  run (the product of the mean counts of the ``repeat``/``fanout`` steps around each node)
  x runs x variants; for a workload, runs are what the arrivals or agents can start in the
  simulated window and its drain (up to twice the duration);
* **memory**: the runs table (one row per run and variant) plus the largest block of records
  and draws held at once: every node's instances (the *largest* counts of the repeats and
  fanouts around it, not their means, size the arrays), a call's at :data:`BYTES_PER_CALL`,
  any other step's at :data:`BYTES_PER_STEP`.

* **streamed answers**: a call whose answer is followed token by token (a consumer, an interruption, a
  pipeline after it, or a stall process on its model) builds per-token matrices (calls x tokens) and
  per-token random numbers (a block's runs x tokens, kept per instance slot: :mod:`agentsim.sim.stream_draws`).
  :func:`streamed_calls` finds them with the largest answer each can give (its output's practical
  maximum: the support's top, or the 1 - 1e-12 quantile). One such answer may hold at most
  :data:`MAX_STREAMED_TOKENS` tokens (the compiler refuses more, at the call's ``output``); the tokens
  streamed over the whole simulation count as work (at most :data:`DEFAULT_MAX_STREAMED_TOKENS`), and
  the draws kept and the matrices of one batch count as memory.

Past the limits (:data:`DEFAULT_MAX_CALLS` calls, a share of the machine's memory) it
raises :class:`SizeError` naming the estimate and the way out (fewer runs, or the CLI's
``--max-calls N`` / ``--no-size-limit``). A closed workload whose runs always take zero
simulated time is refused outright (no limit makes it end), and every workload also
stops with a :class:`SizeError` if it starts more runs than its limit allows (a run
that takes almost no time cannot be estimated up front).

The limits live in this module (:func:`set_limits`, :func:`limits`), so that every
command and worker process sees the same ones without threading them through every
function signature.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

__all__ = [
    "DEFAULT_MAX_CALLS",
    "DEFAULT_MAX_STREAMED_TOKENS",
    "MAX_STREAMED_TOKENS",
    "Estimate",
    "SizeError",
    "SizeLimits",
    "Streamed",
    "check_plan",
    "des_stream_bytes",
    "estimate",
    "limits",
    "runs_per_block",
    "set_limits",
    "size_limits",
    "streamed_calls",
    "tiers_of",
]

DEFAULT_MAX_CALLS = 2_000_000_000  # simulated calls, all variants (the bundled benchmarks use < 2e8)
DEFAULT_MAX_DES_CALLS = 20_000_000  # the same on the discrete-event engine (~10^4-10^5 calls/s)
BYTES_PER_CALL = 512  # call records, draws and the DES's per-run lists, per call instance held at once
BYTES_PER_STEP = 128  # the same for any other step instance (a span's record, its draws; a count, a pick)
BYTES_PER_RUN = 160  # one row of the runs table (17 columns)
BLOCK = 4096  # runs per block (agentsim.plan.sampling.BLOCK_SIZE; not imported to keep this module light)
BLOCK_BYTES = 4 * 2**30  # the records one block may hold before blocks get fewer runs (runs_per_block)
MAX_STREAMED_TOKENS = 1_000_000  # visible tokens one streamed answer may reach (8x the longest output sold in 2026)
DEFAULT_MAX_STREAMED_TOKENS = 1_000_000_000  # tokens streamed over a simulation, all variants (~1-2 us each)
STREAM_BATCH = 1 << 21  # calls x tokens of one batch (agentsim.sim.streaming.BATCH_ELEMENTS)
STREAM_MATRICES = 24  # calls x tokens matrices of 8 bytes alive at once while a batch is streamed and measured


class SizeError(ValueError):
    """A simulation refused before it starts (or stopped) because it would not end in reasonable time or memory."""


@dataclass(frozen=True)
class SizeLimits:
    max_calls: float = DEFAULT_MAX_CALLS
    max_des_calls: float = DEFAULT_MAX_DES_CALLS
    max_streamed: float = DEFAULT_MAX_STREAMED_TOKENS
    max_bytes: float | None = None  # None: 3/4 of the machine's memory
    enabled: bool = True


_limits = SizeLimits()


def limits() -> SizeLimits:
    return _limits


def set_limits(new: SizeLimits) -> None:
    global _limits
    _limits = new


@contextmanager
def size_limits(max_calls: float | None = None, no_limit: bool = False) -> Iterator[SizeLimits]:
    """Use other limits inside a ``with`` block (the CLI's ``--max-calls`` and ``--no-size-limit``)."""
    old = _limits
    new = SizeLimits(
        max_calls=old.max_calls if max_calls is None else max_calls,
        max_des_calls=old.max_des_calls if max_calls is None else max_calls,
        max_streamed=old.max_streamed,
        max_bytes=old.max_bytes,
        enabled=old.enabled and not no_limit,
    )
    set_limits(new)
    try:
        yield new
    finally:
        set_limits(old)


def _machine_bytes() -> float:
    """3/4 of the machine's memory, or of this process's address-space limit (ulimit -v) if lower."""
    try:
        total = float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        total = 16 * 2.0**30
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            total = min(total, float(soft) - 400 * 2.0**20)  # what Python and its libraries take already
    except (ImportError, ValueError, OSError):  # pragma: no cover - not POSIX
        pass
    return max(total, 0.0) * 0.75


@dataclass(frozen=True)
class Estimate:
    calls: float  # simulated calls, all variants
    bytes: float  # peak memory of the records
    runs: float  # runs simulated, all variants
    calls_per_run: float  # expected calls of one run
    max_calls_per_run: float  # largest number of call instances of one run
    steps: float = 0.0  # simulated instances of the other steps (tools, waits, ...), all variants
    max_steps_per_run: float = 0.0  # largest number of instances of the other steps of one run
    streamed_tokens: float = 0.0  # visible tokens of streamed answers, all variants (expected)
    stream_bytes: float = 0.0  # of ``bytes``: the per-token draws kept and one batch's matrices
    largest_stream: Streamed | None = None  # the streamed call with the largest answer


@dataclass(frozen=True)
class Streamed:
    """A call whose answer is followed token by token (see the module doc)."""

    node: object
    top: float  # the most visible tokens its answer can have (the output's practical maximum)
    mean: float  # the visible tokens it has on average
    draws: int  # per-token random matrices (runs x tokens) kept for each instance: jitter, chunks, stalls, sentences
    why: str  # what makes it streamed, for messages
    live: bool = False  # the DES streams it while the run goes on (an interrupt, or a pipeline after it)


def streamed_calls(nodes, tiers) -> list[Streamed]:
    """The calls whose answers the engines follow token by token, and what each needs (see the module doc)."""
    from agentsim.plan.distributions import practical_max

    after = {n.call.id: n for n in nodes if n.follows_call and getattr(n, "call", None) is not None}
    out = []
    streams_of: dict[tuple, list] = {}  # the streams of a set of tiers (calls share a few sets), found once
    for node in nodes:
        if node.record != "call":
            continue
        key = tuple(node.tiers)
        streams = streams_of.get(key)
        if streams is None:
            streams = streams_of[key] = [tiers[t].stream for t in tiers_of(node, tiers) if tiers[t].stream is not None]
        pipe = after.get(node.id)
        consumer = getattr(node, "consumer", None)
        why = [
            w
            for w, on in (
                ("a consumer", consumer is not None and consumer.kind != "none"),
                ("an interrupt", getattr(node, "interrupt", None) is not None),
                ("a pipeline after it", pipe is not None),
                ("a stall process on its model", any(st.stall_process for st in streams)),
            )
            if on
        ]
        if why:
            top, mean = practical_max(node.output), _mean_bound(node.output)
            followed = why[0] != "a stall process on its model"  # its token timeline is built, not only its stalls
            live = getattr(node, "interrupt", None) is not None or pipe is not None
            out.append(Streamed(node, top, mean, _draws(node, streams, pipe, followed), " and ".join(why), live))
    return out


def _mean_bound(s) -> float:
    """A draw's mean, or for a clipped continuous one an upper bound without integrating (the guard's estimate):
    ``E[clip(X, lo, hi)] <= min(hi, E[X] + max(lo, 0))`` for ``X >= 0`` (tokens)."""
    if (s.lo is None and s.hi is None) or s.family in ("constant", "choice", "empirical"):
        return max(s.mean, 0.0)
    bound = replace(s, lo=None, hi=None).mean + max(s.lo or 0.0, 0.0)
    return max(min(bound, s.hi if s.hi is not None else math.inf), 0.0)


def tiers_of(node, tiers) -> set[int]:
    """The tiers a call can run on: its variants' tiers and the fallbacks they lead to."""
    todo, seen = list(node.tiers), set()
    while todo:
        t = todo.pop()
        if t not in seen:
            seen.add(t)
            if tiers[t].fallback is not None:
                todo.append(tiers[t].fallback)
    return seen


def _draws(node, streams, pipe, followed: bool) -> int:
    """How many per-token random matrices one instance of a streamed call can keep (stream_draws purposes):
        gap weights and chunk sizes when its token timeline is built (``followed``), chunk sizes for a stall process
        by chunk, the places and lengths of a stall process, and what its consumer and the step after it draw
    (``token_draws``: sentence lengths)."""
    n = sum(
        (
            followed and any(st.jitter_cv > 0 for st in streams),
            any(
                not st.chunk.is_constant and (followed or (st.stall_process and st.stall_form != "per_token"))
                for st in streams
            ),
            any(st.stall_process and st.stall_p < 1 and st.stall_form != "at_chunks" for st in streams),
            any(st.stall_process and not st.stall_s.is_constant for st in streams),
        )
    )
    consumer = getattr(node, "consumer", None)
    n += consumer.token_draws() if consumer is not None else 0  # a voice's sentence lengths
    n += pipe.token_draws() if pipe is not None else 0  # a pipeline's own sentence lengths
    return int(n)


def runs_per_block(plan) -> int:
    """Runs per block: :data:`BLOCK`, or a power of two fewer (at least 1) when a block of that many runs, each
    holding its largest number of step instances, would need more than :data:`BLOCK_BYTES` (a long
    conversation: turns of many steps). It depends on the plan alone, so the blocks, and with them every
    draw, are the same on any machine and with any number of workers."""
    found = _instances(plan)
    largest = sum(big for _, big in found.calls.values())
    per_run = largest * BYTES_PER_CALL + found.steps_largest * BYTES_PER_STEP
    size = BLOCK
    while size > 1 and size * per_run > BLOCK_BYTES:
        size //= 2
    return size


@dataclass
class _Instances:
    calls: dict  # call node -> (mean, largest) instances in one run
    steps_per_run: float  # mean instances of the other leaf steps of one run
    steps_largest: float  # largest instances of the other steps (leaves and containers) of one run


def _streamed_of(plan) -> list[Streamed]:
    """:func:`streamed_calls` of a compiled plan, worked out once (the plan's ``memo``)."""
    found = plan.memo.get("streamed_calls")
    if found is None:
        found = plan.memo["streamed_calls"] = streamed_calls(plan.nodes, plan.tiers)
    return found


def _instances(plan) -> _Instances:
    """Instances of every node in one run (see :func:`estimate`), worked out once (the plan's ``memo``)."""
    found = plan.memo.get("instances")
    if found is None:
        found = plan.memo["instances"] = _count_instances(plan)
    return found


def _count_instances(plan) -> _Instances:
    counts = {n.id: n.count_bounds() for n in plan.nodes if n.axis is not None}
    out = _Instances({}, 0.0, 0.0)
    for node in plan.nodes:
        if node.kind == "seq":
            continue  # a sequence is its steps
        mean = big = 1.0
        for m in node.scope:
            mean *= counts[m][0]
            big *= counts[m][1]
        if node.record == "call":
            out.calls[node.id] = (mean, big)
        else:  # held in memory (its draws: a count, a pick...); work when it is a leaf (a tool, a wait...)
            out.steps_per_run += 0.0 if node.children() else mean
            out.steps_largest += big
    return out


def estimate(plan, runs: int, des: bool = True) -> Estimate:
    """Calls, runs and memory a simulation of ``plan`` with ``runs`` runs per variant needs (see module doc;
    ``des``: on the discrete-event engine)."""
    found = _instances(plan)
    instances = found.calls  # call node -> (mean, largest) instances in one run
    per_run = sum(mean for mean, _ in instances.values())
    largest = sum(big for _, big in instances.values())
    steps_per_run, steps_largest = found.steps_per_run, found.steps_largest
    block = runs_per_block(plan)
    nv = len(plan.variants)
    wl = plan.workload
    if wl is None:
        total_runs = float(runs) * nv
        held_runs = min(runs, block)  # one block at a time
    else:
        horizon = 2.0 * wl.duration_s  # arrivals go on while counted runs drain
        if wl.kind == "open":
            started = wl.rate_per_s * horizon + BLOCK
        else:  # each agent starts about horizon / (mean run time + think time) runs (renewal theory)
            cycle = plan.root.mean_time_lower(plan.tiers) + (wl.think.mean if wl.think is not None else 0.0)
            started = float(wl.concurrent) * (1.0 + (horizon / cycle if cycle > 0 else math.inf)) + BLOCK
        total_runs = started * nv
        held_runs = started  # a workload keeps every run's records until the end
    memory = total_runs * BYTES_PER_RUN + held_runs * (largest * BYTES_PER_CALL + steps_largest * BYTES_PER_STEP)
    blocks = 1.0 if wl is None else max(1.0, held_runs / block)  # a workload keeps every block it started (inf: no end)
    tokens, stream_bytes, top = _streaming(plan, instances, min(held_runs, block), blocks, des)
    est = Estimate(total_runs * per_run, memory + stream_bytes, total_runs, per_run, largest)
    return replace(
        est,
        steps=total_runs * steps_per_run,
        max_steps_per_run=steps_largest,
        streamed_tokens=total_runs * tokens,
        stream_bytes=stream_bytes,
        largest_stream=top,
    )


def des_stream_bytes(plan, block_runs: float) -> float:
    """The per-token draws a DES block keeps (the stream cache's budget): every instance's matrices of the calls
    the DES streams while it runs (an interrupt, or a pipeline after them), at least :data:`CACHE_BYTES`.

    The DES runs one call at a time and each reads its column of a whole block's rows: a budget below these
    matrices would draw a block's rows again for every call (runs x instances times).
    """
    counts = {n.id: n.count_bounds() for n in plan.nodes if n.axis is not None}
    total = 0.0
    for s in _streamed_of(plan):
        if not s.live:
            continue  # streamed after the run (its consumer's metrics), one instance slot at a time
        big = math.prod(counts[m][1] for m in s.node.scope)
        total += big * s.draws * 8.0 * s.top * block_runs
    return max(float(CACHE_BYTES), total)


CACHE_BYTES = 128 << 20  # per-token draws a block keeps beyond its last KEPT (agentsim.sim.stream_draws)
KEPT = 8  # matrices a block keeps whatever their size (agentsim.sim.stream_draws.KEPT)


def _streaming(
    plan, instances: dict, block_runs: float, blocks: float, des: bool
) -> tuple[float, float, Streamed | None]:
    """``(tokens streamed in one run on average, bytes, the call with the largest answer)`` of the streamed calls.

    Bytes: the per-token draws a block keeps (each instance's matrices of ``block_runs x top`` values, up to
    what :mod:`agentsim.sim.stream_draws` keeps; on the DES at least :func:`des_stream_bytes`), in every block
    held at once, and the matrices of one batch of calls (:data:`STREAM_BATCH` values, or one answer's ``top``
    when longer) while it is streamed and measured.
    """
    tokens = kept = biggest = 0.0
    top: Streamed | None = None
    for s in _streamed_of(plan):
        mean, big = instances[s.node.id]
        tokens += mean * s.mean
        matrix = 8.0 * s.top * block_runs
        kept += big * s.draws * matrix
        biggest = max(biggest, matrix if s.draws else 0.0)
        if top is None or s.top > top.top:
            top = s
    if top is None:
        return 0.0, 0.0, None
    kept = min(kept, CACHE_BYTES + KEPT * biggest)
    if des:
        kept = max(kept, des_stream_bytes(plan, block_runs))
    batch = max(min(STREAM_BATCH, block_runs * top.top), top.top)  # calls x tokens of the largest batch
    return tokens, (blocks * kept if kept else 0.0) + STREAM_MATRICES * 8.0 * batch, top


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if x < 1e12 else f"{x:.2g}"


def _gib(x: float) -> str:
    return f"{x / 2**30:,.1f} GiB" if x < 1e15 else f"{x:.2g} bytes"


def _smaller(plan) -> str:
    if plan.workload is None:
        return "use fewer runs (--runs) or smaller repeat/fanout counts"
    return "use a shorter workload.duration, fewer arrivals or concurrent agents, or smaller repeat/fanout counts"


def check_plan(plan, runs: int, engine: str = "des") -> Estimate:
    """Refuse a simulation that can never end or exceeds the size limits (see module doc)."""
    if plan.workload is not None and plan.workload.kind == "closed":
        zero = zero_time_reason(plan.root, plan.tiers, plan.workload.think)
        if zero:
            raise SizeError(
                f"a run of this agent can take no simulated time ({zero}), and in a closed workload "
                "(workload.concurrent) each agent starts its next run when the last one ends, so the "
                "simulation would never advance: give the agent a step that takes time, or a "
                "workload.think_time above zero"
            )
    des = engine == "des" or plan.workload is not None
    est = estimate(plan, runs, des)
    lim = limits()
    if not lim.enabled:
        return est
    max_bytes = lim.max_bytes if lim.max_bytes is not None else _machine_bytes()
    what = (
        f"{_fmt(est.runs)} runs (all variants) of about {est.calls_per_run:,.3g} calls each"
        if plan.workload is None
        else f"up to {_fmt(est.runs)} runs started by the workload (all variants, over twice its duration)"
    )
    max_calls = lim.max_des_calls if des else lim.max_calls
    if est.calls + est.steps > max_calls:
        other = f" and {_fmt(est.steps)} other step instances" if est.steps >= 1 else ""
        raise SizeError(
            f"this simulation is too large: {what}, about {_fmt(est.calls)} simulated calls{other}, above the "
            f"limit of {_fmt(max_calls)}{' on the discrete-event engine' if des else ''}; {_smaller(plan)}, "
            "or raise the limit with --max-calls N (or --no-size-limit)"
        )
    if est.streamed_tokens > lim.max_streamed:
        raise SizeError(
            f"this simulation streams too many tokens: {what}, about {_fmt(est.streamed_tokens)} visible tokens "
            f"followed one by one{_stream_of(est)}, above the limit of {_fmt(lim.max_streamed)}; {_smaller(plan)}, "
            "or clip the streamed calls' output with max:, or lift the guard with --no-size-limit"
        )
    if est.bytes > max_bytes:
        held = f"{_fmt(est.max_calls_per_run)} calls and {_fmt(est.max_steps_per_run)} other step instances"
        streamed = ""
        if est.stream_bytes > est.bytes / 2:
            streamed = f"; {_gib(est.stream_bytes)} of it for streamed answers{_stream_of(est)}"
        raise SizeError(
            f"this simulation would need about {_gib(est.bytes)} of memory ({what}; the largest run holds "
            f"up to {held} at once{streamed}), more than the {_gib(max_bytes)} allowed; "
            f"{_smaller(plan)}{', or clip the streamed calls output with max:' if streamed else ''}, "
            "or lift the guard with --no-size-limit"
        )
    return est


def _stream_of(est: Estimate) -> str:
    s = est.largest_stream
    if s is None:
        return ""
    return f" (the longest: call '{s.node.name}', up to {_fmt(s.top)} tokens, streamed for {s.why})"


def max_workload_runs(plan) -> float:
    """How many runs one workload variant may start before it is stopped (see module doc).

    Each variant is its own simulation, so the cap is per variant and does not grow with the number of
    variants: four times the runs a variant is expected to start (an expectation from a lower bound of a
    completed run's time), within the variant's share of the calls limit. Where runs can end early -- a call
    refused (HTTP 429), errored or timed out until its retries are used up, or a ``fail`` step -- a failed
    run can be far shorter than that bound (a run whose first call is refused ends in seconds), so the
    factor is twenty: room for workloads most of whose runs fail, still a bound (a closed loop whose runs
    fail at the instant they start, with no think time, never gets past its first instant)."""
    lim = limits()
    if not lim.enabled:
        return math.inf
    est = estimate(plan, 1)
    nv = max(1, len(plan.variants))
    per_run = max(est.calls_per_run, 1e-9)
    by_calls = lim.max_des_calls / per_run / nv
    factor = 20.0 if plan.needs_attempts or plan.defines_success else 4.0
    return max(min(factor * est.runs / nv, by_calls), float(BLOCK))


def workload_runaway(started: int, ended: int = 0, failed: int = 0, failed_s: float = 0.0) -> SizeError:
    """The error of a workload variant that started more runs than :func:`max_workload_runs` allows;
    ``ended``, ``failed``: the runs that had ended, failed, by then, ``failed_s`` the failed runs' total time."""
    if ended and failed * 2 > ended:
        return SizeError(
            f"the workload started {started:,} runs without reaching the end of its duration: {failed:,} of the "
            f"{ended:,} runs that ended failed, after {failed_s / failed:,.3g} s on average (their calls used up "
            "their retries: refused with HTTP 429 by a limit, or errors or timeouts), so runs end almost as soon "
            "as they start and far more start than runs that complete would; raise the limits (or use "
            "policy: queue), allow more retries (retry: max_attempts), lower the arrival rate or the number "
            "of agents, or raise the size limit with --max-calls N (or --no-size-limit)"
        )
    return SizeError(
        f"the workload started {started:,} runs without reaching the end of its duration: its runs take "
        "(almost) no simulated time, or arrive faster than any limit; give the agent steps that take time "
        "(or a think_time), lower the arrival rate, or raise the limit with --max-calls N (or --no-size-limit)"
    )


# --------------------------------------------------------------------------- runs that take no time


def zero_time_reason(root, tiers, think=None) -> str:
    """Why every run of the plan whose root node is ``root`` (and a closed workload's ``think`` time)
    takes exactly zero simulated time; '' when some run can take time."""
    if _positive(think):
        return ""
    if root.can_take_time(tiers):
        return ""
    return "every step is skipped or lasts zero seconds"


def _positive(s) -> bool:
    return s is not None and s.support[1] > 0

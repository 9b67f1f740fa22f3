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
    "Estimate",
    "SizeError",
    "SizeLimits",
    "check_plan",
    "estimate",
    "limits",
    "set_limits",
    "size_limits",
]

DEFAULT_MAX_CALLS = 2_000_000_000  # simulated calls, all variants (the bundled benchmarks use < 2e8)
DEFAULT_MAX_DES_CALLS = 20_000_000  # the same on the discrete-event engine (~10^4-10^5 calls/s)
BYTES_PER_CALL = 512  # call records, draws and the DES's per-run lists, per call instance held at once
BYTES_PER_STEP = 128  # the same for any other step instance (a span's record, its draws; a count, a pick)
BYTES_PER_RUN = 160  # one row of the runs table (17 columns)
BLOCK = 4096  # runs per block (agentsim.plan.sampling.BLOCK_SIZE; not imported to keep this module light)


class SizeError(ValueError):
    """A simulation refused before it starts (or stopped) because it would not end in reasonable time or memory."""


@dataclass(frozen=True)
class SizeLimits:
    max_calls: float = DEFAULT_MAX_CALLS
    max_des_calls: float = DEFAULT_MAX_DES_CALLS
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


def estimate(plan, runs: int) -> Estimate:
    """Calls, runs and memory a simulation of ``plan`` with ``runs`` runs per variant needs (see module doc)."""
    counts = {n.id: n.count_bounds() for n in plan.nodes if n.axis is not None}
    per_run = largest = steps_per_run = steps_largest = 0.0
    for node in plan.nodes:
        if node.kind == "seq":
            continue  # a sequence is its steps
        mean = big = 1.0
        for m in node.scope:
            mean *= counts[m][0]
            big *= counts[m][1]
        if node.record == "call":
            per_run += mean
            largest += big
        else:  # held in memory (its draws: a count, a pick...); work when it is a leaf (a tool, a wait...)
            steps_per_run += 0.0 if node.children() else mean
            steps_largest += big
    nv = len(plan.variants)
    wl = plan.workload
    if wl is None:
        total_runs = float(runs) * nv
        held_runs = min(runs, BLOCK)  # one block at a time
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
    est = Estimate(total_runs * per_run, memory, total_runs, per_run, largest)
    return replace(est, steps=total_runs * steps_per_run, max_steps_per_run=steps_largest)


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
    est = estimate(plan, runs)
    lim = limits()
    if not lim.enabled:
        return est
    max_bytes = lim.max_bytes if lim.max_bytes is not None else _machine_bytes()
    what = (
        f"{_fmt(est.runs)} runs (all variants) of about {est.calls_per_run:,.3g} calls each"
        if plan.workload is None
        else f"up to {_fmt(est.runs)} runs started by the workload (all variants, over twice its duration)"
    )
    des = engine == "des" or plan.workload is not None
    max_calls = lim.max_des_calls if des else lim.max_calls
    if est.calls + est.steps > max_calls:
        other = f" and {_fmt(est.steps)} other step instances" if est.steps >= 1 else ""
        raise SizeError(
            f"this simulation is too large: {what}, about {_fmt(est.calls)} simulated calls{other}, above the "
            f"limit of {_fmt(max_calls)}{' on the discrete-event engine' if des else ''}; {_smaller(plan)}, "
            "or raise the limit with --max-calls N (or --no-size-limit)"
        )
    if est.bytes > max_bytes:
        held = f"{_fmt(est.max_calls_per_run)} calls and {_fmt(est.max_steps_per_run)} other step instances"
        raise SizeError(
            f"this simulation would need about {_gib(est.bytes)} of memory ({what}; the largest run holds "
            f"up to {held} at once), more than the {_gib(max_bytes)} allowed; "
            f"{_smaller(plan)}, or lift the guard with --no-size-limit"
        )
    return est


def max_workload_runs(plan) -> float:
    """How many runs a workload variant may start before it is stopped (see module doc)."""
    lim = limits()
    if not lim.enabled:
        return math.inf
    est = estimate(plan, 1)
    per_run = max(est.calls_per_run, 1e-9)
    # twice the estimate (it is an expectation), within the calls limit
    return max(min(2.0 * est.runs, lim.max_des_calls / per_run), float(BLOCK))


def workload_runaway(started: int) -> SizeError:
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

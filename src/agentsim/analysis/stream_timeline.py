"""One call's token timeline, token by token, per variant: what the stream figure and page show.

The ``streaming`` section of ``summary.json`` summarises consumer metrics over many calls; this
module goes back to the token level for **one representative run**, so a person can see (and a
browser can replay) how the answer arrived. It simulates the first block of runs of the scenario
(the same runs, with the same numbers, as ``agentsim run`` with that many runs: common random
numbers, so every variant sees the same draws), picks the run whose call took the median time in
the first variant, and recomputes that call's timeline with the engines' own rules
(:func:`agentsim.sim.streaming.streams`, DESIGN.md §3.2). Only the call's first instance is shown.

Every time is in seconds **from the ask** (the run's start, contract v1.2): the person asked then, and
everything before the answer (a listen, retrieval, tools, routing calls, queueing) is part of their wait.
A time is computed as ``(x - send) + (send - ask)``, the order the ``*_from_ask_s`` metrics of
:mod:`agentsim.sim.stream_metrics` use, so the page and ``summary.json`` agree to the last bit.

For each variant and visible token ``i = 1..n`` (``n``: the tokens delivered; fewer than drawn when
the call was interrupted) the frame gives:

* ``arrival_s`` (``a_i``) and ``delivered_s`` (``d_i``: with chunking, a chunk arrives with its last token);
* ``send_s``: when the call was sent (the same on every row of a variant; 0 when it is the run's first step);
* ``interrupt_s``: when the person interrupts the answer (NaN: they do not), where reading and speech stop;
* one column per consumer kind with a per-token form, its kind's own rule, the one its metrics in
  ``summary.json`` are read from: ``read_s`` (:func:`agentsim.consumers.reader.read_times`: when a reader
  has read token ``i``) and ``spoken_s`` (:func:`agentsim.consumers.speech.schedule`: when a speaker has
  said it); NaN for a token the person never read or heard (after their interruption).

Columns a call's consumer does not have are NaN. ``frame.attrs["picked"]`` says how the run was chosen
(``median``: the call's median time in the first variant; ``p95``: its 95th percentile, ``percentile=95``;
``given``: ``run=``), and
``frame.attrs["targets"]`` holds, per variant, the scenario's ``slo`` targets on this call's streaming
metrics (``CALL.METRIC`` of this call, or a metric alone: the turn's value, :mod:`agentsim.sim.slo`): the
target, the shown run's value and whether it meets it, and over the block's runs the share within it and
its Wilson 95% interval (the figures ``summary.json`` gives for the same runs and seed); and
``frame.attrs["voice_to_voice"]`` the shown run's voice-to-voice latency per variant (a voice; else None).
``frame.attrs["phases"]`` lists, per variant, what the
person waited through before the first word (:func:`turn_phases`), as dicts ``{variant, kind, step,
start_s, end_s}``: every call, tool, wait or listen of the run that started before the call was sent,
clipped at the send (a call's queueing, submit to start, is a phase ``queue`` of its own), then the
call's own wait for its first word (kind ``ttft``, from the send to ``d_1``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from agentsim.model.registry import consumer_kinds
from agentsim.model.scenario import Scenario
from agentsim.plan.compiler import Plan, compile_plan
from agentsim.plan.sampling import block_spans
from agentsim.plan.sizeguard import check_plan, runs_per_block
from agentsim.plan.validation import load
from agentsim.sim.call_timeline import CallSlot
from agentsim.sim.records import DONE
from agentsim.sim.simulation import choose_engine, simulate_block
from agentsim.sim.stream_metrics import consumer_timeline, person_stop, recorded

__all__ = ["COLUMNS", "PHASE_KINDS", "StreamTimelineError", "timeline_columns", "token_timelines", "turn_phases"]

# then each consumer kind's (timeline_columns); send_s and interrupt_s (NaN: never) are the same on every row of a
# variant
COLUMNS = ["variant", "run", "token", "arrival_s", "delivered_s", "send_s", "interrupt_s"]
# what a phase before the first word can be: a span's breakdown slot (listen, tool, wait, or a step kind's own),
# an earlier call, a call's queueing, the call's own wait for its first token
PHASE_KINDS = ("listen", "tool", "wait", "call", "queue", "ttft")


class StreamTimelineError(ValueError):
    """The call asked for cannot be shown (no such call, or it never ran)."""


def _run_variants(plan: Plan, seed: int, runs: int, engine: str):
    return simulate_block(plan, seed, block_spans(runs, runs_per_block(plan))[0], engine)


def _flat0(a: np.ndarray) -> np.ndarray:
    """The first instance slot of each run: ``(n,)`` from ``(n, *instances)``."""
    return a.reshape(a.shape[0], -1)[:, 0]


def _timeline(plan: Plan, block, res, node, run: int) -> dict[str, np.ndarray]:
    """The token timeline of ``node``'s first instance in ``run``, seconds from the ask: rebuilt from its
    records with the engines' rules (agentsim.sim.stream_metrics.recorded) and its consumer's per-token times
    (the consumer kind's ``timeline``, the rule its summary metrics are read from)."""
    slot = CallSlot(block, node, 0, np.array([run]))
    tier = int(res.calls[node.id]["tier"].reshape(block.n, -1)[run, 0])
    sb, n_seen, _ = recorded(plan, res, slot, tier, cache=False)
    n = int(n_seen[0])
    send = sb.send[0]
    lead = send - _ask(res, run)  # from the ask to the send

    def from_ask(x):  # the operation order of the *_from_ask_s metrics
        return (x - send) + lead

    cons = node.consumer
    stop = person_stop(plan, slot, tier, sb)
    cols = {"arrival_s": from_ask(sb.A[0, :n]), "delivered_s": from_ask(sb.D[0, :n]), "send_s": np.full(n, lead)}
    cols["interrupt_s"] = np.full(n, np.nan if stop is None or not np.isfinite(stop[0]) else from_ask(stop[0]))
    per_token = {} if cons is None else consumer_timeline(cons, sb, n_seen, slot, stop)
    for column in timeline_columns():
        cols[column] = from_ask(per_token[column][0, :n]) if column in per_token else np.full(n, np.nan)
    return cols


def _ask(res, run: int) -> float:
    """When the person asked: the run's start (0 outside workloads)."""
    return 0.0 if res.start is None else float(res.start[run])


def turn_phases(plan: Plan, res, node, run: int) -> list[dict]:
    """What the person waits through in ``run`` before ``node``'s first instance is sent, seconds from the ask:
    each call (its queueing, submit to start, as a phase ``queue``), tool, wait or listen that started before
    the send, clipped there. Sorted by start and end, then plan order (see the module doc)."""
    ask, n = _ask(res, run), res.block.n
    send = float(res.calls[node.id]["t_start"].reshape(n, -1)[run, 0])
    out: list[dict] = []

    def add(kind, step, start, end):
        end = min(end, send)
        if np.isfinite(start) and np.isfinite(end) and start < end:
            out.append({"kind": kind, "step": step, "start_s": float(start - ask), "end_s": float(end - ask)})

    for call in plan.calls:
        c = {k: res.calls[call.id][k].reshape(n, -1)[run] for k in ("status", "t_submit", "t_start", "t_end")}
        for i in np.nonzero(c["status"])[0]:
            add("queue", call.name, c["t_submit"][i], c["t_start"][i])
            if not (call.id == node.id and i == 0):
                add("call", call.name, c["t_start"][i], c["t_end"][i])
    for span in plan.spans:
        sp = {k: res.spans[span.id][k].reshape(n, -1)[run] for k in ("status", "t_start", "t_end")}
        for i in np.nonzero(sp["status"])[0]:
            add(span.slot or span.kind, span.name, sp["t_start"][i], sp["t_end"][i])  # its slot, whatever its kind
    out.sort(key=lambda p: (p["start_s"], p["end_s"]))  # stable: plan order among equals
    return out


def timeline_columns() -> list[str]:
    """The per-token columns of the consumer kinds (``read_s``, ``spoken_s``), in registration order."""
    return [c for kind in consumer_kinds().values() for c in kind.columns]


def token_timelines(
    scenario: Scenario | str | Path,
    call: str | None = None,
    *,
    runs: int | None = None,
    seed: int | None = None,
    engine: str = "auto",
    run: int | None = None,
    percentile: float = 50.0,
) -> pd.DataFrame:
    """Token timeline of ``call`` (default: the first call with a consumer, else the first call)
    in one representative run, per variant (see the module doc): the run whose call took the median time in
    the first variant, or the ``percentile``-th (95: a slow turn, the order statistic nearest to it); ``run``
    picks the run instead."""
    if not 0 <= percentile <= 100:
        raise StreamTimelineError(f"the percentile is between 0 and 100, got {percentile:g}")
    sc = scenario if isinstance(scenario, Scenario) else load(Path(scenario))
    plan = compile_plan(sc)
    if plan.workload is not None:
        raise StreamTimelineError("a workload scenario has no single representative run; use one agent")
    runs = min(sc.runs if runs is None else int(runs), runs_per_block(plan))
    seed = sc.seed if seed is None else int(seed)
    node = _chosen_call(plan, call)
    call = node.name
    engine = choose_engine(plan, engine)
    check_plan(plan, runs, engine)  # the size guard of every command that simulates, before any draw
    block, results = _run_variants(plan, seed, runs, engine)
    picked = ("median" if percentile == 50 else f"p{percentile:g}") if run is None else "given"
    run = _shown_run(results, node, block.n, run, percentile)
    out, phases = _variant_timelines(plan, block, results, node, run)
    targets, v2v = _targets(sc, plan, results, call, run)
    out.attrs.update(call=call, consumer=node.consumer.kind if node.consumer is not None else None, phases=phases,
                     picked=picked, targets=targets, voice_to_voice=v2v)  # fmt: skip
    return out


def _chosen_call(plan: Plan, call: str | None):
    """The first call node named ``call`` (None: the first call with a consumer, else the first call)."""
    names = [c.name for c in plan.calls]
    if call is None:
        call = next((c.name for c in plan.calls if c.consumer is not None), names[0] if names else None)
    nodes = [c for c in plan.calls if c.name == call]
    if not nodes:
        raise StreamTimelineError(f"no call named '{call}' (the calls are: {', '.join(dict.fromkeys(names))})")
    return nodes[0]


def _shown_run(results, node, n: int, run: int | None, percentile: float) -> int:
    """The run shown: ``run`` if given (its call must have completed in every variant), else the one
    :func:`_pick` takes among the runs where it did."""
    made = np.ones(n, dtype=bool)
    for res in results:
        made &= _flat0(res.calls[node.id]["status"]) == DONE
    if not made.any():
        raise StreamTimelineError(f"the call '{node.name}' did not complete in any of the {n} runs")
    if run is None:
        return _pick(results[0].calls[node.id], made, percentile)
    if not (0 <= run < n and made[run]):
        raise StreamTimelineError(f"run {run} has no completed '{node.name}' call in every variant (0..{n - 1})")
    return run


def _variant_timelines(plan: Plan, block, results, node, run: int) -> tuple[pd.DataFrame, list[dict]]:
    """The token rows of the call in the shown run, every variant's after the other, and the phases of the
    turn before it (the call's own wait for its first word among them)."""
    frames, phases = [], []
    for v, res in enumerate(results):
        cols = _timeline(plan, block, res, node, run)
        n = len(cols["arrival_s"])
        frames.append(
            pd.DataFrame(
                {"variant": plan.variants[v], "run": run, "token": np.arange(1, n + 1), **cols},
                columns=[*COLUMNS, *timeline_columns()],
            )
        )
        before = turn_phases(plan, res, node, run)
        if n:  # the call's own wait for its first word
            before.append({"kind": "ttft", "step": node.name, "start_s": float(cols["send_s"][0]),
                           "end_s": float(cols["delivered_s"][0])})  # fmt: skip
        phases += [{"variant": plan.variants[v], **p} for p in before]
    return pd.concat(frames, ignore_index=True), phases


def _pick(t0: dict, made: np.ndarray, percentile: float) -> int:
    """The run whose call (in the first variant, ``t0``: its records) took the median time, or the
    ``percentile``-th (the order statistic nearest to it), among the runs where every variant made it."""
    took = _flat0(t0["t_end"]) - _flat0(t0["t_start"])
    cand = np.nonzero(made)[0]
    order = cand[np.argsort(took[cand], kind="stable")]
    at = (len(order) - 1) // 2 if percentile == 50 else round(percentile / 100 * (len(order) - 1))
    return int(order[at])


def _targets(sc: Scenario, plan: Plan, results, call: str, run: int) -> tuple[dict, dict]:
    """Per variant: the ``slo`` targets on ``call``'s streaming metrics with the shown run's value and the share
    of the block's runs within each (module doc); and the shown run's voice-to-voice latency (None: no voice)."""
    from agentsim.sim.slo import meets, turn_values, wilson
    from agentsim.sim.stream_metrics import VOICE, block_metrics, run_values

    targets: dict[str, list] = {}
    v2v: dict[str, float | None] = {}
    for v, res in enumerate(results):
        n = res.block.n
        columns = run_values(plan, block_metrics(plan, res), n)
        name = plan.variants[v]
        own = columns.get(f"{call}.{VOICE}")
        v2v[name] = float(own[run]) if own is not None and np.isfinite(own[run]) else None
        targets[name] = []
        for metric, target in (sc.slo or {}).items():
            if "." in metric:  # CALL.METRIC: this call's only
                values = columns.get(metric) if metric.startswith(f"{call}.") else None
            elif any(k.endswith(f".{metric}") for k in columns):  # the turn's value, as summary.json has it
                values = turn_values(columns, metric, n)
            else:
                values = None  # not a streaming metric (wall time, cost, turns): not this page's
            if values is None:
                continue
            ok = meets(metric, values, float(target))
            k = int(np.count_nonzero(ok))
            value = float(values[run]) if np.isfinite(values[run]) else None
            targets[name].append({"metric": metric, "target": float(target), "value": value, "met": bool(ok[run]),
                                  "share": k / n, "ci95": wilson(k, n), "runs": n})  # fmt: skip
    return targets, v2v

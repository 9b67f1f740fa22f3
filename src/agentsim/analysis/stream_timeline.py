"""One call's token timeline, token by token, per variant: what the stream figure and page show.

The ``streaming`` section of ``summary.json`` summarises consumer metrics over many calls; this
module goes back to the token level for **one representative run**, so a person can see (and a
browser can replay) how the answer arrived. It simulates the first block of runs of the scenario
(the same runs, with the same numbers, as ``agentsim run`` with that many runs: common random
numbers, so every variant sees the same draws), picks the run whose call took the median time in
the first variant, and recomputes that call's timeline with the engines' own rules
(:func:`agentsim.sim.streaming.streams`, DESIGN.md §3.2). Only the call's first instance is shown.

For each variant and visible token ``i = 1..n`` (``n``: the tokens delivered; fewer than drawn when
the call was interrupted) the frame gives, in seconds from the moment the call was sent:

* ``arrival_s`` (``a_i``) and ``delivered_s`` (``d_i``: with chunking, a chunk arrives with its last token);
* ``read_s``: when a reader of pace ``r`` has read token ``i``, ``f_i = max(d_i, f_{i-1}) + 1/r``
  (``f_0`` = the send time), computed as ``f_i = i/r + max(0, max_{j<=i} (d_j - (j-1)/r))``;
* ``spoken_s``: when a speaker has said token ``i``: token ``j`` of sentence ``k`` at
  ``s_k + j / rate`` (``s_k`` the sentence's start, ``s_k = max(d_{e_k} + first_audio, s_{k-1} + l_{k-1})``).

Columns a consumer does not have are NaN.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from agentsim.model.scenario import Scenario
from agentsim.plan.compiler import FIRST_AUDIO, OUTPUT, Plan, compile_plan
from agentsim.plan.sampling import block_spans
from agentsim.plan.validation import load
from agentsim.sim.call_timeline import CallSlot, timeline
from agentsim.sim.records import DONE
from agentsim.sim.simulation import choose_engine, simulate_block
from agentsim.sim.streaming import first_audio_times, seen, sentence_ends, stall_draws, streams

__all__ = ["COLUMNS", "StreamTimelineError", "token_timelines"]

COLUMNS = ["variant", "run", "token", "arrival_s", "delivered_s", "read_s", "spoken_s"]


class StreamTimelineError(ValueError):
    """The call asked for cannot be shown (no such call, or it never ran)."""


def _run_variants(plan: Plan, seed: int, runs: int, engine: str):
    return simulate_block(plan, seed, block_spans(runs)[0], engine)


def _flat0(a: np.ndarray) -> np.ndarray:
    """The first instance slot of each run: ``(n,)`` from ``(n, *instances)``."""
    return a.reshape(a.shape[0], -1)[:, 0]


def _timeline(plan: Plan, block, res, node, run: int) -> dict[str, np.ndarray]:
    t = res.calls[node.id]
    runs = np.array([run])
    width = int(np.prod(block.shape(node.scope), dtype=np.int64))

    def col(name):
        return _flat0(t[name])[runs]

    tid = int(col("tier")[0])
    tier = plan.tiers[tid]
    send, ttft, tps, reas = col("t_start"), col("ttft"), col("tps"), col("reasoning")
    N = _flat0(np.broadcast_to(block.get(node.id, OUTPUT), t["status"].shape))[runs].astype(np.int64)
    stall = np.zeros(1)
    stall_u = np.zeros(1)
    sd = stall_draws(plan, block, node, tid)
    if sd is not None:
        stall = _flat0(np.broadcast_to(sd[0], t["status"].shape))[runs]
        stall_u = _flat0(np.broadcast_to(sd[1], t["status"].shape))[runs]
    sb = streams(tier, CallSlot(block, node, 0, runs), timeline(send, ttft, N, reas, tps, stall), stall_u)
    interrupted = res.extra.get("interrupted", {}).get(node.id)
    hit = bool(interrupted is not None and _flat0(interrupted.reshape(block.n, width))[run])
    n = int(seen(sb, col("t_end"))[0]) if hit else int(N[0])
    A, D = sb.A[0, :n] - send[0], sb.D[0, :n] - send[0]
    i = np.arange(1, n + 1)
    read = spoken = np.full(n, np.nan)
    cons = node.consumer
    if cons is not None and cons.kind == "reader" and n:
        read = i / cons.rate + np.maximum(0.0, np.maximum.accumulate(D - (i - 1) / cons.rate))
    elif cons is not None and cons.kind == "speech" and n:
        sent = sentence_ends(cons.sentence, block, node.id, 0, runs, np.array([n]))[0]
        sent = sent[sent > 0]
        fa = _flat0(np.broadcast_to(block.get(node.id, FIRST_AUDIO), t["status"].shape))[runs]
        first = first_audio_times(sb.D[:, :n], sent[None, :], fa)[0] - send[0]
        ends = np.cumsum(sent) - 1
        spoken = np.empty(n)
        s_prev = dur_prev = None
        for k, (e, m) in enumerate(zip(ends, sent, strict=True)):
            b = first if k == 0 else D[e] + fa[0]
            s_k = b if k == 0 else max(b, s_prev + dur_prev)
            spoken[e - m + 1 : e + 1] = s_k + np.arange(1, m + 1) / cons.rate
            s_prev, dur_prev = s_k, m / cons.rate
    return {"arrival_s": A, "delivered_s": D, "read_s": read, "spoken_s": spoken}


def token_timelines(
    scenario: Scenario | str | Path,
    call: str | None = None,
    *,
    runs: int | None = None,
    seed: int | None = None,
    engine: str = "auto",
    run: int | None = None,
) -> pd.DataFrame:
    """Token timeline of ``call`` (default: the first call with a consumer, else the first call)
    in one representative run, per variant (see the module doc); ``run`` picks the run instead."""
    sc = scenario if isinstance(scenario, Scenario) else load(Path(scenario))
    plan = compile_plan(sc)
    if plan.workload is not None:
        raise StreamTimelineError("a workload scenario has no single representative run; use one agent")
    runs = min(sc.runs if runs is None else int(runs), block_spans(1 << 30)[0][2])
    seed = sc.seed if seed is None else int(seed)
    names = [c.name for c in plan.calls]
    if call is None:
        call = next((c.name for c in plan.calls if c.consumer is not None), names[0] if names else None)
    nodes = [c for c in plan.calls if c.name == call]
    if not nodes:
        raise StreamTimelineError(f"no call named '{call}' (the calls are: {', '.join(dict.fromkeys(names))})")
    node = nodes[0]
    block, results = _run_variants(plan, seed, runs, choose_engine(plan, engine))
    made = np.ones(block.n, dtype=bool)
    for res in results:
        made &= _flat0(res.calls[node.id]["status"]) == DONE
    if not made.any():
        raise StreamTimelineError(f"the call '{call}' did not complete in any of the {block.n} runs")
    if run is None:
        t0 = results[0].calls[node.id]
        took = _flat0(t0["t_end"]) - _flat0(t0["t_start"])
        cand = np.nonzero(made)[0]
        order = cand[np.argsort(took[cand], kind="stable")]
        run = int(order[(len(order) - 1) // 2])
    elif not (0 <= run < block.n and made[run]):
        raise StreamTimelineError(f"run {run} has no completed '{call}' call in every variant (0..{block.n - 1})")
    frames = []
    for v, res in enumerate(results):
        cols = _timeline(plan, block, res, node, run)
        n = len(cols["arrival_s"])
        frames.append(
            pd.DataFrame(
                {"variant": plan.variants[v], "run": run, "token": np.arange(1, n + 1), **cols}, columns=COLUMNS
            )
        )
    out = pd.concat(frames, ignore_index=True)
    out.attrs.update(call=call, consumer=node.consumer.kind if node.consumer is not None else None)
    return out

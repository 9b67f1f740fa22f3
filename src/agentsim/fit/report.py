"""How well a fitted scenario reproduces the recorded sessions: quantity by quantity.

Each quantity is a sample on both sides — recorded (from the sessions compared with: the fitted
ones, or those held back) and simulated (from the fitted scenario's runs):

============================  =========================================  ==========================================
quantity                      recorded                                   simulated
============================  =========================================  ==========================================
``wall_time_s``, ``cost_usd`` per session (identity replay: recorded       per run
                              wall time, cost of the recorded usage)
``steps``                     main-thread calls per session              ``step`` calls per run
``calls``                     every call per session                     every call per run
``input_tokens``,             per main-thread call                       per ``step`` call
``output_tokens``, ``call_s``
``tool_s``                    per main-level tool run                    per ``tool`` span
``idle_s``                    per human gap                              per ``human`` wait
============================  =========================================  ==========================================

For each: n, mean, p50, p90, p95 on both sides; the **KS distance** (largest gap between the two
empirical CDFs) and the **quantile error** (largest relative gap between the two at p10, p25,
p50, p75 and p90). Figures that are one number per population: the token-weighted **cache read
share** (cache reads / input tokens, all calls), the **model mix** (share of calls by model), the
**tool share** (tool time / (tool + model time) along each session's critical path: replay's split
on the recorded side, the simulation's breakdown on the other), and **tool calls per step**.
With idle time excluded, the recorded wall time is the session's minus its human time.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

from agentsim.fit.build import model_key
from agentsim.fit.population import SessionShape

__all__ = ["QUANTITIES", "compare", "recorded_samples", "simulated_samples"]

QUANTITIES = {
    "wall_time_s": "s",
    "cost_usd": "USD",
    "steps": "calls",
    "calls": "calls",
    "input_tokens": "tokens",
    "output_tokens": "tokens",
    "call_s": "s",
    "tool_s": "s",
    "idle_s": "s",
    "turns": "turns",
    "turn_s": "s",
    "steps_per_turn": "calls",
    "server_s": "s",
    "session_output_tokens": "tokens",
}
PROBS = (0.10, 0.25, 0.50, 0.75, 0.90)
BOUND = 0.10  # a quantity is reproduced when its mean and p90 (a figure: its value) are within 10% of the recorded


def _all_durations(shape: SessionShape):
    """Every call of a session (main thread, side calls, subagents) with its duration."""
    for st in shape.main.steps:
        yield st.call, st.duration
        yield from st.sides
        for t in st.subagents:
            yield from ((s.call, s.duration) for s in t.steps)


def _all_calls(shape: SessionShape):
    for st in shape.main.steps:
        yield st.call
        yield from (c for c, _ in st.sides)
        for t in st.subagents:
            yield from (s.call for s in t.steps)


def recorded_samples(shapes: list[SessionShape], replayed, idle: str) -> tuple[dict, dict]:
    """(samples, one-number figures) of the recorded sessions; ``replayed`` is replay's session table of
    the same sessions (the ``recorded`` rows: wall time, cost, the critical-path split)."""
    rows = replayed.set_index("session")
    steps = [st for s in shapes for st in s.main.steps]
    calls = [c for s in shapes for c in _all_calls(s)]
    wall = np.array([rows.loc[s.id, "wall_time_s"] - (s.human_s if idle == "exclude" else 0.0) for s in shapes])
    samples = {
        "wall_time_s": wall,
        "cost_usd": np.array([rows.loc[s.id, "cost_usd"] for s in shapes]),
        "steps": np.array([len(s.main.steps) for s in shapes], dtype=float),
        "calls": np.array([sum(1 for _ in _all_calls(s)) for s in shapes], dtype=float),
        "input_tokens": np.array([st.call.input_tokens for st in steps], dtype=float),
        "output_tokens": np.array([st.call.output_tokens for st in steps], dtype=float),
        "call_s": np.array([st.duration for st in steps]),
        "tool_s": np.array([d for st in steps for d in st.tools]),
        "idle_s": np.array([st.idle for st in steps if st.idle > 0]),
        "turns": np.array([len(s.main.turns()) for s in shapes], dtype=float),
        "turn_s": np.array([x for s in shapes for x in s.turn_s]),
        "steps_per_turn": np.array([len(t) for s in shapes for t in s.main.turns()], dtype=float),
        "server_s": np.array([math.fsum(d for _, d in _all_durations(s)) for s in shapes]),
        "session_output_tokens": np.array([sum(c.output_tokens for c in _all_calls(s)) for s in shapes], dtype=float),
    }
    tool, model = float(rows["tool_s"].sum()), float(rows["model_s"].sum())
    figures = {
        "cache_read_share": _share(sum(c.cache_read_tokens for c in calls), sum(c.input_tokens for c in calls)),
        "model_mix": _mix(Counter(model_key(c.model) for c in calls)),
        "tool_share": _share(tool, tool + model),
        "tool_calls_per_step": _share(sum(len(st.tools) for st in steps), len(steps)),
    }
    return samples, figures


def _is(steps, base: str):
    """Which of the ``steps`` (a column of step names) are ``base`` or ``base:GROUP``."""
    return (steps == base) | steps.str.startswith(base + ":")


def simulated_samples(res) -> tuple[dict, dict]:
    """(samples, one-number figures) of a fitted scenario's simulation (the first variant)."""
    runs = res.runs
    calls, spans = res.tables_of(range(res.n_runs))  # both tables from one pass over the blocks
    main = calls[_is(calls["step"].astype(str), "step")]
    tools = spans[(spans["kind"] == "tool") & _is(spans["step"].astype(str), "tool")]
    human = (spans["kind"] == "wait") & _is(spans["step"].astype(str), "human")
    idle = spans[human | (spans["slot"] == "think")]
    per_run = main.groupby("run").size().reindex(runs["run"], fill_value=0)
    turn_s = res.turns_of(res.variants[0], (runs["variant"] == res.variants[0]).to_numpy())[0]
    served = (calls["t_end"] - calls["t_start"]).groupby(calls["run"]).sum().reindex(runs["run"], fill_value=0.0)
    samples = {
        "wall_time_s": runs["wall_time_s"].to_numpy(),
        "cost_usd": runs["cost_usd"].to_numpy(),
        "steps": per_run.to_numpy(dtype=float),
        "calls": runs["calls"].to_numpy(dtype=float),
        "input_tokens": main["input_tokens"].to_numpy(dtype=float),
        "output_tokens": (main["output_tokens"] + main["reasoning_tokens"]).to_numpy(dtype=float),
        "call_s": (main["t_end"] - main["t_start"]).to_numpy(),
        "tool_s": (tools["t_end"] - tools["t_start"]).to_numpy(),
        "idle_s": (idle["t_end"] - idle["t_start"]).to_numpy(),
        "turns": runs["turns"].to_numpy(dtype=float),
        "turn_s": turn_s,
        "steps_per_turn": _steps_per_turn(main, spans[spans["slot"] == "think"]),
        "server_s": served.to_numpy(dtype=float),
        "session_output_tokens": (runs["output_tokens"] + runs["reasoning_tokens"]).to_numpy(dtype=float),
    }
    tool = float(runs["tool_s"].sum())
    model = float(runs["ttft_s"].sum() + runs["decode_s"].sum())
    figures = {
        "cache_read_share": _share(float(calls["cache_read_tokens"].sum()), float(calls["input_tokens"].sum())),
        "model_mix": _mix(Counter(calls["model"])),
        "tool_share": _share(tool, tool + model),
        "tool_calls_per_step": _share(len(tools), len(main)),
    }
    return samples, figures


def _steps_per_turn(main, think) -> np.ndarray:
    """Main-thread calls per turn of a simulation: a call belongs to the turn after the pauses that ended by its
    start (the runs' pauses are the ``think`` spans; a run without them is one turn)."""
    ends = {r: np.sort(g.to_numpy()) for r, g in think.groupby("run")["t_end"]}
    turn = [int(np.searchsorted(ends[r], t, side="right")) if r in ends else 0 for r, t in
            zip(main["run"].to_numpy(), main["t_start"].to_numpy(), strict=True)]  # fmt: skip
    counts = pd.Series(1, index=pd.MultiIndex.from_arrays([main["run"].to_numpy(), turn])).groupby(level=[0, 1]).sum()
    return counts.to_numpy(dtype=float)


def _share(a: float, b: float) -> float | None:
    return float(a) / float(b) if b else None


def _mix(counts: Counter) -> dict[str, float]:
    total = sum(counts.values())
    return {k: counts[k] / total for k in sorted(counts)} if total else {}


def _sig(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(f"{x:.5g}")


def _describe(x: np.ndarray) -> dict:
    if len(x) == 0:
        return {"n": 0}
    return {
        "n": len(x),
        "mean": _sig(float(np.mean(x))),
        **{f"p{q}": _sig(float(np.percentile(x, q))) for q in (50, 90, 95)},
    }


def _quantity(rec: np.ndarray, sim: np.ndarray, unit: str) -> dict[str, Any]:
    from scipy.stats import ks_2samp

    out: dict[str, Any] = {"unit": unit, "recorded": _describe(rec), "simulated": _describe(sim)}
    if len(rec) and len(sim):
        out["ks"] = _sig(float(ks_2samp(rec, sim).statistic))
        qr = np.quantile(rec, PROBS)
        qs = np.quantile(sim, PROBS)
        errs = [abs(b - a) / abs(a) for a, b in zip(qr, qs, strict=True) if a != 0]
        out["quantile_error"] = _sig(max(errs)) if errs else None
        out["mean_error"] = (
            _sig((float(np.mean(sim)) - float(np.mean(rec))) / float(np.mean(rec))) if np.mean(rec) else None
        )
        p90r, p90s = float(np.percentile(rec, 90)), float(np.percentile(sim, 90))
        out["p90_error"] = _sig((p90s - p90r) / p90r) if p90r else None
        errors = [e for e in (out["mean_error"], out["p90_error"]) if e is not None]
        out["verdict"] = "within" if errors and all(abs(e) <= BOUND for e in errors) else "outside"
    return out


def compare(recorded: tuple[dict, dict], simulated: tuple[dict, dict]) -> dict:
    """The fit report's comparison: per quantity, recorded vs simulated; and the one-number figures."""
    (rs, rf), (ss, sf) = recorded, simulated
    quantities = {k: _quantity(rs[k], ss[k], unit) for k, unit in QUANTITIES.items()}
    figures = {}
    for k in rf:
        a, b = rf[k], sf[k]
        if isinstance(a, dict):
            figures[k] = {
                "recorded": {m: _sig(v) for m, v in a.items()},
                "simulated": {m: _sig(v) for m, v in b.items()},
            }
        else:
            err = (b - a) / a if a and b is not None else None
            verdict = None if err is None else ("within" if abs(err) <= BOUND else "outside")
            figures[k] = {"recorded": _sig(a), "simulated": _sig(b), "error": _sig(err), "verdict": verdict}
    return {"quantities": quantities, "figures": figures, "bound": BOUND}

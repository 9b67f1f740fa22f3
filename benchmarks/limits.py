"""Shared-limits engine speed: simulated calls per second, against a bare SimPy model.

    python benchmarks/limits.py [--minutes M] [--repeat K]

1,000 agents run back to back (a closed workload), each run 40 sequential calls
alternating between two models, each model on its own account with 50 requests in
flight at most (client-side queueing). Calls take an exponential TTFT (mean 0.5 s)
plus 100 tokens at 100 tokens/s. The bare model does the same with plain SimPy: two
``simpy.Resource(50)``, 1,000 processes, request / timeout / release per call, and
nothing else (no context, no records, no accounting). Prints medians of K repeats and
the ratio. Goals (issue 4): >= 75k simulated calls/s and <= 1.5x bare SimPy.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import simpy

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from agentsim.plan.compiler import compile_plan  # noqa: E402
from agentsim.plan.validation import parse  # noqa: E402
from agentsim.sim.simulation import simulate_plan  # noqa: E402


def scenario(minutes: float) -> dict:
    model = {"price": {"input_mtok": 1, "output_mtok": 1}, "ttft": {"exponential": {"mean": 0.5}}, "output_tps": 100}
    return {
        "name": "limits-benchmark",
        "seed": 1,
        "models": {"a": model, "b": model},
        "limits": {
            "acct-a": {"models": ["a"], "concurrency": 50, "policy": "queue"},
            "acct-b": {"models": ["b"], "concurrency": 50, "policy": "queue"},
        },
        "workload": {"concurrent": 1000, "duration": {"minutes": minutes}},
        "agent": {"steps": [{"call": {"model": "a" if i % 2 == 0 else "b", "output": 100}} for i in range(40)]},
    }


def bare(minutes: float, seed: int = 1) -> int:
    env = simpy.Environment()
    res = [simpy.Resource(env, 50), simpy.Resource(env, 50)]
    rng = np.random.default_rng(seed)
    pool = (rng.exponential(0.5, 4_000_000) + 1.0).tolist()
    state = {"i": 0, "calls": 0}

    def agent():
        while True:
            for step in range(40):
                r = res[step % 2]
                with r.request() as req:
                    yield req
                    d = pool[state["i"]]
                    state["i"] += 1
                    yield env.timeout(d)
                state["calls"] += 1

    for _ in range(1000):
        env.process(agent())
    env.run(until=minutes * 60)
    return state["calls"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=20.0, help="simulated minutes")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    plan = compile_plan(parse(scenario(args.minutes)))

    ours, calls_ours = [], 0
    for _ in range(args.repeat):
        t = time.perf_counter()
        res = simulate_plan(plan, 1, 1)
        dt = time.perf_counter() - t
        calls_ours = int((res.calls["t_end"] <= args.minutes * 60).sum())
        ours.append(len(res.calls) / dt)
    theirs, calls_bare = [], 0
    for _ in range(args.repeat):
        t = time.perf_counter()
        calls_bare = bare(args.minutes)
        theirs.append(calls_bare / (time.perf_counter() - t))
    a, b = statistics.median(ours), statistics.median(theirs)
    print(
        f"1,000 agents x 40 calls on two accounts of 50 in flight, {args.minutes:g} simulated minutes, "
        f"median of {args.repeat}"
    )
    print(f"agentsim DES:  {a:>10,.0f} simulated calls/s  ({calls_ours:,} calls finished in the window)")
    print(f"bare SimPy:    {b:>10,.0f} simulated calls/s  ({calls_bare:,} calls finished)")
    print(f"cost ratio (bare / agentsim throughput): {b / a:.2f}x  (goals: >= 75,000 calls/s, <= 1.5x)")


if __name__ == "__main__":
    main()

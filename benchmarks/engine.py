"""Engine speed: replications per second of agentsim's DES, against a bare SimPy loop.

    python benchmarks/engine.py [--runs N] [--repeat K]

For each bundled scenario and for a 96-call reference agent (40 steps, an 8-way
fan-out every 5th step), prints replications per second of the full agentsim
pipeline on the DES engine (sampling, simulation, pricing, per-run totals) and on
the fast path, and, for the reference agent, of a bare SimPy model doing the same
timeouts with the same process structure and nothing else. Figures are medians
of K repeats in one process; the ratio DES/bare is what matters (issue 15: <= 1.3x, the
median of interleaved pairs), printed from wall time and from CPU time (``time.process_time``,
which a busy shared machine disturbs less).

The DES runs a fan-out or parallel branch that is one call whose timing is fixed before the run
as a timeout with a callback, not a process (agentsim.sim.des_joins ``Joins.join_calls``): on this agent it
schedules fewer events than the bare loop, which starts a process per branch.
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

from agentsim import load  # noqa: E402
from agentsim.plan.compiler import compile_plan  # noqa: E402
from agentsim.plan.validation import parse  # noqa: E402
from agentsim.sim.simulation import simulate_plan  # noqa: E402

REFERENCE = {
    "name": "reference-96-calls",
    "seed": 1,
    "models": {
        "m": {
            "price": {"input_mtok": 3, "output_mtok": 15},
            "ttft": {"lognormal": {"median": 1.0, "p90": 2.5}},
            "output_tps": {"normal": {"mean": 60, "sd": 15, "min": 5}},
        }
    },
    "agent": {
        "steps": [
            {"fanout": {"n": 8, "steps": [{"call": {"output": 200}}]}} if s % 5 == 4 else {"call": {"output": 200}}
            for s in range(40)
        ]
    },
}


def median_rate(fn, runs: int, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return runs / statistics.median(times)


def bare_simpy(runs: int, seed: int = 1, lean: bool = False) -> None:
    """The reference agent in plain SimPy: one environment and process per run, a timeout per call.

    ``lean``: the fan-out's eight calls are eight timeouts joined by ``all_of`` (no process per branch),
    the event structure agentsim's DES itself uses for one-call branches (``Joins.join_calls``): the fairer
    yardstick for that shortcut.
    """
    rng = np.random.default_rng(seed)
    durations = np.exp(rng.normal(0.0, np.log(2.5) / 1.2816, (runs, 96))) + 200 / np.maximum(
        rng.normal(60, 15, (runs, 96)), 5
    )
    durations = durations.tolist()

    def call(env, d):
        yield env.timeout(d)

    def agent(env, ds):
        i = 0
        for s in range(40):
            if s % 5 == 4:
                if lean:
                    yield env.all_of([env.timeout(ds[i + c]) for c in range(8)])
                else:
                    yield env.all_of([env.process(call(env, ds[i + c])) for c in range(8)])
                i += 8
            else:
                yield env.timeout(ds[i])
                i += 1

    for r in range(runs):
        env = simpy.Environment()
        env.process(agent(env, durations[r]))
        env.run()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    runs, repeat = args.runs, args.repeat

    print(f"agentsim engine benchmark: {runs} runs, median of {repeat}; replications per second (higher is better)")
    print(f"{'scenario':<28}{'calls/run':>10}{'DES':>10}{'fast path':>11}{'fast/DES':>10}")
    ref_plan = compile_plan(parse(REFERENCE))
    plans = [("reference (96 calls)", ref_plan)]
    from agentsim.sim.simulation import des_reasons

    for path in sorted((ROOT / "scenarios").glob("*.yaml")):
        plan = compile_plan(load(path))
        if not des_reasons(plan):  # workloads with shared limits are measured by benchmarks/limits.py
            plans.append((path.stem, plan))
    for name, plan in plans:
        nv = len(plan.variants)
        calls = simulate_plan(plan, 200, 1, engine="fastpath").runs["calls"].mean()
        des = median_rate(lambda p=plan: simulate_plan(p, runs, 1, engine="des"), runs * nv, repeat)
        fast = median_rate(lambda p=plan: simulate_plan(p, runs, 1, engine="fastpath"), runs * nv, repeat)
        print(f"{name:<28}{calls:>10.1f}{des:>10,.0f}{fast:>11,.0f}{fast / des:>9.0f}x")
    # The overhead ratio from interleaved pairs (bare, DES, bare, DES...): this machine's speed drifts,
    # so each DES timing is compared with the bare timing taken just before it.
    ratios, cpu_ratios, bares, dess, lean_cpu = [], [], [], [], []
    for _ in range(max(3, repeat)):
        c = time.process_time()
        bare_simpy(runs, lean=True)
        lc = time.process_time() - c
        t, c = time.perf_counter(), time.process_time()
        bare_simpy(runs)
        b, bc = time.perf_counter() - t, time.process_time() - c
        t, c = time.perf_counter(), time.process_time()
        simulate_plan(ref_plan, runs, 1, engine="des")
        d, dc = time.perf_counter() - t, time.process_time() - c
        bares.append(runs / b)
        dess.append(runs / d)
        ratios.append(d / b)
        cpu_ratios.append(dc / bc)
        lean_cpu.append(dc / lc)
    print(
        f"\nreference agent, interleaved: bare SimPy {statistics.median(bares):,.0f} replications/s, "
        f"agentsim DES {statistics.median(dess):,.0f} replications/s (sampling, pricing and totals included)"
    )
    print(
        f"agentsim DES / bare SimPy, wall time: median {statistics.median(ratios):.2f}x "
        f"(pairs: {', '.join(f'{r:.2f}' for r in ratios)}; goal <= 1.3x)"
    )
    print(
        f"agentsim DES / bare SimPy, CPU time:  median {statistics.median(cpu_ratios):.2f}x "
        f"(pairs: {', '.join(f'{r:.2f}' for r in cpu_ratios)})"
    )
    print(
        f"agentsim DES / lean bare SimPy (fan-out as all_of timeouts, like the DES), CPU time: median "
        f"{statistics.median(lean_cpu):.2f}x (pairs: {', '.join(f'{r:.2f}' for r in lean_cpu)})"
    )


if __name__ == "__main__":
    main()

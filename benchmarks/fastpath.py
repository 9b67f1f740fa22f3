"""Fast path against DES: replications per second, their ratio, and memory for a million runs.

    python benchmarks/fastpath.py [--runs N] [--repeat K] [--million-runs M]

Prints, in one run: replications per second (per variant-run, including all random draws, pricing and
per-run totals) of the DES and of the fast path on the 96-call reference agent and on
scenarios/coding-agent.yaml, their ratio, and the peak resident memory of a child process that
simulates M (default 1,000,000) runs of the coding agent on the fast path (summary only).
Goals (issue 6): ratio >= 50x on the reference agent, >= 150k replications/s on one core,
1M coding-agent runs under 1 GiB.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from agentsim import load  # noqa: E402
from agentsim.plan.compiler import compile_plan  # noqa: E402
from agentsim.plan.validation import parse  # noqa: E402
from agentsim.sim.simulation import simulate_plan  # noqa: E402
from engine import REFERENCE  # noqa: E402


def rate(plan, runs: int, engine: str, repeat: int) -> float:
    nv = len(plan.variants)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        simulate_plan(plan, runs, 1, engine=engine)
        times.append(time.perf_counter() - t)
    return runs * nv / statistics.median(times)


def million(runs: int) -> None:
    """Child-process entry: simulate ``runs`` coding-agent runs, print peak RSS (MiB) and the time."""
    plan = compile_plan(load(ROOT / "scenarios" / "coding-agent.yaml"))
    t = time.perf_counter()
    res = simulate_plan(plan, runs, 42, engine="fastpath")
    res.summary_dict()
    dt = time.perf_counter() - t
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{peak:.0f} {dt:.1f} {len(res.runs)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=4096)
    ap.add_argument("--des-runs", type=int, default=500)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--million-runs", type=int, default=1_000_000)
    ap.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        million(args.child)
        return

    print(f"fast path vs DES (median of {args.repeat}; replications/s per variant-run, incl. draws and pricing)")
    print(f"{'scenario':<24}{'DES':>10}{'fast path':>12}{'ratio':>9}")
    plans = [
        ("reference (96 calls)", compile_plan(parse(REFERENCE))),
        ("coding-agent", compile_plan(load(ROOT / "scenarios" / "coding-agent.yaml"))),
    ]
    for name, plan in plans:
        simulate_plan(plan, 64, 1, engine="fastpath")  # warm-up (imports, caches)
        des = rate(plan, args.des_runs, "des", args.repeat)
        fast = rate(plan, args.runs, "fastpath", args.repeat)
        print(f"{name:<24}{des:>10,.0f}{fast:>12,.0f}{fast / des:>8.0f}x")

    out = subprocess.run(
        [sys.executable, __file__, "--child", str(args.million_runs)], capture_output=True, text=True, check=True
    ).stdout.split()
    peak, secs, rows = float(out[0]), float(out[1]), int(out[2])
    print(
        f"\n{args.million_runs:,} coding-agent runs x 3 variants on the fast path: {secs:.1f} s, "
        f"peak RSS {peak:,.0f} MiB ({rows:,} run rows; goal < 1024 MiB)"
    )


if __name__ == "__main__":
    main()

"""What the v1.1 quality keys cost in speed: fail steps, model-dependent probabilities, provider conditions.

    python benchmarks/quality.py [--runs N] [--repeat K]

Runs ``scenarios/coding-agent.yaml`` with its loop as a plain ``continue_p: 0.97, max: 60`` (contract
v1) and with the new keys (the same ``continue_p`` made model-dependent, a ``fail`` step with a
model-dependent ``p`` after the loop, and ``conditions`` on every model), on the fast path and on the
DES, and prints replications per second (median of K repeats, all variants simulated) and the ratio.
(A ``continue_p`` loop is slower than ``times: 30-40`` on the fast path by itself: few iterations are
made by every run, so most are masked.)
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import yaml  # noqa: E402

from agentsim.plan.compiler import compile_plan  # noqa: E402
from agentsim.plan.validation import parse  # noqa: E402
from agentsim.sim.simulation import simulate_plan  # noqa: E402


def plain(doc: dict) -> dict:
    doc = copy.deepcopy(doc)
    loop = next(s for s in doc["agent"]["steps"] if "repeat" in s)["repeat"]
    loop.pop("times")
    loop["continue_p"], loop["max"] = 0.97, 60
    return doc


def with_quality(doc: dict) -> dict:
    doc = plain(doc)
    steps = doc["agent"]["steps"]
    loop = next(s for s in steps if "repeat" in s)["repeat"]
    loop["continue_p"] = {"by": "act", "opus": 0.97, "haiku": 0.98, "default": 0.97}
    steps.insert(
        steps.index(next(s for s in steps if "repeat" in s)) + 1, {"fail": {"p": {"by": "act", "default": 0.1}}}
    )
    for m in doc["models"].values():
        m["conditions"] = {"ttft_x": {"lognormal": {"median": 1, "p90": 1.5}}, "output_tps_x": 1}
    return doc


def rate(doc: dict, runs: int, engine: str, repeat: int) -> float:
    plan = compile_plan(parse(doc))
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        simulate_plan(plan, runs, 1, engine=engine)
        times.append(time.perf_counter() - t0)
    return runs / statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=4096)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    shipped = yaml.safe_load((ROOT / "scenarios" / "coding-agent.yaml").read_text())
    base, quality = plain(shipped), with_quality(shipped)
    print(f"coding-agent, {args.runs} runs x {len(base['variants'])} variants, median of {args.repeat}")
    print(f"{'engine':<10}{'plain runs/s':>14}{'quality runs/s':>16}{'ratio':>8}")
    for engine, runs in (("fastpath", args.runs), ("des", max(200, args.runs // 16))):
        a = rate(base, runs, engine, args.repeat)
        b = rate(quality, runs, engine, args.repeat)
        print(f"{engine:<10}{a:>14,.0f}{b:>16,.0f}{b / a:>8.2f}")


if __name__ == "__main__":
    main()

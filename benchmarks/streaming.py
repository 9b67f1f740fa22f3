"""Cost of token-level streaming metrics: a 2,000-token answer, 10,000 runs.

    python benchmarks/streaming.py [--runs N] [--tokens T] [--repeat K]

Prints the time of one fast-path simulation of a single call (2,000 visible tokens by default) with
and without a consumer, for an even stream and for a stream with jitter, chunks and stalls, and the
difference per call: what building the per-token timelines (agentsim.sim.streaming) and the reader's,
speaker's and QoE metrics costs. Every per-token step is NumPy over batches of calls; the only
Python loops are over batches, instance slots and (for speech) sentences.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from agentsim.plan.compiler import compile_plan  # noqa: E402
from agentsim.plan.validation import parse  # noqa: E402
from agentsim.sim.simulation import simulate_plan  # noqa: E402


def doc(tokens: int, consumer: dict | None, stream: dict | None) -> dict:
    m = {
        "price": {"input_mtok": 1, "output_mtok": 10},
        "ttft": {"lognormal": {"median": 0.8, "p90": 2}},
        "output_tps": {"normal": {"mean": 80, "sd": 15, "min": 20}},
    }
    if stream:
        m["stream"] = stream
    call = {"name": "answer", "output": tokens}
    if consumer:
        call["consumer"] = consumer
    return {"name": "bench", "seed": 1, "runs": 1, "models": {"m": m}, "agent": {"steps": [{"call": call}]}}


def seconds(d: dict, runs: int, repeat: int) -> float:
    plan = compile_plan(parse(d))
    simulate_plan(plan, 64, 1, engine="fastpath")  # warm-up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        res = simulate_plan(plan, runs, 1, engine="fastpath")
        res.summary_dict()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--tokens", type=int, default=2_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rough = {"jitter_cv": 0.6, "chunk_tokens": {"choice": {"values": [1, 4, 16]}}, "stall": {"p": 0.1, "seconds": 2}}
    cases = [
        ("no consumer (baseline)", None, None),
        ("reader, even stream", {"reader": {"words_per_min": 250}}, None),
        ("reader, jitter+chunks+stalls", {"reader": {"words_per_min": 250}}, rough),
        ("speech, even stream", {"speech": {"first_audio": 0.3, "tokens_per_s": 3, "sentence_tokens": 20}}, None),
        ("render, jitter+chunks+stalls", {"render": {"tokens": 200}}, rough),
    ]
    print(f"{args.runs:,} runs of one {args.tokens:,}-token answer, fast path, median of {args.repeat}")
    print(f"{'case':<32}{'total s':>9}{'metrics s':>11}{'µs / call':>11}")
    base = None
    for name, consumer, stream in cases:
        s = seconds(doc(args.tokens, consumer, stream), args.runs, args.repeat)
        if base is None:
            base = s
        extra = s - base
        print(f"{name:<32}{s:>9.2f}{extra:>11.2f}{extra / args.runs * 1e6:>11.0f}")


if __name__ == "__main__":
    main()

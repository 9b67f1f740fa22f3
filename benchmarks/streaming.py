"""Cost of token-level streaming metrics, and of the runs table's per-run streaming columns.

    python benchmarks/streaming.py [--runs N] [--tokens T] [--repeat K] [--only consumers|columns]

1. **Consumers** (a 2,000-token answer, 10,000 runs): the time of one fast-path simulation of a single call
   with and without a consumer, for an even stream and for a stream with jitter, chunks and stalls, and the
   difference per call: what building the per-token timelines (agentsim.sim.streaming) and the reader's,
   speaker's and QoE metrics costs. Every per-token step is NumPy over batches of calls; the only Python
   loops are over batches, instance slots and (for speech) sentences.
2. **Per-run columns** (``scenarios/voice-agent.yaml``, 10,000 runs, three variants): ``agentsim.simulate``
   and ``summary_dict()`` with the runs table's ``CALL.METRIC`` columns (contract v1.2,
   :func:`agentsim.sim.stream_metrics.run_values`) and without them (``run_values`` replaced by one that
   builds none, and no ``slo:``, which reads them), interleaved, median of ``--repeat``; the peak of
   traced memory (``tracemalloc``, in a separate untimed call) and the runs table's size; then, over one
   block of runs, :func:`~agentsim.sim.stream_metrics.block_metrics` alone against ``run_values`` on top
   of it. The bar (issue 27): the columns cost at most 20% over the simulation without them.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import agentsim  # noqa: E402
from agentsim.plan.compiler import compile_plan  # noqa: E402
from agentsim.plan.sampling import block_spans  # noqa: E402
from agentsim.plan.validation import parse  # noqa: E402
from agentsim.sim import stream_metrics  # noqa: E402
from agentsim.sim.simulation import choose_engine, simulate_block, simulate_plan  # noqa: E402

VOICE = ROOT / "scenarios" / "voice-agent.yaml"


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


def consumers(args) -> None:
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


def _no_columns(plan, per_node, n):  # run_values building no column
    return {}


def _simulate(sc, runs: int, with_columns: bool):
    stream_metrics.run_values = _RUN_VALUES if with_columns else _no_columns
    try:
        res = agentsim.simulate(sc, runs=runs)
        res.summary_dict()
        return res
    finally:
        stream_metrics.run_values = _RUN_VALUES


_RUN_VALUES = stream_metrics.run_values


def columns(args) -> None:
    d = agentsim.load(VOICE).model_dump(exclude_none=True, by_alias=True)
    d.pop("slo", None)  # the same summary work in both cases, but for the columns
    sc = parse(copy.deepcopy(d))
    times: dict[bool, list[float]] = {True: [], False: []}  # CPU seconds: less noisy than wall time on a busy host
    _simulate(sc, 256, True)  # warm-up
    for _ in range(args.repeat):
        for case in (True, False):
            t = time.process_time()
            _simulate(sc, args.runs, case)
            times[case].append(time.process_time() - t)
    peak, size = {}, {}
    for case in (True, False):
        tracemalloc.start()
        res = _simulate(sc, args.runs, case)
        peak[case] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        size[case] = int(res.runs.memory_usage(deep=True).sum())
    print(f"\n{VOICE.name}, {args.runs:,} runs x 3 variants: simulate + summary_dict, {args.repeat} times each")
    print(f"{'case':<22}{'CPU s median':>13}{'min':>7}{'peak MB':>9}{'runs table MB':>15}")
    for case, name in ((False, "without CALL.METRIC"), (True, "with CALL.METRIC")):
        print(f"{name:<22}{statistics.median(times[case]):>13.2f}{min(times[case]):>7.2f}{peak[case] / 1e6:>9.1f}"
              f"{size[case] / 1e6:>15.1f}")  # fmt: skip
    ratio = statistics.median(times[True]) / statistics.median(times[False])
    print(
        f"ratio with/without: time {ratio:.3f} (min {min(times[True]) / min(times[False]):.3f}), "
        f"peak memory {peak[True] / peak[False]:.3f}"
    )
    plan = compile_plan(sc)
    _, results = simulate_block(plan, sc.seed, block_spans(args.runs)[0], choose_engine(plan))
    t = time.perf_counter()
    per = [stream_metrics.block_metrics(plan, r) for r in results]
    metrics_s = time.perf_counter() - t
    t = time.perf_counter()
    cols = [_RUN_VALUES(plan, p, r.block.n) for p, r in zip(per, results, strict=True)]
    columns_s = time.perf_counter() - t
    print(
        f"one block ({results[0].block.n:,} runs x 3 variants): block_metrics {metrics_s:.3f} s, run_values "
        f"{columns_s:.4f} s ({len(cols[0])} columns): +{columns_s / metrics_s:.1%}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--tokens", type=int, default=2_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", choices=["consumers", "columns"])
    args = ap.parse_args()
    if args.only != "columns":
        consumers(args)
    if args.only != "consumers":
        columns(args)


if __name__ == "__main__":
    main()

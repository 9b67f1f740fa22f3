"""End-to-end speed on the reference agent of issue 15, through the API and the command line.

    python benchmarks/reference.py [--fast-runs N] [--des-runs N] [--repeat K] [--million M] [--src DIR]

The reference agent: 96 calls per run (40 steps, an 8-way fan-out every 5th step), lognormal TTFT,
**gamma** output speed, one variant. Prints runs per second, summary only, draws included:

* API: ``agentsim.simulate(scenario, runs=N, engine=E).summary()`` in this process, the two engines
  interleaved (fast, DES, fast, DES...), medians of K; CPU time (``time.process_time``), which a busy
  shared machine disturbs far less than wall time.
* CLI: ``agentsim run FILE --json --engine E`` in a child process, CPU time from ``os.wait4``;
  start-up is subtracted by timing 1 run and N runs: ``(N - 1) / (cpu(N) - cpu(1))``.
* the ratio fast path / DES of each (goal: >= 50x; fast path >= 150,000 runs/s).

Then ``--million`` runs (default 1,000,000) of scenarios/coding-agent.yaml (3 variants) through
``agentsim.simulate(...).summary_dict()`` in a fresh child process: CPU and wall seconds and peak
RSS (goal: <= 10 s and < 1 GiB). ``--million 0`` skips it.

``--src DIR`` measures another source tree (e.g. an export of an older commit) with the same script:
``git archive <commit> src | tar -x -C /tmp/old && python benchmarks/reference.py --src /tmp/old/src``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

REFERENCE = {
    "name": "reference-96-calls-gamma",
    "seed": 1,
    "runs": 1000,
    "models": {
        "m": {
            "price": {"input_mtok": 3, "output_mtok": 15},
            "ttft": {"lognormal": {"median": 1.0, "p90": 2.5}},
            "output_tps": {"gamma": {"mean": 60, "sd": 15}},
        }
    },
    "agent": {
        "steps": [
            {"fanout": {"n": 8, "steps": [{"call": {"output": 200}}]}} if s % 5 == 4 else {"call": {"output": 200}}
            for s in range(40)
        ]
    },
}


def api_rates(src: str, fast_runs: int, des_runs: int, repeat: int) -> tuple[list[float], list[float]]:
    """Runs/s of ``simulate(...).summary()`` per engine, interleaved, CPU time."""
    sys.path.insert(0, src)
    import agentsim
    from agentsim.plan.validation import parse

    scenario = parse(REFERENCE)
    agentsim.simulate(scenario, runs=256, engine="fastpath").summary()  # warm-up: imports, tables, caches
    agentsim.simulate(scenario, runs=16, engine="des").summary()
    fast, des = [], []
    for _ in range(repeat):
        for engine, runs, out in (("fastpath", fast_runs, fast), ("des", des_runs, des)):
            t = time.process_time()
            agentsim.simulate(scenario, runs=runs, engine=engine).summary()
            out.append(runs / (time.process_time() - t))
    return fast, des


def child_cpu(argv: list[str], env: dict) -> float:
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {proc.stderr.read().decode()}")
    return usage.ru_utime + usage.ru_stime


def cli_rates(src: str, fast_runs: int, des_runs: int, repeat: int) -> tuple[list[float], list[float]]:
    """Runs/s of ``agentsim run --json``, start-up subtracted: (N - 1) / (cpu(N) - cpu(1))."""
    env = dict(os.environ, PYTHONPATH=src)
    fast, des = [], []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "reference.json"
        path.write_text(json.dumps(REFERENCE))
        for _ in range(repeat):
            for engine, runs, out in (("fastpath", fast_runs, fast), ("des", des_runs, des)):
                argv = [sys.executable, "-m", "agentsim", "run", str(path), "--json", "--engine", engine, "--runs"]
                one = child_cpu([*argv, "1"], env)
                many = child_cpu([*argv, str(runs)], env)
                out.append((runs - 1) / max(many - one, 1e-9))
    return fast, des


def million(src: str, runs: int) -> None:
    """Child-process entry: coding-agent runs, summary only; prints CPU s, wall s, peak RSS MiB."""
    sys.path.insert(0, src)
    import agentsim

    t, c = time.perf_counter(), time.process_time()
    agentsim.simulate(ROOT / "scenarios" / "coding-agent.yaml", runs=runs, seed=42).summary_dict()
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"cpu_s": cpu, "wall_s": wall, "peak_mib": peak}))


def show(label: str, fast: list[float], des: list[float]) -> None:
    ratios = [f / d for f, d in zip(fast, des, strict=True)]
    print(
        f"{label:<6} fast path {statistics.median(fast):>10,.0f} runs/s   DES {statistics.median(des):>8,.0f} runs/s"
        f"   ratio {statistics.median(ratios):>5.1f}x  (per pair: {', '.join(f'{r:.1f}' for r in ratios)})"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fast-runs", type=int, default=50_000)
    ap.add_argument("--des-runs", type=int, default=2_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--million", type=int, default=1_000_000)
    ap.add_argument("--src", default=str(ROOT / "src"))
    ap.add_argument("--skip-cli", action="store_true")
    ap.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    src = str(Path(args.src).resolve())
    if args.child:
        million(src, args.child)
        return
    print(f"reference agent (96 calls, gamma output speed), summary only; CPU time, median of {args.repeat}")
    if not args.skip_cli:
        show("CLI", *cli_rates(src, args.fast_runs, args.des_runs, args.repeat))
    show("API", *api_rates(src, args.fast_runs, args.des_runs, args.repeat))
    if args.million:
        out = subprocess.run(
            [sys.executable, __file__, "--src", src, "--child", str(args.million)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        m = json.loads(out.strip().splitlines()[-1])
        print(
            f"{args.million:,} coding-agent runs x 3 variants (API, summary only): {m['cpu_s']:.1f} s CPU, "
            f"{m['wall_s']:.1f} s wall, peak RSS {m['peak_mib']:,.0f} MiB"
        )


if __name__ == "__main__":
    main()

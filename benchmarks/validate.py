"""Validation and a short run of a generated scenario of many steps: linear in the steps (issue 24).

    python benchmarks/validate.py [--steps N] [--runs R] [--src DIR]

Writes a scenario of ``N`` steps (default 100,000: calls, tools, waits and two-branch parallels in
turn), then, in child processes, times ``agentsim validate`` and ``agentsim run --runs R --json``
(CPU and wall seconds; CPU from ``os.wait4``, which a busy shared machine disturbs less). ``--src``
measures another source tree (``git archive <commit> src | tar -x -C /tmp/old``). Goal: validation of
100,000 steps in at most 5 s.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def scenario(steps: int) -> str:
    lines = [
        "name: many-steps",
        "runs: 2",
        "models:",
        "  m: {price: {input_mtok: 1, output_mtok: 2}, ttft: 0.5, output_tps: 50}",
        "agent:",
        "  steps:",
    ]
    kinds = (
        "    - call: {{name: c{i}, model: m, output: 10}}",
        "    - tool: {{name: t{i}, latency: 0.1, output: 5}}",
        "    - wait: {{latency: 0.1}}",
        "    - parallel: [{{call: {{model: m, output: 5}}}}, {{wait: {{latency: 1}}}}]",
    )
    lines += [kinds[i % 4].format(i=i) for i in range(steps)]
    return "\n".join(lines) + "\n"


def timed(src: str, *args: str) -> tuple[float, float, int]:
    env = {**os.environ, "PYTHONPATH": src}
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "agentsim", *args], env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime, time.perf_counter() - t, os.waitstatus_to_exitcode(status)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--src", default=str(ROOT / "src"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "many-steps.yaml"
        f.write_text(scenario(args.steps))
        print(f"{args.steps:,} steps ({f.stat().st_size / 2**20:.1f} MiB), source {args.src}")
        for what, cmd in (
            ("validate", ["validate", str(f)]),
            ("run", ["run", str(f), "--runs", str(args.runs), "--json"]),
        ):
            cpu, wall, code = timed(args.src, *cmd)
            print(f"{what:9s} cpu {cpu:7.2f} s   wall {wall:7.2f} s   exit {code}")


if __name__ == "__main__":
    main()

"""Time and peak memory of every command a buyer uses, against ``run``, at the same runs (issue 29).

    python benchmarks/commands.py [--runs N] [--million M] [--repeat K] [--only run,report,...] [--src DIR]

Each command runs in a child process on scenarios/coding-agent.yaml (4 variants); its CPU time (user +
system, from ``os.wait4``: a busy shared machine disturbs it far less than wall time), wall time and peak
resident memory (``ru_maxrss``) are printed, medians of K, and compared with ``run --json`` at the same runs:

* ``report -o FILE -q --no-sweep``: goal CPU <= 2 x run + 5 s (figure rendering), peak <= 1.5 x run's;
* ``size --runs-per-month 20000 --json``: goal CPU <= 2 x run's, peak <= 1.5 x run's;
* ``sweep --set models.opus.speeds.fast.output_tps_x=1.5,2.5,3.5 --json --workers 1``: per grid point
  (3 points, each the 4 variants of a run), goal as size's;
* ``optimize --budget-usd-per-run 5 --json -q``: per evaluation (one candidate: a variant, against a
  quarter of run's CPU time), goal as size's;
* with ``--million M`` (default 1,000,000; 0 skips): ``report`` at M runs, goal peak < 2 GiB.

Nothing here is asserted in the tests; the figures of one run on a noisy machine are in docs/validation.md.
``--src DIR`` measures another source tree the same way (``git archive <commit> src | tar -x -C /tmp/old``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "coding-agent.yaml"
VARIANTS = 4  # of coding-agent.yaml
SWEEP_SET = "models.opus.speeds.fast.output_tps_x=1.5,2.5,3.5"
SWEEP_POINTS = 3
GIB = 1024**3


def measure(args: list[str], src: str, out: Path | None = None) -> dict:
    """Run ``agentsim ARGS`` in a child: CPU s, wall s, peak RSS bytes, and its stdout."""
    import time

    env = dict(os.environ, PYTHONPATH=src)
    argv = [sys.executable, "-m", "agentsim", *args]
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        t = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=stdout, stderr=stderr, env=env, cwd=out or ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        stdout.seek(0)
        stderr.seek(0)
        text, err = stdout.read().decode(), stderr.read().decode()
    if os.waitstatus_to_exitcode(status) not in (0, 3):  # optimize: 3 = no assignment meets the budget
        raise SystemExit(f"{' '.join(args)} failed:\n{err}")
    return {"cpu": usage.ru_utime + usage.ru_stime, "wall": wall, "peak": usage.ru_maxrss * 1024, "stdout": text}


def commands(runs: int, tmp: Path) -> dict[str, list[str]]:
    s, n = str(SCENARIO), str(runs)
    return {
        "run": ["run", s, "--runs", n, "--json"],
        "size": ["size", s, "--runs", n, "--runs-per-month", "20000", "--json"],
        "report": ["report", s, "--runs", n, "-o", str(tmp / "report.html"), "-q", "--no-sweep"],
        "sweep": ["sweep", s, "--runs", n, "--set", SWEEP_SET, "--json", "--workers", "1", "-q"],
        "optimize": ["optimize", s, "--runs", n, "--budget-usd-per-run", "5", "--json", "-q"],
    }


def median_of(args: list[str], src: str, repeat: int) -> dict:
    got = [measure(args, src) for _ in range(repeat)]
    return {k: statistics.median(g[k] for g in got) for k in ("cpu", "wall", "peak")} | {"stdout": got[-1]["stdout"]}


def per_unit(name: str, m: dict) -> tuple[float, str]:
    """How many units of work a command did: grid points of a sweep, candidates of an optimization."""
    if name == "sweep":
        return SWEEP_POINTS, "point"
    if name == "optimize":
        return json.loads(m["stdout"])["evaluated"], "evaluation"
    return 1, ""


def report_line(name: str, m: dict, base: dict) -> str:
    units, unit = per_unit(name, m)
    cpu = m["cpu"] / units
    ref = base["cpu"] / VARIANTS if name == "optimize" else base["cpu"]  # an evaluation is one variant
    goal_cpu = 2 * ref + (5 if name == "report" else 0)  # the report's figures: up to 5 s more
    mem = m["peak"] / base["peak"]
    what = f"{name}{' per ' + unit if unit else ''}"
    if name == "run":
        return f"{what:<24} {m['cpu']:7.1f} s CPU {m['wall']:7.1f} s wall {m['peak'] / 2**20:8,.0f} MiB"
    return (
        f"{what:<24} {cpu:7.1f} s CPU {m['wall'] / units:7.1f} s wall {m['peak'] / 2**20:8,.0f} MiB   "
        f"CPU {cpu / ref:4.2f}x run{' per variant' if name == 'optimize' else ''} "
        f"(goal <= 2x{' + 5 s' if name == 'report' else ''}: "
        f"{'ok' if cpu <= goal_cpu else 'MISSED'}), memory {mem:4.2f}x "
        f"(goal <= 1.5x: {'ok' if mem <= 1.5 else 'MISSED'})"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200_000)
    ap.add_argument("--million", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--only", default="run,size,report,sweep,optimize")
    ap.add_argument("--src", default=str(ROOT / "src"))
    args = ap.parse_args()
    src = str(Path(args.src).resolve())
    only = [c for c in args.only.split(",") if c]
    print(f"coding-agent.yaml ({VARIANTS} variants), {args.runs:,} runs; medians of {args.repeat}, source {src}")
    with tempfile.TemporaryDirectory() as tmp:
        cmds = commands(args.runs, Path(tmp))
        base = median_of(cmds["run"], src, args.repeat)
        print(report_line("run", base, base))
        for name in only:
            if name != "run":
                print(report_line(name, median_of(cmds[name], src, args.repeat), base), flush=True)
        if args.million:
            m = median_of(commands(args.million, Path(tmp))["report"], src, 1)
            print(
                f"report at {args.million:,} runs: {m['cpu']:.1f} s CPU, {m['wall']:.1f} s wall, peak "
                f"{m['peak'] / 2**20:,.0f} MiB (goal < 2 GiB: {'ok' if m['peak'] < 2 * GIB else 'MISSED'})"
            )


if __name__ == "__main__":
    main()

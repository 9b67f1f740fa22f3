"""Start-up cost of the command line: CPU seconds each command takes, median of 7 subprocesses.

    python benchmarks/startup.py [--repeat 7] [--agentsim PATH] [--src DIR]

Runs each command in a fresh process and reads its CPU time (user + system) from ``os.wait4``,
which is far less sensitive to a busy machine than wall time. The commands are interleaved
(one round runs each once) so a burst of load hits every command alike. Goal (issue 15):
``agentsim --help`` and ``agentsim validate scenarios/coding-agent.yaml`` at most 0.4 s CPU each.
Also prints the heavy packages each command imported (``-X importtime``), so a regression
points at its cause. ``--src DIR`` runs another source tree (``PYTHONPATH=DIR``), e.g. an older
commit exported with ``git archive <commit> src | tar -x -C /tmp/old``.

Bytecode matters as much as imports: ``pip install`` writes ``.pyc`` files, but ``uv sync`` does not
(unless ``--compile-bytecode``) and with ``PYTHONDONTWRITEBYTECODE=1`` Python never caches them, so
every command compiles every module it imports from source (about 0.3-1 s CPU here). The script says
which case it measures; compile once with ``PYTHONDONTWRITEBYTECODE= python -m compileall -q .venv/lib
src`` to measure what an installed agentsim costs, or set ``PYTHONPYCACHEPREFIX`` to an empty folder
to measure the uncached case on purpose.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "scipy", "matplotlib", "statsmodels", "httpx", "pyarrow", "dask", "simpy", "numpy", "pydantic")
ENV = dict(os.environ)
COMMANDS = {
    "--help": ["--help"],
    "validate": ["validate", str(ROOT / "scenarios" / "coding-agent.yaml")],
    "prices": ["prices", "gpt"],
}


def measured_run(argv: list[str], cwd: Path = ROOT) -> tuple[bytes, float, float, float]:
    """Run ``argv`` in a child process (stderr discarded): its standard output, CPU seconds (user + system),
    wall seconds and peak resident memory (MiB); a failed child ends this script naming its exit code."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv[2:4])} exited with {os.waitstatus_to_exitcode(status)}")
    return out, usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024


def cpu_seconds(argv: list[str]) -> float:
    """CPU time (user + system) of one child process running ``argv``."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed with exit code {os.waitstatus_to_exitcode(status)}")
    return usage.ru_utime + usage.ru_stime


def heavy_imports(base: list[str], args: list[str]) -> list[str]:
    """Heavy top-level packages imported while running the command."""
    env = dict(ENV, PYTHONPROFILEIMPORTTIME="1")
    err = subprocess.run(base + args, env=env, capture_output=True, text=True).stderr
    names = {m.group(1).split(".")[0] for m in re.finditer(r"^import time:.*\|\s+(\S+)$", err, re.M)}
    return sorted(names & set(HEAVY))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--agentsim", default=None, help="the agentsim executable (default: next to this Python)")
    ap.add_argument("--src", default=None, help="run this source tree instead (PYTHONPATH)")
    args = ap.parse_args()
    if args.src:
        ENV["PYTHONPATH"] = str(Path(args.src).resolve())
    exe = args.agentsim or shutil.which("agentsim", path=str(Path(sys.executable).parent)) or "agentsim"
    base = [exe]
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeat):
        for name, argv in COMMANDS.items():
            times[name].append(cpu_seconds(base + argv))
    bare = statistics.median(cpu_seconds([sys.executable, "-c", "pass"]) for _ in range(args.repeat))
    print(f"{'command':<12} {'CPU s (median)':>15} {'min':>7} {'max':>7}  heavy imports")
    for name, argv in COMMANDS.items():
        t = times[name]
        heavy = ", ".join(heavy_imports(base, argv)) or "-"
        print(f"{name:<12} {statistics.median(t):>15.3f} {min(t):>7.3f} {max(t):>7.3f}  {heavy}")
    print(f"{'(python -c pass)':<12} {bare:>11.3f}")
    print(f"bytecode: {_bytecode_state()}")


def _bytecode_state() -> str:
    """Whether the commands above ran from cached bytecode (.pyc) or compiled their modules from source."""
    probe = (
        "import importlib.util, os, typer, agentsim.cli.main as m;"
        "print(all(os.path.exists(importlib.util.cache_from_source(f)) for f in (m.__file__, typer.__file__)))"
    )
    cached = subprocess.run([sys.executable, "-c", probe], env=ENV, capture_output=True, text=True).stdout.strip()
    if cached == "True":
        return "cached (.pyc files present, as after pip install)"
    return "NOT cached: every module compiled from source at each start (uv sync without --compile-bytecode)"


if __name__ == "__main__":
    main()

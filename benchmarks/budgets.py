"""Every speed budget of the project, measured in one run and printed against its budget (``make bench``).

    python benchmarks/budgets.py [--repeat 5] [--steps 100000]

Budgets (issue 37: start-up and the fast path; issue 38: a scenario of very many steps):

* ``agentsim validate scenarios/coding-agent.yaml``: at most 0.4 s CPU (median of ``--repeat`` processes);
* a one-run ``agentsim run scenarios/coding-agent.yaml --runs 1 --json``: at most 0.8 s CPU;
* the fast path on the 96-call reference agent (benchmarks/engine.py): at least 150,000 runs/s at 20,000 and at
  200,000 runs, and at least 50 times the DES's runs/s;
* a generated scenario of ``--steps`` steps (benchmarks/validate.py): ``validate`` in at most 5 s CPU and one
  run in at most 10 s CPU.

CPU seconds of a child process come from ``os.wait4`` (user + system), which a busy machine disturbs less than
wall time; throughput is the median of three timings in this process. Run it on an idle machine: the figures
are this machine's, the budgets are the project's. This is a benchmark that reports, never a test that fails.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The commands timed here run as an installed agentsim does: from cached bytecode. With PYTHONDONTWRITEBYTECODE
# set (as on some CI machines and containers) every child would compile agentsim's modules from source at every
# start (about 0.1 s CPU); the first, uncounted run of each command writes the caches instead.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from agentsim.plan.compiler import compile_plan  # noqa: E402
from agentsim.plan.validation import parse  # noqa: E402
from agentsim.sim.simulation import simulate_plan  # noqa: E402
from engine import REFERENCE  # noqa: E402
from fastpath import rate  # noqa: E402
from startup import cpu_seconds  # noqa: E402
from validate import scenario, timed  # noqa: E402

CODING = str(ROOT / "scenarios" / "coding-agent.yaml")
AGENTSIM = [sys.executable, "-m", "agentsim"]


def _row(figure: str, value: float, budget: float, unit: str, at_most: bool) -> None:
    met = value <= budget if at_most else value >= budget
    sign = "<=" if at_most else ">="
    print(f"{figure:<44} {value:>12,.2f} {unit:<7} {sign} {budget:>10,.2f}  {'met' if met else 'NOT MET'}")


def _start_up(repeat: int) -> None:
    for figure, args, budget in (
        ("validate coding-agent (CPU)", ["validate", CODING], 0.4),
        ("run coding-agent, one run (CPU)", ["run", CODING, "--runs", "1", "--json"], 0.8),
    ):
        cpu_seconds(AGENTSIM + args)  # once to write bytecode caches, not counted
        _row(figure, statistics.median(cpu_seconds(AGENTSIM + args) for _ in range(repeat)), budget, "s", True)


def _fast_path() -> None:
    plan = compile_plan(parse(REFERENCE))
    simulate_plan(plan, 64, 1, engine="fastpath")  # warm-up (imports, caches)
    fast = {runs: rate(plan, runs, "fastpath", 3) for runs in (20_000, 200_000)}
    for runs, value in fast.items():
        _row(f"fast path, reference agent, {runs:,} runs", value, 150_000, "runs/s", False)
    des = rate(plan, 500, "des", 3)
    _row("fast path / DES, reference agent", fast[20_000] / des, 50, "x", False)


def _many_steps(steps: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "many-steps.yaml"
        f.write_text(scenario(steps))
        for figure, args, budget in (
            (f"validate {steps:,} steps (CPU)", ["validate", str(f)], 5.0),
            (f"run {steps:,} steps once (CPU)", ["run", str(f), "--runs", "1", "--json"], 10.0),
        ):
            cpu, _, code = timed(str(ROOT / "src"), *args)
            _row(figure if code == 0 else f"{figure} [exit {code}]", cpu, budget, "s", True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--steps", type=int, default=100_000)
    args = ap.parse_args()
    print(f"{'figure':<44} {'measured':>12} {'':<7}    {'budget':>10}")
    _start_up(args.repeat)
    _fast_path()
    _many_steps(args.steps)


if __name__ == "__main__":
    main()

"""Catalog prices cost nothing per simulated call: look-ups happen once, when a scenario is compiled.

    python benchmarks/pricing.py [--runs N] [--repeat K]

Runs the bundled coding agent (scenarios/coding-agent.yaml) twice: as written
(explicit price tables) and with every price taken from the genai-prices catalog
(Opus 4.8 standard and ``{speed: fast}``, Haiku 4.5). Prints

* how many catalog look-ups one ``simulate()`` makes, for two run counts (the same
  number: one per catalog-priced tier, whatever the number of runs);
* compile time of each version (where the look-ups happen);
* replications per second of the engine on the compiled plans, DES (N runs) and fast
  path (10 N runs),
  and the ratio catalog / explicit (goal: catalog no more than 5% slower, i.e.
  ratio >= 0.95), and the same for ``simulate()`` including compilation.

Figures are medians of K repeats in one process, explicit and catalog interleaved (alternating which goes first),
timed in CPU seconds of this process (``time.process_time``) so that other jobs on
a shared machine disturb them less. ``simulate()`` includes compiling the scenario,
i.e. the look-ups.
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

import agentsim.pricing.rates as pricing  # noqa: E402
from agentsim.model.loading import load_data  # noqa: E402
from agentsim.plan.compiler import compile_plan  # noqa: E402
from agentsim.plan.validation import parse  # noqa: E402
from agentsim.sim.simulation import simulate, simulate_plan  # noqa: E402

AS_OF = "2026-11-29"


def scenarios():
    data, _ = load_data(ROOT / "scenarios" / "coding-agent.yaml")
    explicit = copy.deepcopy(data)
    catalog = copy.deepcopy(data)
    catalog["prices_as_of"] = AS_OF
    opus = catalog["models"]["opus"]
    opus["price"] = {"catalog": "anthropic/claude-opus-4-8"}
    opus["speeds"]["fast"]["price"] = {"catalog": "anthropic/claude-opus-4-8", "context": {"speed": "fast"}}
    catalog["models"]["haiku"]["price"] = {"catalog": "anthropic/claude-haiku-4-5"}
    return parse(explicit), parse(catalog)


def timed(fn) -> float:
    """CPU seconds of this process (robust to other processes sharing the machine's cores)."""
    t = time.process_time()
    fn()
    return time.process_time() - t


def count_lookups(sc, runs: int) -> int:
    calls = 0
    real = pricing.catalog_price_fields

    def counting(*a, **k):
        nonlocal calls
        calls += 1
        return real(*a, **k)

    pricing.catalog_price_fields = counting
    try:
        simulate(sc, runs=runs, engine="fastpath")
    finally:
        pricing.catalog_price_fields = real
    return calls


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    runs, repeat = args.runs, args.repeat
    fast_runs = 10 * runs  # the fast path is ~20x faster: time it on more runs
    explicit, catalog = scenarios()
    simulate(catalog, runs=10)  # warm up: import the catalog once

    print(
        f"pricing benchmark: coding agent x 3 variants, {runs} runs (DES) and {fast_runs} runs (fast path), "
        f"median of {repeat}, CPU time"
    )
    for n in (runs // 10, runs):
        print(f"catalog look-ups in one simulate() of {n:>5} runs: {count_lookups(catalog, n)}")

    plans = {"explicit": compile_plan(explicit), "catalog": compile_plan(catalog)}
    nv = len(plans["explicit"].variants)
    times: dict[tuple[str, str], list[float]] = {}
    pairs = [("explicit", explicit), ("catalog", catalog)]
    for i in range(repeat):
        for name, sc in pairs if i % 2 == 0 else pairs[::-1]:  # alternate who goes first
            times.setdefault((name, "compile"), []).append(timed(lambda sc=sc: compile_plan(sc)))
            plan = plans[name]
            times.setdefault((name, "des"), []).append(timed(lambda p=plan: simulate_plan(p, runs, 1, engine="des")))
            times.setdefault((name, "fastpath"), []).append(
                timed(lambda p=plan: simulate_plan(p, fast_runs, 1, engine="fastpath"))
            )
            times.setdefault((name, "simulate"), []).append(
                timed(lambda s=sc: simulate(s, runs=fast_runs, seed=1, engine="fastpath"))
            )

    def med(name, what):
        return statistics.median(times[(name, what)])

    print(
        f"\ncompile_plan: explicit {med('explicit', 'compile') * 1e3:.1f} ms, "
        f"catalog {med('catalog', 'compile') * 1e3:.1f} ms"
    )
    print(f"\n{'replications/s':<28}{'explicit':>10}{'catalog':>10}{'catalog/explicit':>18}")
    for what, label in (
        ("des", "DES (compiled plan)"),
        ("fastpath", "fast path (compiled plan)"),
        ("simulate", "simulate(), fast path"),
    ):
        n = runs if what == "des" else fast_runs
        e, c = n * nv / med("explicit", what), n * nv / med("catalog", what)
        print(f"{label:<28}{e:>10,.0f}{c:>10,.0f}{c / e:>17.3f}")
    print("\ngoal: catalog/explicit >= 0.95 (catalog prices no more than 5% slower)")


if __name__ == "__main__":
    main()

"""One large simulation on a Dask cluster: a LocalCluster of 1 worker against one of 2 workers.

    python benchmarks/dask_simulate.py [--scenario small|reference] [--runs 10000000] [--repeat 3]
                                       [--workers 2] [--no-local] [--src DIR]

``simulate(..., executor=client)`` sends the blocks of runs (4,096 runs each) of one simulation to
the cluster and reassembles them in order (agentsim.sim.executors). Scenarios, one variant each (a
10,000,000-run table fits in memory):

* ``small`` (default): one model, a planning call and a loop of 1-4 calls (uniform), lognormal TTFT
  and output speed; ~0.7 µs of fast-path work per run, so the client's share is the largest;
* ``reference``: the 96-call reference agent of issue 15 (benchmarks/reference.py: 40 steps, an
  8-way fan-out every 5th step, gamma output speed), ~9 µs per run.

The clusters are the ``LocalCluster`` s ``simulate(..., executor="dask", workers=N)`` starts
(agentsim.sim.executors.dask_client). Both are started first, warmed up
(the workers import agentsim once), then timed in interleaved pairs (1 worker, then 2) in this one
process. Prints medians of ``--repeat`` pairs:

* seconds on 1 and on ``--workers`` workers, the speed-up (goal >= 1.8x on 2 cores) and runs/s;
* the CPU seconds this process (the client: receiving blocks, copying them into the runs table)
  spends itself, the serial part, and the speed-up that leaves possible on idle cores (Amdahl);
* the bytes of run columns a task sends back per run (agentsim.sim.packing);
* whether every summary.json is byte-identical to the others and (unless ``--no-local``) to the
  same simulation in this one process;
* a control: the speed-up of a pure-Python loop on the same number of processes, i.e. what the
  shared machine gives right now (compare the Dask speed-up with this, not only with the goal).

``--src DIR`` measures another source tree with the same script (the workers inherit its path), e.g.
``git archive main src | tar -x -C /tmp/old && python benchmarks/dask_simulate.py --src /tmp/old/src``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = sys.argv[sys.argv.index("--src") + 1] if "--src" in sys.argv[:-1] else str(ROOT / "src")
sys.path.insert(0, SRC)  # the workers (spawned processes) inherit this path

from agentsim.sim.simulation import simulate  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from control import control_line  # noqa: E402
from reference import REFERENCE  # noqa: E402

SCENARIO = {
    "name": "dask-bench",
    "seed": 7,
    "models": {
        "m": {
            "price": {"input_mtok": 3, "output_mtok": 15},
            "ttft": {"lognormal": {"median": 0.8, "p90": 1.6}},
            "output_tps": {"lognormal": {"median": 80, "p90": 110}},
        }
    },
    "agent": {
        "steps": [
            {"call": {"name": "plan", "model": "m", "input": 2000, "output": 300}},
            {
                "repeat": {
                    "times": {"uniform": {"low": 1, "high": 4}},
                    "steps": [{"call": {"name": "act", "model": "m", "input": 1000, "output": 120}}],
                }
            },
        ]
    },
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", choices=("small", "reference"), default="small")
    ap.add_argument("--runs", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-local", action="store_true", help="skip the one-process run (its bytes and time)")
    ap.add_argument("--src", default=SRC, help="measure another source tree (e.g. an export of an older commit)")
    args = ap.parse_args()
    sc = SCENARIO if args.scenario == "small" else REFERENCE
    what = "a small scenario (2-5 calls per run)" if args.scenario == "small" else "the 96-call reference agent"

    from agentsim.sim.executors import dask_client

    stack = ExitStack()  # the LocalClusters simulate(..., executor="dask", workers=N) starts
    t = time.perf_counter()
    one, many = stack.enter_context(dask_client(1)), stack.enter_context(dask_client(args.workers))
    start = time.perf_counter() - t
    for client in (one, many):  # warm-up: every worker imports agentsim and compiles once
        simulate(sc, runs=20_000, executor=client)
    print(
        f"simulate(): {args.runs:,} runs of {what}, median of {args.repeat} "
        f"interleaved pairs; clusters started in {start:.1f} s (not included)"
    )

    times: dict[str, list[float]] = {"1": [], "n": []}
    serial: dict[str, list[float]] = {"1": [], "n": []}
    docs = set()
    for _ in range(args.repeat):
        for key, client in (("1", one), ("n", many)):
            c0, t0 = time.process_time(), time.perf_counter()
            res = simulate(sc, runs=args.runs, executor=client)
            times[key].append(time.perf_counter() - t0)
            serial[key].append(time.process_time() - c0)
            docs.add(res.to_json())
            del res
    stack.close()

    t1, tn = statistics.median(times["1"]), statistics.median(times["n"])
    ratio = statistics.median(a / b for a, b in zip(times["1"], times["n"], strict=True))
    s1, sn = statistics.median(serial["1"]), statistics.median(serial["n"])
    print(f"  1 worker            {t1:8.2f} s   {args.runs / t1:12,.0f} runs/s")
    print(
        f"  {args.workers} workers           {tn:8.2f} s   {args.runs / tn:12,.0f} runs/s   "
        f"speed-up {ratio:.2f}x (goal >= 1.8x on 2 cores)"
    )
    bound = t1 / (sn + max(t1 - s1, 0.0) / args.workers)
    print(
        f"  client (serial)     {sn:8.2f} s CPU in this process with {args.workers} workers ({s1:.2f} s with 1): "
        f"at most {bound:.2f}x on {args.workers} idle cores (Amdahl)"
    )
    try:
        packed, unpacked = _payload(sc), _payload(sc, packed=False)
        print(f"  run columns sent    {packed:8.1f} bytes per run (packed; {unpacked:.0f} unpacked)")
    except ImportError:  # a source tree from before agentsim.sim.packing: every column as it is
        print("  run columns sent    (this source tree sends every column as it is)")
    same = len(docs) == 1
    if not args.no_local:
        t0 = time.perf_counter()
        local = simulate(sc, runs=args.runs).to_json()
        print(f"  1 process, no Dask {time.perf_counter() - t0:8.2f} s")
        same = same and local in docs
    print(f"  summary.json identical {'yes' if same else 'NO'}")
    print(control_line(args.workers))


def _payload(sc, packed: bool = True) -> float:
    """Bytes of run columns one task sends per run (agentsim.sim.packing), from 8 blocks run here."""
    from agentsim.plan.compiler import compile_plan
    from agentsim.plan.sampling import block_spans
    from agentsim.plan.validation import parse
    from agentsim.sim.packing import pack_columns, packed_nbytes, raw
    from agentsim.sim.records import run_columns
    from agentsim.sim.simulation import choose_engine, simulate_block

    plan = compile_plan(parse(sc, file="<benchmark>"))
    engine = choose_engine(plan)
    spans = block_spans(8 * 4096)
    blocks = [simulate_block(plan, 7, s, engine, summary_only=True, samples=False)[1][0] for s in spans]
    cols = [run_columns(plan, r) for r in blocks]
    if packed:
        return packed_nbytes(pack_columns(cols)) / (8 * 4096)
    return sum(packed_nbytes({k: raw(a) for k, a in c.items()}) for c in cols) / (8 * 4096)


if __name__ == "__main__":
    main()

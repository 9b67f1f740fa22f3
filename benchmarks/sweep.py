"""Sweep speed: a 200-point grid x 200 runs on 1 and N processes, and on a local Dask cluster.

    python benchmarks/sweep.py [--runs 200] [--repeat 3] [--workers 2] [--no-dask]

The grid is the bundled coding agent with the fast tier's speed-up from 1.5 to 3.4
in steps of 0.1 (20 values) and the act/observe loop run 5, 10, ..., 50 times
(10 values): 200 points, 3 variants each. Prints, as medians of ``--repeat`` runs
in one process:

* seconds for the sweep on 1 process and on ``--workers`` processes, and the
  speed-up (the goal on 2 cores is >= 1.8x); the CPU seconds the parent spends
  itself (the serial part) and the speed-up that leaves possible on idle cores; the
  CPU seconds of the parent and workers together against one process (the overhead
  of going parallel, whatever else runs on the machine; pyarrow's string operations
  may use threads, so CPU seconds can exceed wall seconds);
* seconds on a local Dask cluster of ``--workers`` processes (started once, then
  warmed up, so its start-up is reported separately), the Dask overhead per task
  ((Dask - process pool) / tasks), and the round trip of an empty Dask task;
* whether the three tables are identical (they must be);
* a control: the speed-up of a pure-Python loop on the same number of processes, i.e.
  what the machine gives right now (on a shared machine other jobs take cores too;
  compare the sweep's speed-up with this, not only with the goal).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from agentsim.analysis.sweeps import parse_set, run_sweep  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from control import control_line  # noqa: E402

SCENARIO = ROOT / "scenarios" / "coding-agent.yaml"
GRID = ["models.opus.speeds.fast.output_tps_x=1.5:3.4:0.1", "agent.steps[1].repeat.times=5:50:5"]


def timed(fn, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--no-dask", action="store_true")
    args = ap.parse_args()
    axes = [parse_set(s) for s in GRID]
    n_points = len(axes[0].values) * len(axes[1].values)
    print(f"sweep: {SCENARIO.name}, {n_points} points x {args.runs} runs x 3 variants, median of {args.repeat}")

    t1, one = timed(lambda: run_sweep(SCENARIO, axes, runs=args.runs, workers=1), args.repeat)
    print(f"  1 process           {t1:8.2f} s   ({t1 / n_points * 1000:.1f} ms per point)")
    c0, k0 = time.process_time(), _children_cpu()
    tn, many = timed(lambda: run_sweep(SCENARIO, axes, runs=args.runs, workers=args.workers), args.repeat)
    serial = (time.process_time() - c0) / args.repeat  # CPU the parent itself spends (not the workers)
    in_workers = (_children_cpu() - k0) / args.repeat  # CPU of the worker processes (ended with each pool)
    c0 = time.process_time()
    run_sweep(SCENARIO, axes, runs=args.runs, workers=1)
    cpu1 = time.process_time() - c0  # all the CPU work, done in one process
    print(f"  {args.workers} processes         {tn:8.2f} s   speed-up {t1 / tn:.2f}x (goal >= 1.8x on 2 cores)")
    bound = cpu1 / (serial + (cpu1 - serial) / args.workers)
    print(
        f"  serial part         {serial:8.2f} s CPU in the parent of {cpu1:.2f} s in all: at most "
        f"{bound:.2f}x on {args.workers} idle cores (Amdahl)"
    )
    print(
        f"  CPU with {args.workers} processes {serial + in_workers:8.2f} s (parent {serial:.2f} + workers "
        f"{in_workers:.2f}) vs {cpu1:.2f} s on 1 (CPU of all threads: pyarrow may use more than one)"
    )
    same = one.table.equals(many.table)

    if not args.no_dask:
        import logging

        from dask.distributed import Client, LocalCluster

        t = time.perf_counter()
        cluster = LocalCluster(
            n_workers=args.workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
        client = Client(cluster)
        start = time.perf_counter() - t
        address = cluster.scheduler_address

        def on_dask():
            return run_sweep(SCENARIO, axes, runs=args.runs, workers=args.workers, executor="dask", scheduler=address)

        on_dask()  # warm-up: the workers import agentsim once
        td, dask = timed(on_dask, args.repeat)
        n_tasks = dask.tasks
        empty = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            client.gather(client.map(_noop, range(200), pure=False))
            empty.append((time.perf_counter() - t) / 200)
        client.close()
        cluster.close()
        print(
            f"  dask ({args.workers} workers)    {td:8.2f} s   vs process pool {td / tn:.2f}x; "
            f"cluster start {start:.1f} s (not included)"
        )
        print(
            f"  dask overhead       {(td - tn) / n_tasks * 1000:8.1f} ms per task ({n_tasks} tasks); "
            f"empty task round trip {statistics.median(empty) * 1000:.2f} ms"
        )
        same = same and one.table.equals(dask.table)
    print(f"  tables identical    {'yes' if same else 'NO'}")
    print(control_line(args.workers, args.repeat))


def _children_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _noop(x):
    return x


if __name__ == "__main__":
    main()

"""The machine's own parallel speed-up right now: a control for benchmarks that compare 1 and N processes.

    from control import machine_speedup   (benchmarks/ on sys.path, as the scripts here run)

A pure-Python loop (no I/O, no shared memory) runs 16 times in this process, then on a pool of
``workers`` processes; the ratio is what the machine gives at this moment. On a shared or busy
machine it falls well below ``workers``: compare a measured speed-up with it, not only with a goal.
"""

from __future__ import annotations

import statistics
import time
from concurrent.futures import ProcessPoolExecutor

_WORK = [2_000_000] * 16


def _burn(n: int) -> int:
    s = 0
    for i in range(n):
        s += i * i
    return s


def _pool(workers: int) -> None:
    with ProcessPoolExecutor(workers) as pool:
        list(pool.map(_burn, _WORK))


def _seconds(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def machine_speedup(workers: int, repeat: int = 1) -> float:
    """Median seconds of the loop in one process over its median on ``workers`` processes."""
    one = _seconds(lambda: [_burn(n) for n in _WORK], repeat)
    return one / _seconds(lambda: _pool(workers), repeat)


def control_line(workers: int, repeat: int = 1) -> str:
    """The line both benchmarks print."""
    return (
        f"  control: a pure-Python loop on {workers} processes runs {machine_speedup(workers, repeat):.2f}x "
        "faster than on 1 (the machine's speed-up right now)"
    )

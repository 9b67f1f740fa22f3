"""Where independent pieces of work run: this process, a pool of processes, or a Dask cluster.

A simulation is cut into blocks of runs and a sweep into grid points; each piece depends only on its
own inputs (a block's numbers only on the seed and the block index), so the pieces can run anywhere
and in any order. The result is the same bytes wherever they ran, because the caller reassembles
them by index (:func:`ordered_map` hands them back in order; :func:`unordered_map` with their item).

Executors:

* ``"process"`` — ``workers`` processes of this machine (``concurrent.futures``); one worker runs
  everything here, in this process.
* ``"dask"`` — a Dask cluster: an existing one at ``scheduler`` (an address such as
  ``tcp://host:8786``), or, without an address, a ``LocalCluster`` of ``workers`` processes started for
  the call and closed after it. Its workers need the same version of agentsim (and its dependencies)
  installed: they import it to run the pieces.
* a ``distributed.Client`` already connected (a notebook's client): used as is, never closed.

Dask is an optional dependency (``pip install 'agentsim[dask]'``); it is imported only when asked for.
A scheduler that cannot be reached within Dask's connect timeout
(``distributed.comm.timeouts.connect``, e.g. ``DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT=5s``) is an
:class:`ExecutorError` naming the address and what to check, never a hang.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, fields
from functools import partial
from itertools import repeat
from typing import Any

__all__ = [
    "EXECUTORS",
    "ExecutorError",
    "Placement",
    "check_executor",
    "dask_client",
    "ordered_chunks",
    "ordered_map",
    "process_pool",
    "reach_scheduler",
    "unordered_map",
]

EXECUTORS = ("process", "dask")
MAX_CHUNK = 32  # items (blocks of 4,096 runs) per Dask task at most
TASKS_PER_THREAD = 8  # Dask tasks per worker thread at least, when there are items enough
_END = object()
# A LocalCluster started here has no dashboard, so nothing reads what Dask measures for it: each worker's
# statistical profiler (a stack sample every 10 ms), the 20 ms event-loop tick and the 0.5 s system monitor.
# Left on, they take ~0.17 of a core while idle (client and scheduler 0.07, each worker 0.05), from the
# cores the blocks run on; off, ~0.10 (benchmarks/dask_simulate.py).
QUIET_CLUSTER = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
}


class ExecutorError(ValueError):
    """The requested executor cannot be used (Dask missing, a scheduler out of reach, a bad name)."""


@dataclass(frozen=True)
class Placement:
    """Where blocks of runs are simulated: ``workers`` local processes, or a Dask cluster (``executor="dask"``
    with an optional ``scheduler`` address, or a connected ``distributed.Client`` as ``executor``)."""

    workers: int = 1
    executor: Any = "process"
    scheduler: str | None = None

    def check(self) -> None:
        """Refuse an unknown executor, or a scheduler address without Dask (:func:`check_executor`)."""
        check_executor(self.executor, self.scheduler)

    def in_this_process(self, blocks: int) -> bool:
        """Whether ``blocks`` blocks run here, one after another."""
        return self.executor == "process" and (self.workers == 1 or blocks == 1)

    def options(self) -> dict[str, Any]:
        """As the keyword options of :func:`ordered_chunks` (shallow: a Dask ``Client`` is passed as it is,
        never copied; ``dataclasses.asdict`` would deep-copy it and fail on its asyncio tasks)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _is_client(executor: Any) -> bool:
    return type(executor).__name__ == "Client" and hasattr(executor, "submit")


def check_executor(executor: Any, scheduler: str | None = None) -> None:
    """Refuse an unknown executor, or a scheduler address without Dask, before any work starts."""
    if _is_client(executor):
        if scheduler:
            raise ExecutorError("give either a Dask client or a scheduler address, not both")
        return
    if executor not in EXECUTORS:
        raise ExecutorError(f"unknown executor {executor!r} (choose one of {', '.join(EXECUTORS)})")
    if scheduler and executor != "dask":
        raise ExecutorError("a scheduler address needs the dask executor (--executor dask)")


@contextmanager
def dask_client(workers: int = 1, scheduler: str | None = None, client: Any = None) -> Iterator[Any]:
    """A connected ``distributed.Client``: ``client`` itself, one connected to ``scheduler``, or one of a
    ``LocalCluster`` of ``workers`` single-threaded processes (closed on exit)."""
    if client is not None:
        yield client
        return
    _import_distributed()
    from dask.distributed import Client, LocalCluster

    cluster = None
    if scheduler:
        timeout = reach_scheduler(scheduler)  # a clear error at once, before a Client retries to its timeout
        try:
            client = Client(scheduler, set_as_default=False, timeout=timeout)
        except (OSError, TimeoutError, ValueError, TypeError) as exc:
            raise _unreachable(scheduler, exc, timeout) from None
    else:
        import logging

        import dask

        with dask.config.set(QUIET_CLUSTER):  # the workers (processes started here) take this config
            cluster = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
            # results straight from the workers: through the scheduler, each byte would be received
            # twice in this process (the scheduler of a LocalCluster runs here too)
            client = Client(cluster, set_as_default=False, direct_to_workers=True)
    try:
        yield client
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _import_distributed() -> None:
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        raise ExecutorError("the dask executor needs dask.distributed: pip install 'agentsim[dask]'") from None


def _unreachable(address: str, exc: BaseException, timeout: float) -> ExecutorError:
    reason = str(exc).strip().rstrip(".") or type(exc).__name__
    return ExecutorError(
        f"cannot use the Dask scheduler at {address!r}: {reason}. Check the address (e.g. tcp://host:8786, as "
        "the scheduler printed it at start), that the scheduler is running and that this machine can reach its "
        f"port; the connect timeout is {timeout:g} s (Dask's distributed.comm.timeouts.connect). Leave out the "
        "scheduler address to start a local cluster."
    )


def reach_scheduler(address: str) -> float:
    """Check that a scheduler address parses and (TCP, TLS) that its port accepts a connection within Dask's
    connect timeout; return that timeout in seconds, or raise :class:`ExecutorError` saying what to check."""
    import socket

    _import_distributed()
    import dask
    from dask.utils import parse_timedelta
    from distributed.comm.addressing import parse_address, parse_host_port

    timeout = parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), default="seconds")
    try:
        scheme, location = parse_address(address)
        if scheme in ("tcp", "tls"):  # other transports: the Client's own connect (within the timeout) tells
            with socket.create_connection(parse_host_port(location), timeout=timeout):
                pass
    except (OSError, TimeoutError, ValueError, TypeError) as exc:
        raise _unreachable(address, exc, timeout) from None
    return timeout


def ordered_map(
    fn: Callable,
    shared: Any,
    items: Sequence,
    *,
    workers: int = 1,
    executor: Any = "process",
    scheduler: str | None = None,
) -> Iterator:
    """``fn(shared, item)`` for every item, yielded in the order of ``items`` wherever they ran.

    ``shared`` (a compiled plan, say) is sent to each Dask worker once; at most a few pieces per worker
    thread are in flight, so results are consumed as they come and memory stays bounded.
    """
    where = {"workers": workers, "executor": executor, "scheduler": scheduler}
    for _, out in ordered_chunks(partial(_run_chunk, fn), shared, items, **where):
        yield from out


def ordered_chunks(
    fn: Callable,
    shared: Any,
    items: Sequence,
    *,
    workers: int = 1,
    executor: Any = "process",
    scheduler: str | None = None,
) -> Iterator[tuple[Sequence, Any]]:
    """``(chunk, fn(shared, chunk))`` for consecutive chunks of ``items``, in order, wherever they ran.

    One task per chunk: a task costs milliseconds of scheduling and a round trip, and its result is
    one message, so ``fn`` can return the chunk's results packed together (agentsim.sim.packing).
    Chunks hold up to ``MAX_CHUNK`` items, with at least ``TASKS_PER_THREAD`` chunks per worker
    thread (for balance) when there are items enough; one process runs chunks of one item.
    """
    check_executor(executor, scheduler)
    if _is_client(executor) or executor == "dask":
        with dask_client(workers, scheduler, executor if _is_client(executor) else None) as client:
            yield from _dask_ordered(client, fn, shared, items)
    elif workers > 1 and len(items) > 1:
        chunks = _chunks(items, workers)
        with process_pool(min(workers, len(chunks))) as pool:
            yield from zip(chunks, pool.map(fn, repeat(shared), chunks), strict=True)
    else:
        for item in items:
            yield [item], fn(shared, [item])


@contextmanager
def process_pool(workers: int) -> Iterator[ProcessPoolExecutor]:
    """A pool of ``workers`` processes that ends at once when its block ends by an exception.

    ``with ProcessPoolExecutor()`` waits, on the way out, for every task queued: a Ctrl-C (SIGINT, raised as
    :class:`KeyboardInterrupt` in this process) during a sweep of many points would end the command only once
    every point had run. Here an exception (or a generator closed early) cancels the tasks not started and ends
    the worker processes (SIGTERM) before it goes on; a block that ends normally waits for its tasks as usual.
    """
    pool = ProcessPoolExecutor(max_workers=workers)
    try:
        yield pool
    except BaseException:
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)


def stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel a pool's queued tasks and end its worker processes now (Python 3.14's ``terminate_workers``;
    before it, each of the pool's processes, ``_processes``, is terminated, and killed if still alive 2 s later:
    tests/test_interrupts.py checks the attribute still means that)."""
    terminate = getattr(pool, "terminate_workers", None)
    if terminate is not None:  # pragma: no cover - Python 3.14 and later
        terminate()
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in processes:
        if proc.is_alive():
            proc.terminate()
    for proc in processes:
        proc.join(timeout=2)
    for proc in processes:  # a worker whose SIGTERM handler hangs (coverage's, saving its data) ends anyway
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=5)


def _run_chunk(fn: Callable, shared: Any, chunk: Sequence) -> list:
    return [fn(shared, item) for item in chunk]


def _chunks(items: Sequence, threads: int) -> list[Sequence]:
    size = max(1, min(MAX_CHUNK, len(items) // (threads * TASKS_PER_THREAD)))
    return [items[i : i + size] for i in range(0, len(items), size)]


def _dask_ordered(client, fn: Callable, shared: Any, items: Sequence) -> Iterator:
    """Chunks of items (:func:`_chunks`) as Dask tasks, at most ``2 x threads + 1`` in flight (memory
    stays bounded), results handed back in order with their chunk."""
    threads = max(1, sum(client.nthreads().values()))
    chunks = _chunks(items, threads)
    [shared_f] = client.scatter([shared], broadcast=True, hash=False)

    def submit(chunk):
        return client.submit(fn, shared_f, chunk, pure=False)

    window = 2 * threads + 1
    pending: deque = deque((c, submit(c)) for c in chunks[:window])
    left = iter(chunks[window:])
    while pending:
        chunk, fut = pending.popleft()
        out = fut.result()
        nxt = next(left, _END)  # one more in flight for each one done
        if nxt is not _END:
            pending.append((nxt, submit(nxt)))
        yield chunk, out


def unordered_map(
    fn: Callable,
    items: Sequence,
    *,
    workers: int = 1,
    executor: Any = "process",
    scheduler: str | None = None,
) -> Iterator:
    """``fn(item)`` for every item, yielded as each finishes (any order: the results carry their index)."""
    check_executor(executor, scheduler)
    if _is_client(executor) or executor == "dask":
        with dask_client(workers, scheduler, executor if _is_client(executor) else None) as client:
            from dask.distributed import as_completed as dask_completed

            for fut in dask_completed(client.map(fn, items, pure=False), loop=client.loop):
                yield fut.result()
    elif workers > 1 and len(items) > 1:
        with process_pool(min(workers, len(items))) as pool:
            for fut in as_completed([pool.submit(fn, t) for t in items]):
                yield fut.result()
    else:
        for item in items:
            yield fn(item)

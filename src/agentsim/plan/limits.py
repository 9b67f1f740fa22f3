"""Provider accounts and their limits: concurrency slots and token buckets, in SimPy.

An *account* (``limits:`` in a scenario) is shared by the calls of some models or
model@tier pairs. It may cap:

* ``concurrency`` — requests in flight at once (a counter with a FIFO of waiters;
  SimPy's ``Resource`` scans its user list on release, a counter does not);
* ``rpm``, ``input_tpm``, ``output_tpm`` — token buckets, as providers document
  them: a bucket holds up to the per-minute limit and refills continuously at
  limit/60 per second. A request takes 1 from the RPM bucket, its input tokens
  from the input bucket (uncached input only unless ``count_cache_reads``, as
  Anthropic counts), and its output + reasoning tokens from the output bucket at
  admission (as if ``max_tokens`` were set to what it generates).

Two policies. ``queue`` (a client-side limiter): the request waits, first in first
out, until the account has a slot and enough tokens. ``reject`` (how providers
behave): if the request would exceed a limit it is refused with HTTP 429 at once,
with a retry-after time when a bucket is short (the time until it refills enough);
the caller's retry policy decides what happens next.

Each account logs its in-flight count and bucket levels when they change, and the
tokens it admitted, for utilisation figures. A log is a :class:`PairLog`: ``(time, value)`` pairs kept
as two arrays of machine numbers (16 bytes a pair; a list of tuples takes ~100, and a workload of
hundreds of agents makes millions of them).
"""

from __future__ import annotations

import math
from array import array
from collections import deque
from dataclasses import dataclass, field

import simpy

__all__ = ["Account", "AccountSpec", "Bucket", "PairLog", "Slots", "TooLarge"]


class TooLarge(Exception):
    """A request that needs more tokens than the bucket can ever hold."""


class PairLog:
    """``(time, value)`` pairs appended in time order, read back as tuples of Python numbers (a list of
    pairs to its readers: ``append``, iteration, ``len`` and indexing), stored as two arrays: times as
    doubles, values as doubles or, with ``values="q"``, integers (a count of requests in flight)."""

    __slots__ = ("t", "v")

    def __init__(self, values: str = "d") -> None:
        self.t, self.v = array("d"), array(values)

    def append(self, pair: tuple[float, float]) -> None:
        self.t.append(pair[0])
        self.v.append(pair[1])

    def __len__(self) -> int:
        return len(self.t)

    def __iter__(self):
        return zip(self.t, self.v, strict=True)

    def __getitem__(self, i: int) -> tuple[float, float]:
        return self.t[i], self.v[i]

    def __eq__(self, other) -> bool:  # equal to a list of the same pairs
        if isinstance(other, PairLog | list | tuple):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  (mutable)


@dataclass(frozen=True)
class AccountSpec:
    index: int
    name: str
    concurrency: int | None
    rpm: float | None
    input_tpm: float | None
    output_tpm: float | None
    policy: str  # "queue" | "reject"
    count_cache_reads: bool


class Slots:
    """At most ``capacity`` holders; waiters are served first in, first out."""

    def __init__(self, env: simpy.Environment, capacity: int, log: list | None = None):
        self.env = env
        self.capacity = capacity
        self.in_use = 0
        self.waiters: deque[simpy.Event] = deque()
        self.log = log  # (time, in_use) on every change

    def _record(self) -> None:
        if self.log is not None:
            self.log.append((self.env.now, self.in_use))

    def free(self) -> bool:
        return self.in_use < self.capacity and not self.waiters

    def take_now(self) -> None:
        self.in_use += 1
        self._record()

    def request(self) -> simpy.Event | None:
        """None when granted at once, else an event that fires when the slot is granted."""
        if self.free():
            self.take_now()
            return None
        ev = self.env.event()
        self.waiters.append(ev)
        return ev

    def cancel(self, ev: simpy.Event) -> None:
        """A waiter gave up (its call was cancelled): drop it, or hand back a slot already granted."""
        if ev in self.waiters:
            self.waiters.remove(ev)
        elif ev.triggered:
            self.release()

    def release(self) -> None:
        if self.waiters:
            self.waiters.popleft().succeed()  # the slot passes straight to the next waiter
            self._record()
        else:
            self.in_use -= 1
            self._record()


class Bucket:
    """A token bucket of ``capacity`` tokens refilled at ``rate`` tokens/s, starting full."""

    def __init__(self, env: simpy.Environment, per_minute: float, log: list | None = None):
        self.env = env
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.level = self.capacity
        self.t = 0.0
        self.waiters: deque[tuple[float, simpy.Event]] = deque()
        self.log = log  # (time, level after the change)
        self.admitted = PairLog()  # (time, tokens)

    def _refill(self) -> None:
        now = self.env.now
        if now > self.t:
            self.level = min(self.capacity, self.level + (now - self.t) * self.rate)
            self.t = now

    def _deduct(self, need: float) -> None:
        self.level -= need
        self.admitted.append((self.env.now, need))
        if self.log is not None:
            self.log.append((self.env.now, self.level))

    def _has(self, need: float) -> bool:
        """Whether ``need`` tokens are there, to the rounding of the refill sums (as :meth:`_serve` counts).

        Without the slack a bucket that holds ``need`` up to the last bit would send a client a
        retry-after shorter than one tick of the clock, which SimPy cannot advance by: the retries
        would all be refused at the same instant (and a closed workload with no think time loops).
        """
        return self.level >= need - 1e-9 * self.capacity

    def check(self, need: float) -> float | None:
        """Reject mode: None if ``need`` tokens are available now (and takes them), else seconds to wait."""
        if need > self.capacity:
            raise TooLarge(need)
        self._refill()
        if self._has(need) and not self.waiters:
            self._deduct(need)
            return None
        return (need - self.level) / self.rate if self.level < need else 0.0

    def shortfall(self, need: float) -> float | None:
        """Seconds until ``need`` tokens are available (None: available now); takes nothing."""
        if need > self.capacity:
            raise TooLarge(need)
        self._refill()
        if self._has(need) and not self.waiters:
            return None
        return max(0.0, (need - self.level) / self.rate)

    def take(self, need: float) -> simpy.Event | None:
        """Queue mode: None when taken at once, else an event fired when the tokens are taken."""
        if need > self.capacity:
            raise TooLarge(need)
        self._refill()
        if not self.waiters and self.level >= need:
            self._deduct(need)
            return None
        ev = self.env.event()
        self.waiters.append((need, ev))
        if len(self.waiters) == 1:
            self._schedule()
        return ev

    def cancel(self, ev: simpy.Event) -> None:
        """A waiter gave up: drop it from the line (tokens already taken stay taken)."""
        for i, (_, w) in enumerate(self.waiters):
            if w is ev:
                del self.waiters[i]
                if i == 0 and self.waiters:
                    self._schedule()
                return

    def _schedule(self) -> None:
        need, _ = self.waiters[0]
        delay = max(0.0, (need - self.level) / self.rate)
        self.env.timeout(delay).callbacks.append(self._serve)

    def _serve(self, _ev) -> None:
        self._refill()
        while self.waiters and self.level >= self.waiters[0][0] - 1e-9 * self.capacity:
            need, ev = self.waiters.popleft()
            self._deduct(need)
            ev.succeed()
        if self.waiters:
            self._schedule()


@dataclass
class Account:
    """The live state of one account in one simulation."""

    spec: AccountSpec
    env: simpy.Environment
    slots: Slots | None = None
    rpm: Bucket | None = None
    itpm: Bucket | None = None
    otpm: Bucket | None = None
    inflight_log: PairLog = field(default_factory=lambda: PairLog("q"))
    level_logs: dict = field(default_factory=dict)
    rejections: int = 0

    @classmethod
    def create(cls, spec: AccountSpec, env: simpy.Environment) -> Account:
        acc = cls(spec, env)
        # in-flight requests are counted for every account (a cap of infinity when none is set)
        acc.slots = Slots(env, spec.concurrency if spec.concurrency is not None else math.inf, acc.inflight_log)
        for attr, limit in (("rpm", spec.rpm), ("itpm", spec.input_tpm), ("otpm", spec.output_tpm)):
            if limit is not None:
                log = PairLog()
                acc.level_logs[attr] = log
                setattr(acc, attr, Bucket(env, limit, log))
        return acc

    def detach(self) -> None:
        """The simulation is over: forget its environment, so that the environment and what is still
        pending in it (the processes of runs in flight at the stop, and through them their runners and
        draws) can be freed while the account's logs are read."""
        self.env = None  # type: ignore[assignment]
        for part in (self.slots, self.rpm, self.itpm, self.otpm):
            if part is not None:
                part.env = None

    def needs(self, uncached_input: int, cache_read: int, output: int) -> list[tuple[Bucket, float]]:
        out = []
        if self.rpm is not None:
            out.append((self.rpm, 1.0))
        if self.itpm is not None:
            out.append((self.itpm, float(uncached_input + (cache_read if self.spec.count_cache_reads else 0))))
        if self.otpm is not None:
            out.append((self.otpm, float(output)))
        return out

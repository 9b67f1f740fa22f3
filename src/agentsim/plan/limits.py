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

__all__ = [
    "LIMIT_NAMES",
    "Account",
    "AccountSpec",
    "Bucket",
    "Gate",
    "PairLog",
    "Slots",
    "TooLarge",
    "request_needs",
]

# which of a request's needs a bucket takes: an index into request_needs(...)
NEED_REQUEST, NEED_INPUT, NEED_OUTPUT, NEED_INPUT_ALL = range(4)
# an account's limits, as summary.json names them
LIMIT_NAMES = ("concurrency", "rpm", "input_tpm", "output_tpm")


def request_needs(uncached_input: int, cache_read: int, output: int) -> tuple[float, float, float, float]:
    """A request's needs, indexed by ``NEED_*``: 1 request, its uncached input tokens, its output tokens,
    its input tokens with the cache reads (as :meth:`Account.needs` counts them)."""
    return 1.0, float(uncached_input), float(output), float(uncached_input + cache_read)


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
        self._pairs = isinstance(log, PairLog)  # appended to its two arrays directly (no method call)

    def _record(self, now: float) -> None:
        log = self.log
        if self._pairs:
            log.t.append(now)
            log.v.append(self.in_use)
        elif log is not None:
            log.append((now, self.in_use))

    def free(self) -> bool:
        return self.in_use < self.capacity and not self.waiters

    def take_now(self, now: float | None = None) -> None:
        """Take a slot at ``now`` (default: the clock), whether or not one is free."""
        self.in_use += 1
        self._record(self.env.now if now is None else now)

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
        else:
            self.in_use -= 1
        self._record(self.env.now)


class Bucket:
    """A token bucket of ``capacity`` tokens refilled at ``rate`` tokens/s, starting full."""

    def __init__(self, env: simpy.Environment, per_minute: float, log: list | None = None, name: str = ""):
        self.env = env
        self.name = name  # the limit it stands for (rpm, input_tpm, output_tpm): named when it refuses
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.slack = 1e-9 * self.capacity  # the rounding of the refill sums (:meth:`_has`)
        self.level = self.capacity
        self.t = 0.0
        self.waiters: deque[tuple[float, simpy.Event]] = deque()
        self.log = log  # (time, level after the change)
        self._pairs = isinstance(log, PairLog)  # appended to its two arrays directly (no method call)
        self.admitted = PairLog()  # (time, tokens)

    def _refill(self, now: float | None = None) -> None:
        """The level at ``now`` (default: the clock): the bucket fills at its rate since it was last refilled,
        up to its capacity."""
        if now is None:
            now = self.env.now
        if now > self.t:
            self.level = min(self.capacity, self.level + (now - self.t) * self.rate)
            self.t = now

    def take_now(self, need: float, now: float) -> None:
        """Take ``need`` tokens at ``now`` (the bucket refilled to ``now``); logs the tokens admitted and the level."""
        self.level = level = self.level - need
        adm = self.admitted
        adm.t.append(now)
        adm.v.append(need)
        log = self.log
        if self._pairs:
            log.t.append(now)
            log.v.append(level)
        elif log is not None:
            log.append((now, level))

    def _has(self, need: float) -> bool:
        """Whether ``need`` tokens are there, to the rounding of the refill sums (as :meth:`_serve` counts).

        Without the slack a bucket that holds ``need`` up to the last bit would send a client a
        retry-after shorter than one tick of the clock, which SimPy cannot advance by: the retries
        would all be refused at the same instant (and a closed workload with no think time loops).
        """
        return self.level >= need - self.slack

    def room(self, need: float, now: float) -> float | None:
        """Refilled to ``now``: None if ``need`` tokens are there for a request that does not queue (nobody
        waits), else the seconds until they are (0 behind a waiter); takes nothing. A ``need`` larger than
        the bucket raises :class:`TooLarge` (before any refill)."""
        if need > self.capacity:
            raise TooLarge(need)
        self._refill(now)
        if self._has(need) and not self.waiters:
            return None
        return max(0.0, (need - self.level) / self.rate)

    def check(self, need: float) -> float | None:
        """Reject mode: None if ``need`` tokens are available now (and takes them), else seconds to wait."""
        now = self.env.now
        short = self.room(need, now)
        if short is None:
            self.take_now(need, now)
        return short

    def shortfall(self, need: float) -> float | None:
        """Seconds until ``need`` tokens are available (None: available now); takes nothing."""
        return self.room(need, self.env.now)

    def take(self, need: float) -> simpy.Event | None:
        """Queue mode: None when taken at once, else an event fired when the tokens are taken."""
        if need > self.capacity:
            raise TooLarge(need)
        self._refill()
        if not self.waiters and self.level >= need:
            self.take_now(need, self.env.now)
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
        while self.waiters and self._has(self.waiters[0][0]):
            need, ev = self.waiters.popleft()
            self.take_now(need, self.env.now)
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
    # per limit (concurrency, rpm, input_tpm, output_tpm): the refusals it took part in (a refusal counts
    # under every limit short at that instant; a request larger than a bucket under that bucket's limit),
    # and the seconds calls waited in line for it (``queue`` accounts)
    refused_by: dict = field(default_factory=lambda: dict.fromkeys(LIMIT_NAMES, 0))
    waited_s: dict = field(default_factory=lambda: dict.fromkeys(LIMIT_NAMES, 0.0))

    @classmethod
    def create(cls, spec: AccountSpec, env: simpy.Environment) -> Account:
        acc = cls(spec, env)
        # in-flight requests are counted for every account (a cap of infinity when none is set)
        acc.slots = Slots(env, spec.concurrency if spec.concurrency is not None else math.inf, acc.inflight_log)
        for attr, name, limit in (("rpm", "rpm", spec.rpm), ("itpm", "input_tpm", spec.input_tpm),
                                  ("otpm", "output_tpm", spec.output_tpm)):  # fmt: skip
            if limit is not None:
                log = PairLog()
                acc.level_logs[attr] = log
                setattr(acc, attr, Bucket(env, limit, log, name))
        return acc

    def detach(self) -> None:
        """The simulation is over: forget its environment, so that the environment and what is still
        pending in it (the processes of runs in flight at the stop, and through them their runners and
        draws) can be freed while the account's logs are read."""
        self.env = None  # type: ignore[assignment]
        for part in (self.slots, self.rpm, self.itpm, self.otpm):
            if part is not None:
                part.env = None

    def checks(self) -> tuple[tuple[Bucket, int], ...]:
        """Each bucket of the account, with which of a request's needs it takes (an index into the tuple
        :func:`request_needs` makes): 1 request, uncached input (and cache reads with
        ``count_cache_reads``), output."""
        out = []
        if self.rpm is not None:
            out.append((self.rpm, NEED_REQUEST))
        if self.itpm is not None:
            out.append((self.itpm, NEED_INPUT_ALL if self.spec.count_cache_reads else NEED_INPUT))
        if self.otpm is not None:
            out.append((self.otpm, NEED_OUTPUT))
        return tuple(out)

    def needs(self, uncached_input: int, cache_read: int, output: int) -> list[tuple[Bucket, float]]:
        """Each bucket of the account with the tokens a request takes from it."""
        needs = request_needs(uncached_input, cache_read, output)
        return [(bucket, needs[need]) for bucket, need in self.checks()]


class Gate:
    """The ``reject`` accounts a request must pass together, at one instant: all of them admit it, or it
    is refused (HTTP 429) -- with a retry-after when every refusal is a short bucket (the longest wait),
    without one when some account's concurrency cap is full. Every bucket of every account is refilled
    to the instant and asked, whether or not an earlier one refused; each refusing account counts one
    rejection, and each of its limits that was short one refusal (``Account.refused_by``). An admitted
    request then takes its tokens from every bucket and a slot from every capped account: one look at each
    bucket, then one take (:meth:`Bucket.room`, :meth:`Bucket.take_now`). A request larger than a bucket
    raises :class:`TooLarge` at that bucket (the accounts before it have counted their rejections)."""

    __slots__ = ("parts",)

    def __init__(self, accounts: list[Account]):
        # per account: the account, its slots (None: none), its capped slots (None: no cap), its buckets
        self.parts = tuple(
            (a, a.slots, a.slots if a.slots is not None and a.slots.capacity != math.inf else None, a.checks())
            for a in accounts
        )

    def admit(self, uncached_input: int, cache_read: int, output: int, now: float) -> tuple[bool, float | None]:
        """(refused, retry-after) of a request at ``now``; admitted, it has taken its tokens and slots."""
        needs = request_needs(uncached_input, cache_read, output)
        refused_any = unknown = False
        longest = None
        for acc, slots, _, checks in self.parts:
            refused = False
            if slots is not None and not slots.free():
                refused = unknown = True
                acc.refused_by["concurrency"] += 1
            for bucket, need in checks:
                try:
                    short = bucket.room(needs[need], now)
                except TooLarge:
                    acc.refused_by[bucket.name] += 1
                    raise
                if short is not None:
                    refused = True
                    acc.refused_by[bucket.name] += 1
                    if longest is None or short > longest:
                        longest = short
            if refused:
                acc.rejections += 1
                refused_any = True
        if refused_any:
            return True, None if unknown else longest
        for _, _, capped, checks in self.parts:
            for bucket, need in checks:
                bucket.take_now(needs[need], now)
            if capped is not None:
                capped.take_now(now)
        return _ADMITTED


_ADMITTED = (False, None)

"""Concurrency slots, token buckets and accounts of :mod:`agentsim.plan.limits`, by hand timelines.

Each test drives the SimPy objects directly with round numbers (a bucket of 60 per minute refills 1 per
second), so the levels, waits and logs can be written down in advance (docs/validation.md §7).
"""

from __future__ import annotations

import math

import pytest
import simpy

from agentsim.plan.limits import Account, AccountSpec, Bucket, Slots, TooLarge


def advance(env: simpy.Environment, to: float) -> None:
    env.run(until=to)


# --------------------------------------------------------------------------- slots


def test_slots_grant_up_to_capacity_and_log_every_change():
    env = simpy.Environment()
    log: list = []
    s = Slots(env, 2, log)
    assert s.capacity == 2
    assert s.in_use == 0
    assert s.free()
    assert s.request() is None
    assert s.request() is None
    assert s.in_use == 2
    assert not s.free()
    ev = s.request()
    assert ev is not None and not ev.triggered
    assert list(s.waiters) == [ev]
    assert log == [(0.0, 1), (0.0, 2)]
    advance(env, 3.0)
    s.release()  # the slot passes straight to the waiter: still 2 in use
    assert ev.triggered
    assert s.in_use == 2
    assert not s.waiters
    s.release()
    s.release()
    assert s.in_use == 0
    assert log == [(0.0, 1), (0.0, 2), (3.0, 2), (3.0, 1), (3.0, 0)]


def test_slots_are_not_free_while_someone_waits_even_with_room():
    env = simpy.Environment()
    s = Slots(env, 1)
    s.take_now()
    ev = s.request()
    s.in_use = 0  # room, but a waiter is first in line
    assert not s.free()
    s.cancel(ev)
    assert s.free()


def test_cancel_drops_a_waiter_or_returns_a_granted_slot():
    env = simpy.Environment()
    log: list = []
    s = Slots(env, 1, log)
    s.take_now()
    first, second = s.request(), s.request()
    s.cancel(first)  # still waiting: just leaves the line
    assert list(s.waiters) == [second]
    assert s.in_use == 1
    s.release()  # to `second`
    assert second.triggered
    s.cancel(second)  # granted already: hands the slot back
    assert s.in_use == 0
    assert log == [(0.0, 1), (0.0, 1), (0.0, 0)]
    lone = simpy.Environment().event()
    s.cancel(lone)  # neither waiting nor granted: nothing happens
    assert s.in_use == 0


def test_slots_without_a_log_still_count():
    s = Slots(simpy.Environment(), 1)
    assert s.request() is None
    s.release()
    assert s.in_use == 0 and s.log is None


# --------------------------------------------------------------------------- buckets


def test_a_new_bucket_is_full_and_refills_at_its_per_minute_rate():
    env = simpy.Environment()
    b = Bucket(env, 60)
    assert (b.capacity, b.rate, b.level, b.t) == (60.0, 1.0, 60.0, 0.0)
    assert isinstance(b.capacity, float)
    assert b.admitted == [] and not b.waiters
    assert b.check(45) is None  # 15 left
    advance(env, 10.0)
    b._refill()
    assert b.level == pytest.approx(25.0, rel=1e-15)
    assert b.t == 10.0
    advance(env, 100.0)
    b._refill()
    assert b.level == 60.0  # never above capacity
    assert b.t == 100.0


def test_check_takes_or_says_how_long_to_wait():
    env = simpy.Environment()
    log: list = []
    b = Bucket(env, 120, log)  # 2 per second
    assert b.check(100) is None
    assert b.level == 20.0
    assert b.admitted == [(0.0, 100)]
    assert log == [(0.0, 20.0)]
    # 50 needed, 20 there: (50 - 20) / 2 = 15 s, nothing taken
    assert b.check(50) == pytest.approx(15.0, rel=1e-15)
    assert b.level == 20.0
    advance(env, 5.0)
    assert b.check(50) == pytest.approx(10.0, rel=1e-15)  # level 30 after 5 s
    advance(env, 15.0)
    assert b.check(50) is None  # exactly 50 at t = 15
    assert b.level == pytest.approx(0.0, abs=1e-12)
    assert b.admitted == [(0.0, 100), (15.0, 50)]


def test_a_request_larger_than_the_bucket_is_too_large_and_equal_is_not():
    b = Bucket(simpy.Environment(), 60)
    for method in (b.check, b.shortfall, b.take):
        with pytest.raises(TooLarge):
            method(60.5)
    assert b.shortfall(60) is None
    assert b.check(60) is None
    b2 = Bucket(simpy.Environment(), 60)
    assert b2.take(60) is None


def test_check_counts_tokens_held_up_to_rounding_and_waits_behind_waiters():
    env = simpy.Environment()
    b = Bucket(env, 60)
    b.level = 10.0 - 1e-9 * 60 / 2  # short of 10 by less than the slack
    assert b._has(10.0)
    assert b.check(10.0) is None
    b.level = 10.0 - 1e-9 * 60 * 2  # short by more than the slack
    assert not b._has(10.0)
    wait = b.check(10.0)
    assert wait == pytest.approx(1.2e-7, rel=1e-6)
    # with tokens there but a waiter in line, a check is refused with no wait of its own
    b.level = 30.0
    b.waiters.append((50.0, env.event()))
    assert b.check(5.0) == 0.0
    assert b.level == 30.0


def test_shortfall_takes_nothing():
    env = simpy.Environment()
    b = Bucket(env, 60)
    b.level = 20.0
    assert b.shortfall(20) is None
    assert b.level == 20.0 and b.admitted == []
    assert b.shortfall(35) == pytest.approx(15.0, rel=1e-15)
    b.waiters.append((1.0, env.event()))
    assert b.shortfall(5) == 0.0  # tokens there, but behind a waiter


def test_queued_takes_are_served_in_order_when_the_bucket_refills():
    env = simpy.Environment()
    log: list = []
    b = Bucket(env, 60, log)  # 1 per second
    assert b.take(50) is None  # level 10
    first = b.take(30)  # needs 20 more: at t = 20
    second = b.take(5)  # behind it, although 5 are there now
    assert first is not None and second is not None
    assert [n for n, _ in b.waiters] == [30, 5]
    advance(env, 19.999)
    assert not first.triggered and not second.triggered
    advance(env, 20.0 + 1e-9)
    assert first.triggered
    # the second needs 5 more after the first: at t = 25
    assert not second.triggered
    advance(env, 25.0 + 1e-9)
    assert second.triggered
    assert b.admitted == [(0.0, 50), (pytest.approx(20.0, rel=1e-12), 30), (pytest.approx(25.0, rel=1e-12), 5)]
    assert [lvl for _, lvl in log] == [pytest.approx(x, abs=1e-9) for x in (10.0, 0.0, 0.0)]


def test_waiters_served_together_when_both_fit():
    env = simpy.Environment()
    b = Bucket(env, 60)
    b.take(60)  # empty at t = 0
    a, c = b.take(10), b.take(10)  # both fit once 20 are back: at t = 10 and t = 20
    advance(env, 10.0 + 1e-9)
    assert a.triggered and not c.triggered
    advance(env, 20.0 + 1e-9)
    assert c.triggered
    assert not b.waiters


def test_a_take_equal_to_the_level_is_immediate():
    b = Bucket(simpy.Environment(), 60)
    b.level = 12.0
    assert b.take(12) is None
    assert b.level == 0.0


def test_cancelling_the_first_waiter_reschedules_for_the_next():
    env = simpy.Environment()
    b = Bucket(env, 60)
    b.take(60)  # empty
    big = b.take(50)  # would wait 50 s
    small = b.take(5)  # behind it
    b.cancel(big)
    assert [n for n, _ in b.waiters] == [5]
    advance(env, 5.0 + 1e-9)  # 5 tokens by t = 5
    assert small.triggered
    assert not big.triggered


def test_cancelling_a_later_waiter_keeps_the_first_schedule():
    env = simpy.Environment()
    b = Bucket(env, 60)
    b.take(60)
    first = b.take(10)
    later = b.take(5)
    b.cancel(later)
    assert [n for n, _ in b.waiters] == [10]
    b.cancel(simpy.Environment().event())  # not in line: nothing happens
    assert [n for n, _ in b.waiters] == [10]
    advance(env, 10.0 + 1e-9)
    assert first.triggered
    assert not later.triggered
    assert b.admitted[-1][1] == 10


def test_cancelling_the_only_waiter_leaves_the_line_empty():
    env = simpy.Environment()
    b = Bucket(env, 60)
    b.take(60)
    only = b.take(30)
    b.cancel(only)
    assert not b.waiters
    advance(env, 100.0)
    assert not only.triggered
    assert b.admitted == [(0.0, 60)]


# --------------------------------------------------------------------------- accounts


def spec(**kw) -> AccountSpec:
    base = {
        "index": 0,
        "name": "acct",
        "concurrency": None,
        "rpm": None,
        "input_tpm": None,
        "output_tpm": None,
        "policy": "queue",
        "count_cache_reads": False,
    }
    base.update(kw)
    return AccountSpec(**base)


def test_an_account_counts_in_flight_requests_even_without_a_cap():
    env = simpy.Environment()
    acc = Account.create(spec(), env)
    assert acc.slots is not None and acc.slots.capacity == math.inf
    assert acc.slots.log is acc.inflight_log
    assert (acc.rpm, acc.itpm, acc.otpm) == (None, None, None)
    assert acc.level_logs == {}
    assert acc.needs(100, 50, 20) == []


def test_an_account_has_one_bucket_per_limit_and_needs_count_its_tokens():
    env = simpy.Environment()
    acc = Account.create(spec(concurrency=3, rpm=10, input_tpm=6000, output_tpm=1200), env)
    assert acc.env is env
    assert acc.slots.capacity == 3
    assert (acc.rpm.capacity, acc.itpm.capacity, acc.otpm.capacity) == (10.0, 6000.0, 1200.0)
    assert set(acc.level_logs) == {"rpm", "itpm", "otpm"}
    assert acc.rpm.log is acc.level_logs["rpm"]
    assert acc.itpm.log is acc.level_logs["itpm"]
    assert acc.otpm.log is acc.level_logs["otpm"]
    assert acc.rpm.take(1) is None and acc.otpm.take(200) is None  # the levels are logged
    assert acc.level_logs == {"rpm": [(0.0, 9.0)], "itpm": [], "otpm": [(0.0, 1000.0)]}
    # uncached input only (cache reads not counted): 1 request, 100 input, 20 output
    assert acc.needs(100, 50, 20) == [(acc.rpm, 1.0), (acc.itpm, 100.0), (acc.otpm, 20.0)]
    counting = Account.create(spec(input_tpm=6000, count_cache_reads=True), env)
    assert counting.needs(100, 50, 20) == [(counting.itpm, 150.0)]
    only_out = Account.create(spec(output_tpm=500), env)
    assert only_out.needs(100, 50, 20) == [(only_out.otpm, 20.0)]
    only_rpm = Account.create(spec(rpm=5), env)
    assert only_rpm.needs(100, 50, 20) == [(only_rpm.rpm, 1.0)]


def test_a_lone_waiter_is_served_when_its_tokens_are_back_even_within_a_second():
    env = simpy.Environment()
    b = Bucket(env, 60)  # 1 per second
    b.take(60)
    lone = b.take(0.5)  # back at t = 0.5
    advance(env, 0.5 + 1e-9)
    assert lone.triggered
    assert b.admitted[-1] == (pytest.approx(0.5, rel=1e-12), 0.5)
    later = b.take(10)  # alone in line again: back at 0.5 + 10
    advance(env, 10.4)
    assert not later.triggered
    advance(env, 10.5 + 1e-9)
    assert later.triggered


def test_too_large_names_the_tokens_asked_for():
    b = Bucket(simpy.Environment(), 60)
    for method in (b.check, b.shortfall, b.take):
        with pytest.raises(TooLarge) as err:
            method(61.0)
        assert err.value.args == (61.0,)


def test_the_rounding_slack_is_a_billionth_of_the_capacity_inclusive():
    env = simpy.Environment()
    b = Bucket(env, 60)
    slack = 1e-9 * 60
    b.level = 10.0 - slack  # exactly at the edge: counts as there
    assert b._has(10.0)
    # a waiter at the same edge is served; one short by half the slack more is not
    for short, served in ((slack, True), (slack / 2, True), (slack * 1.5, False)):
        b.level = 10.0 - short
        b.t = env.now
        ev = env.event()
        b.waiters.append((10.0, ev))
        b._serve(None)
        assert ev.triggered is served, short
        b.waiters.clear()

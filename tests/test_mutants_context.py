"""The context and prompt-cache rules of :class:`agentsim.sim.context.Ctx`, one rule per test, by hand.

Written to kill the mutants ``make mutate ONLY='agentsim.sim.context*'`` left alive (docs/validation.md §7):
each test drives a :class:`Ctx` directly with small token counts whose look-ups are worked out in the
comments, so an operator or constant changed in ``context.py`` changes a number asserted here.
"""

from __future__ import annotations

import pytest

from agentsim.plan.compiler import ContextCfg
from agentsim.sim.context import ONE_HOUR, Ctx

TTL = 300.0  # five minutes


def cfg(system=100, grows=True, cache=True, ttl=TTL, per_model=False) -> ContextCfg:
    return ContextCfg(system, grows, cache, ttl, per_model)


# --------------------------------------------------------------------------- construction and fork


def test_a_new_context_holds_the_system_prompt_and_no_cache_entry():
    c = Ctx(cfg(system=100))
    assert c.L == 100
    assert c.entries == {}
    # the first call writes all of its input: 100 + 20 = 120, nothing read
    assert c.begin_call(0, TTL, 20, 0.0) == (120, 0, 120, 0)
    # two contexts never share their entry dicts
    c.mark(0, 120, 1.0)
    assert Ctx(cfg(system=100)).entries == {}


def test_an_explicit_length_and_entries_are_kept():
    entries = {0: [(80, 5.0)]}
    c = Ctx(cfg(system=100), L=250, entries=entries)
    assert c.L == 250
    assert c.entries is entries
    # reads the 80-token entry (idle 5 s): input 250 + 10 = 260, write 260 - 80 = 180
    assert c.begin_call(0, TTL, 10, 10.0) == (260, 80, 180, 0)


def test_a_fork_is_an_independent_copy_of_length_and_entries():
    parent = Ctx(cfg(system=100))
    parent.add(50)
    parent.mark(0, 150, 2.0)
    child = parent.fork()
    assert child.L == 150
    assert child.entries == {0: [(150, 2.0)]}
    assert child.cfg is parent.cfg
    child.add(40)
    child.mark(0, 190, 3.0)
    child.mark(7, 190, 3.0)
    assert parent.L == 150
    assert parent.entries == {0: [(150, 2.0)]}


# --------------------------------------------------------------------------- one call


def test_caching_off_reads_and_writes_nothing():
    c = Ctx(cfg(system=100, cache=False), entries={0: [(100, 0.0)]})
    assert c.begin_call(0, TTL, 30, 1.0) == (130, 0, 0, 0)
    assert c.peek(0, TTL, 30, 1.0) == (130, 0)
    c.mark(0, 130, 2.0)
    assert c.entries == {0: [(100, 0.0)]}  # mark records nothing either


def test_read_is_the_longest_live_entry_and_the_rest_is_written():
    # entries of 40 tokens (last used at t = 1) and 90 tokens (at t = 2) under key 0
    c = Ctx(cfg(system=100), entries={0: [(40, 1.0), (90, 2.0)]})
    # at t = 10 both are live: read 90, input 100 + 5 = 105, write 15
    assert c.begin_call(0, TTL, 5, 10.0) == (105, 90, 15, 0)
    # at t = 301.5 the 40-token entry (idle 300.5 s) is gone, the 90 one (299.5 s) is live
    assert c.begin_call(0, TTL, 5, 301.5) == (105, 90, 15, 0)
    # at t = 302.5 the 90-token entry is idle 300.5 s: gone; nothing is read
    assert c.begin_call(0, TTL, 5, 302.5) == (105, 0, 105, 0)


def test_an_entry_idle_exactly_its_ttl_is_still_read():
    c = Ctx(cfg(system=100), entries={0: [(60, 10.0)]})
    assert c.begin_call(0, TTL, 0, 10.0 + TTL) == (100, 60, 40, 0)
    assert c.begin_call(0, TTL, 0, 10.0 + TTL + 0.25) == (100, 0, 100, 0)
    # an entry dated after `now` (not possible in a run, but the rule is `now - t <= ttl`) is read
    assert c.begin_call(0, TTL, 0, 5.0) == (100, 60, 40, 0)


def test_one_hour_writes_are_reported_as_such():
    c = Ctx(cfg(system=100, ttl=ONE_HOUR), entries={0: [(30, 0.0)]})
    # read 30, write 100 + 20 - 30 = 90, all of it a 1-hour write
    assert c.begin_call(0, ONE_HOUR, 20, 100.0) == (120, 30, 90, 90)
    # with the 5-minute TTL the same write is a 5-minute one (and the entry, idle 100 s, is live)
    assert c.begin_call(0, TTL, 20, 100.0) == (120, 30, 90, 0)
    # an hour is 3600 s: an entry idle 3000 s is live for a 1-hour TTL, gone for 5 minutes
    assert c.begin_call(0, ONE_HOUR, 20, 3000.0) == (120, 30, 90, 90)
    assert c.begin_call(0, TTL, 20, 3000.0) == (120, 0, 120, 0)


def test_per_context_cache_ignores_the_key_and_per_model_cache_does_not():
    shared = Ctx(cfg(system=100, per_model=False), entries={0: [(70, 0.0)]})
    # any model (key 3) reads the context's one entry list (key 0)
    assert shared.begin_call(3, TTL, 10, 1.0) == (110, 70, 40, 0)
    shared.mark(3, 110, 2.0)
    assert shared.entries == {0: [(110, 2.0)]}

    own = Ctx(cfg(system=100, per_model=True), entries={0: [(70, 0.0)]})
    # key 3 has no entry of its own: nothing read
    assert own.begin_call(3, TTL, 10, 1.0) == (110, 0, 110, 0)
    assert own.begin_call(0, TTL, 10, 1.0) == (110, 70, 40, 0)
    own.mark(3, 110, 2.0)
    assert own.entries == {0: [(70, 0.0)], 3: [(110, 2.0)]}


def test_peek_gives_input_and_read_of_the_same_call():
    c = Ctx(cfg(system=100, per_model=True), entries={2: [(80, 10.0)], 0: [(95, 10.0)]})
    # key 2, ttl 300, 7 new tokens at t = 50: input 107, read 80
    assert c.peek(2, TTL, 7, 50.0) == (107, 80)
    # the ttl and `now` are the caller's: idle 40 s against a 30 s ttl is gone
    assert c.peek(2, 30.0, 7, 50.0) == (107, 0)
    assert c.peek(2, TTL, 7, 400.0) == (107, 0)
    assert c.peek(0, TTL, 7, 50.0) == (107, 95)
    assert c.entries == {2: [(80, 10.0)], 0: [(95, 10.0)]}  # peeking changes nothing


def test_mark_records_the_whole_input_when_growing_else_the_context():
    grows = Ctx(cfg(system=100, grows=True))
    grows.mark(0, 130, 4.0)
    assert grows.entries == {0: [(130, 4.0)]}
    grows.mark(0, 160, 9.0)  # one entry per key: the latest replaces it
    assert grows.entries == {0: [(160, 9.0)]}

    fixed = Ctx(cfg(system=100, grows=False))
    fixed.mark(0, 130, 4.0)
    assert fixed.entries == {0: [(100, 4.0)]}  # the system prompt alone


def test_add_grows_only_a_growing_context():
    g = Ctx(cfg(system=100, grows=True))
    g.add(25)
    g.add(5)
    assert g.L == 130
    f = Ctx(cfg(system=100, grows=False))
    f.add(25)
    assert f.L == 100


# --------------------------------------------------------------------------- joins


def branch(parent: Ctx, added: int, entries: dict) -> Ctx:
    b = parent.fork()
    b.add(added)
    b.entries = entries
    return b


def test_join_appends_branch_additions_in_order_and_cuts_later_branches_entries():
    parent = Ctx(cfg(system=100), L=200)
    a = branch(parent, 30, {0: [(230, 5.0)]})  # first branch: 230 tokens, all still a prefix
    b = branch(parent, 50, {0: [(250, 6.0)], 1: [(250, 6.0)]})  # later branch: only 200 still match
    parent.join([a, b])
    assert parent.L == 200 + 30 + 50
    # key 0: (230, 5) and (200, 6) -> neither dominates the other (longer vs fresher): both kept
    assert sorted(parent.entries[0]) == [(200, 6.0), (230, 5.0)]
    assert parent.entries[1] == [(200, 6.0)]
    # a call of 10 new tokens at t = 7 reads the longest live entry: 230 of 290
    assert parent.begin_call(0, TTL, 10, 7.0) == (290, 230, 60, 0)


def test_join_keeps_a_later_branch_entry_that_is_within_the_fork_context():
    parent = Ctx(cfg(system=100), L=200)
    a = branch(parent, 30, {})
    b = branch(parent, 20, {0: [(150, 8.0)]})  # 150 <= 200: unaffected by the first branch's additions
    parent.join([a, b])
    assert parent.L == 250
    assert parent.entries == {0: [(150, 8.0)]}


def test_join_after_a_branch_that_added_nothing_keeps_entries_whole():
    parent = Ctx(cfg(system=100), L=200)
    a = branch(parent, 0, {0: [(200, 1.0)]})
    b = branch(parent, 40, {0: [(240, 9.0)]})  # offset still 0: its 240-token entry is a prefix
    parent.join([a, b])
    assert parent.L == 240
    assert parent.entries == {0: [(240, 9.0)]}  # (200, 1) is shorter and older: dropped


def test_join_drops_dominated_entries():
    parent = Ctx(cfg(system=100), L=200)
    # same length, different ages: only the fresher one is kept
    parent.join([branch(parent, 0, {0: [(200, 3.0)]}), branch(parent, 0, {0: [(200, 8.0)]})])
    assert parent.entries == {0: [(200, 8.0)]}
    # same age, different lengths: only the longer one
    parent.join([branch(parent, 0, {0: [(120, 8.0)]}), branch(parent, 0, {0: [(180, 8.0)]})])
    assert parent.entries == {0: [(180, 8.0)]}
    # three entries, one dominated: (150, 2) by (190, 4); (190, 4) and (120, 6) both stay
    parent.join(
        [
            branch(parent, 0, {0: [(150, 2.0)]}),
            branch(parent, 0, {0: [(190, 4.0)]}),
            branch(parent, 0, {0: [(120, 6.0)]}),
        ]
    )
    assert parent.entries == {0: [(190, 4.0), (120, 6.0)]}


def test_join_without_winners_changes_nothing():
    parent = Ctx(cfg(system=100), L=200, entries={0: [(200, 1.0)]})
    parent.join([])
    assert parent.L == 200
    assert parent.entries == {0: [(200, 1.0)]}


@pytest.mark.parametrize("grows", [True, False])
def test_a_call_after_a_join_reads_what_the_branches_left(grows):
    # a whole fork/join by the public steps: system 100, one call of 20 new tokens before the fork
    parent = Ctx(cfg(system=100, grows=grows))
    inp, read, write, _ = parent.begin_call(0, TTL, 20, 0.0)
    assert (inp, read, write) == (120, 0, 120)
    parent.mark(0, inp, 1.0)
    parent.add(20 + 10)  # its input and 10 output tokens join a growing context
    a, b = parent.fork(), parent.fork()
    ia, ra, _, _ = a.begin_call(0, TTL, 5, 1.0)
    ib, rb, _, _ = b.begin_call(0, TTL, 7, 1.0)
    if grows:
        assert (ia, ra, ib, rb) == (135, 120, 137, 120)
    else:
        assert (ia, ra, ib, rb) == (105, 100, 107, 100)
    a.mark(0, ia, 2.0)
    b.mark(0, ib, 3.0)
    a.add(5)
    b.add(7)
    parent.join([a, b])
    if grows:
        # L = 130 + 5 + 7 = 142; entries: (135, 2) from a; b's 137 > 130 is cut to 130 (at t = 3)
        assert parent.L == 142
        assert parent.begin_call(0, TTL, 1, 4.0) == (143, 135, 8, 0)
    else:
        # nothing grows: both entries hold the 100-token system prompt; the fresher is kept
        assert parent.L == 100
        assert parent.entries == {0: [(100, 3.0)]}
        assert parent.begin_call(0, TTL, 1, 4.0) == (101, 100, 1, 0)

"""The private parts of SimPy the DES relies on keep the meaning it relies on (simpy>=4.1,<5, pyproject.toml).

Two, for speed or for lack of a public form (docs/design.md, "SimPy"):

* ``Environment._now``, read instead of the ``now`` property in the event loop's hot path
  (``Runner.seq`` and ``Runner.call``): it must be the current simulated time;
* an event triggered at a priority of its own (``agentsim.sim.des_joins._Settle``, which settles a race
  after every other event of its instant): it sets ``_ok`` and ``_value`` and schedules itself, as
  SimPy's own ``Timeout`` does; SimPy must then process it, after the NORMAL events of that instant,
  as a succeeded event.

If an upgrade changes any of this, these tests fail before any result does.
"""

from __future__ import annotations

from importlib.metadata import version

import simpy
from simpy.events import NORMAL, Event

from agentsim.sim.des_joins import SETTLE, _Settle


def test_simpy_is_within_the_pinned_range():
    major, minor = (int(x) for x in version("simpy").split(".")[:2])
    assert (major, minor) >= (4, 1) and major < 5


def test_env_now_private_is_the_current_time():
    env = simpy.Environment(initial_time=2.5)
    seen = []

    def proc():
        seen.append((env._now, env.now))
        yield env.timeout(1.25)
        seen.append((env._now, env.now))
        yield env.timeout(0)
        seen.append((env._now, env.now))

    env.process(proc())
    env.run()
    assert seen == [(2.5, 2.5), (3.75, 3.75), (3.75, 3.75)]
    assert env._now == env.now == 3.75


def test_an_event_triggered_by_setting_ok_and_value_is_processed_as_a_success():
    env = simpy.Environment()

    class Fired(Event):  # what _Settle does, at SimPy's NORMAL priority
        def __init__(self, env):
            super().__init__(env)
            self._ok = True
            self._value = "v"
            env.schedule(self, priority=NORMAL)

    got = []
    ev = Fired(env)
    ev.callbacks.append(lambda e: got.append((e.ok, e.value, e.triggered)))
    env.run()
    assert got == [(True, "v", True)] and ev.processed


def test_settle_fires_after_every_other_event_of_its_instant():
    env = simpy.Environment()
    order = []

    def at(t, name):
        yield env.timeout(t)
        order.append(name)
        if name == "a":  # settled now, yet after b and c, which happen at the same instant
            _Settle(env).callbacks.append(lambda _e: order.append("settled"))

    for name in ("a", "b", "c"):
        env.process(at(1.0, name))
    env.process(at(1.5, "d"))
    env.run()
    assert SETTLE > NORMAL
    assert order == ["a", "b", "c", "settled", "d"]


def test_a_failed_event_has_ok_false_and_its_exception_as_value():
    env = simpy.Environment()

    def boom():
        yield env.timeout(1)
        raise ValueError("x")

    p = env.process(boom())
    seen = []

    def look(e):
        seen.append((e.ok, type(e.value).__name__))
        e.defused = True

    p.callbacks.append(look)
    env.run()
    assert seen == [(False, "ValueError")] and p._ok is False and isinstance(p._value, ValueError)

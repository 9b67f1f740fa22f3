"""Provider conditions by time of day: TTFT and speed factors that follow the simulated clock.

A model's ``conditions.time_of_day`` gives 24 hourly factors for its drawn TTFT and/or its output
speed (DESIGN.md §3.2, docs/concepts.md). The simulated clock starts at ``workload.start``
(seconds after midnight, ``S``); a call that starts ``t`` seconds into the simulation reads the clock::

    c(t) = (S + t) mod 86400                                  seconds after midnight

and the factor of a curve ``F[0..23]`` there::

    steps:   f(t) = F[floor(c / 3600)]
    linear:  p = c / 3600 - 0.5,  i = floor(p),  w = p - i
             f(t) = F[i mod 24] + (F[(i + 1) mod 24] - F[i mod 24]) * w

(``linear`` joins the hours' midpoints hh:30 with straight lines, wrapping from 23:30 to 00:30.)

``t`` is the instant the request is sent (after any wait for a slot or a rate budget); the factors hold
for the whole call, even one that runs into the next hour. They multiply what the per-run conditions and
the speed tier already give: ``ttft = drawn TTFT x ... x f_ttft(t) + uncached_input / prefill_tps`` and
``tps = drawn TPS x ... x f_tps(t)``.

:meth:`TimeOfDay.factors` is the one rule: the DES calls it with one start time (a float), the record
builders with an array of start times; the operations are the same IEEE operations either way, so the
rebuilt call ends equal the simulated ones to the last bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DAY_S", "Curve", "TimeOfDay", "compile_time_of_day", "scale_speeds"]

DAY_S = 86400.0
HOUR_S = 3600.0


@dataclass(frozen=True, eq=False)
class Curve:
    """24 hourly factors and how they join (``steps`` or ``linear``)."""

    values: np.ndarray  # float64, length 24
    linear: bool

    def at(self, clock_s):
        """The factor at ``clock_s`` seconds after midnight (a float or an array)."""
        import numpy as np  # here and below, not at the top: compiling a scenario need not import NumPy

        h = np.asarray(clock_s, dtype=np.float64) / HOUR_S
        if not self.linear:
            return self.values[np.minimum(np.floor(h).astype(np.int64), 23)]  # c just below 86400 may round up
        p = h - 0.5
        fi = np.floor(p)
        w = p - fi
        i = np.remainder(fi.astype(np.int64), 24)
        a = self.values[i]
        b = self.values[np.remainder(i + 1, 24)]
        return a + (b - a) * w


@dataclass(frozen=True, eq=False)
class TimeOfDay:
    """A model's time-of-day factors and the clock time the simulation starts at."""

    start_s: float
    ttft: Curve | None
    tps: Curve | None

    def clock(self, t):
        """Seconds after midnight at simulated time ``t``."""
        import numpy as np

        return np.remainder(self.start_s + np.asarray(t, dtype=np.float64), DAY_S)

    def factors(self, t):
        """``(ttft factor, speed factor)`` of calls starting at ``t`` (floats for a float, else arrays)."""
        import numpy as np

        c = self.clock(t)
        fx = self.ttft.at(c) if self.ttft is not None else np.ones_like(c)
        fy = self.tps.at(c) if self.tps is not None else np.ones_like(c)
        if np.ndim(c) == 0:
            return float(fx), float(fy)
        return fx, fy


def compile_time_of_day(scenario) -> dict[str, TimeOfDay]:
    """Model name -> its :class:`TimeOfDay`, for the models whose conditions have a ``time_of_day``."""
    wl = scenario.workload
    start = wl.start if wl is not None and wl.start is not None else None
    out: dict[str, TimeOfDay] = {}
    for name, m in scenario.models.items():
        tod = m.conditions.time_of_day if m.conditions is not None else None
        if tod is None or start is None:  # no start: refused by the scenario's cross-field checks
            continue

        def curve(spec) -> Curve | None:
            if spec is None:
                return None
            import numpy as np

            return Curve(np.array(spec.hourly, dtype=np.float64), spec.curve == "linear")

        out[name] = TimeOfDay(float(start), curve(tod.ttft_x), curve(tod.output_tps_x))
    return out


def scale_speeds(plan, tier_of: np.ndarray, t_start: np.ndarray, tps: np.ndarray, made: np.ndarray) -> np.ndarray:
    """``tps`` times the time-of-day speed factor at each made call's start (by the tier it ran on)."""
    if not plan.time_of_day or not made.any():
        return tps
    import numpy as np

    out = np.array(np.broadcast_to(tps, made.shape), dtype=np.float64, copy=True)
    for tid in np.unique(tier_of[made]):
        tod = plan.time_of_day.get(plan.tiers[int(tid)].model)
        if tod is None:
            continue
        m = made & (tier_of == tid)
        out[m] = out[m] * tod.factors(t_start[m])[1]
    return out

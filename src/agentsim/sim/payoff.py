"""When a variant pays off: the one rule behind run, sweep, report and replay.

A variant is compared with a baseline by two differences, variant minus baseline:
``dt`` (mean wall time, seconds) and ``dc`` (mean API cost, USD). With a value of time
``V`` (USD per hour of waiting), the total cost of a run is ``cost + V × wall / 3600``, so
the variant changes the total by

    D(V) = dc + V × dt / 3600

The rule: **a variant pays off at V when it gains something (it is faster or cheaper)
and D(V) ≤ 0** — its total cost is not above the baseline's. Ties pay off (at the
break-even value itself, DESIGN.md §4: "pays off when value_of_time ≥ USD per hour
saved"); a variant that is neither faster nor cheaper never does, not even at V = 0
where a slower variant at the same price ties on total cost.

Because D is a straight line in V, the answer for every V ≥ 0 is one of four
(:func:`break_even`):

============================  ======================  =====================
dt (time)  dc (cost)          pays off                break-even V*
============================  ======================  =====================
faster     cheaper or equal   ``always``              –
faster     dearer             ``above`` V*            3600 × dc / −dt
same       cheaper            ``always``              –
same       same or dearer     ``never``               –
slower     cheaper            ``below`` V*            3600 × −dc / dt
slower     same or dearer     ``never``               –
============================  ======================  =====================

``usd_per_hour_saved`` is ``dc / (−dt / 3600)``: what each hour of waiting saved costs.
It exists only for faster variants; for a faster *and cheaper* one it is negative (time
and money are both saved), which displays show as "always pays" (:func:`premium_text`).

:func:`pays_off` compares ``D(V)`` with a relative tolerance of 1e-9, so the break-even
value computed in floating point (``V*`` itself) still counts as a tie.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

ALWAYS, NEVER, ABOVE, BELOW = "always", "never", "above", "below"
TIE_TOLERANCE = 1e-9  # relative: absorbs the rounding of D(V*) at a break-even value computed in floats


class BreakEven(NamedTuple):
    """For which values of time a variant pays off: ``when`` is ``always``/``never`` or ``above``/``below``
    ``usd_per_hour`` (V*, inclusive); ``usd_per_hour`` is None for ``always`` and ``never``."""

    when: str
    usd_per_hour: float | None


def usd_per_hour_saved(delta_time_s: float, delta_cost_usd: float) -> float | None:
    """Extra API cost per hour of waiting saved; None unless the variant is faster (negative when also cheaper)."""
    if delta_time_s < 0:
        return delta_cost_usd / (-delta_time_s / 3600.0)
    return None


def gains_something(delta_time_s: float, delta_cost_usd: float) -> bool:
    """Faster or cheaper than the baseline: without either there is nothing to pay off."""
    return delta_time_s < 0 or delta_cost_usd < 0


def pays_off(delta_time_s: float, delta_cost_usd: float, value_of_time: float) -> bool:
    """Whether the variant pays off at ``value_of_time`` USD/h (the module's rule; ties pay off)."""
    if not gains_something(delta_time_s, delta_cost_usd):
        return False
    time_value = value_of_time * delta_time_s / 3600.0
    return bool(delta_cost_usd + time_value <= TIE_TOLERANCE * max(abs(delta_cost_usd), abs(time_value)))


def break_even(delta_time_s: float, delta_cost_usd: float) -> BreakEven:
    """The values of time at which :func:`pays_off` is true, as one of the four answers of the module table."""
    dt, dc = delta_time_s, delta_cost_usd
    if not gains_something(dt, dc):
        return BreakEven(NEVER, None)
    if dc <= 0 and dt <= 0:
        return BreakEven(ALWAYS, None)
    v_star = -3600.0 * dc / dt
    return BreakEven(ABOVE if dt < 0 else BELOW, v_star)


def premium_text(per_hour: float | None, money: Callable[[float], str], unit: str = "") -> str:
    """How displays show ``usd_per_hour_saved``: "–" when not faster, "always pays" when also cheaper."""
    if per_hour is None or per_hour != per_hour:  # None or NaN: not faster
        return "–"
    if per_hour < 0:
        return "always pays"
    return money(per_hour) + unit

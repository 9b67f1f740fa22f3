"""Numbers as a finance document prints them: one formatter for the command line and the HTML report.

A buyer reads a table down its columns. Three rules make a column readable at a glance:

* **Money** has a precision that depends on its size only: from $10 whole dollars (``$1,234``), from
  $1 two decimals (``$6.99``), below $1 three significant digits (``$0.616``, ``$0.0123``); zero is
  ``$0``; a negative amount has a real minus sign (``−$3.40``), a signed difference a plus too
  (``+$6.95``). :func:`usd`.
* **Durations** of one column (or one row of a transposed table) share one unit, the one that
  reads best for the column's largest value (s below 2 minutes, min below 2 hours, else h), and one
  number of decimals, chosen from that largest value (two below 10, one below 100, none above):
  ``8.87 min`` over ``5.52 min`` and ``0.05 min``, never ``8.9 min`` over ``2.84 s``.
  :func:`time_unit`, :func:`durations`, :func:`fmt_time`.
* **Plain numbers** of one column (hours, counts) share their decimals the same way (:func:`numbers`).

No value is ever "not a number" on a page: None, NaN and infinities print as an en dash ``–``.
This module imports only the standard library, so a command can use it at no start-up cost.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

__all__ = [
    "DASH",
    "MINUS",
    "capitalise",
    "count",
    "decimals_for",
    "durations",
    "fmt_time",
    "numbers",
    "pct",
    "signed_time",
    "signed_usd",
    "time_unit",
    "usd",
    "usd_per_hour",
]

DASH = "–"
MINUS = "−"
Unit = tuple[str, float]
_UNITS: tuple[Unit, ...] = (("h", 3600.0), ("min", 60.0), ("s", 1.0))


def _finite(x) -> bool:
    try:
        return x is not None and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


# --------------------------------------------------------------------------- money


def usd(x, *, plus: bool = False) -> str:
    """USD: whole dollars from $10, cents from $1, three significant digits below (module docstring).

    ``plus`` writes a ``+`` before a positive amount (a difference); a negative one always has ``−``.
    """
    if not _finite(x):
        return DASH
    x = float(x)
    if x == 0:
        return "$0"
    ax = abs(x)
    if ax >= 10:
        text = f"{ax:,.0f}"
    elif ax >= 1:
        text = f"{ax:,.2f}"
        if text == "10.00":  # 9.996 rounds up into the whole-dollar range
            text = "10"
    else:
        digits = 2 - math.floor(math.log10(ax))  # three significant digits
        text = f"{ax:.{digits}f}"
        if float(text) >= 1:  # 0.9996 rounds up to 1.00
            text = "1.00"
    sign = MINUS if x < 0 else ("+" if plus else "")
    return f"{sign}${text}"


def signed_usd(x) -> str:
    """A difference in USD: ``+$6.95``, ``−$0.120``, ``±$0``."""
    if _finite(x) and float(x) == 0:
        return "±$0"
    return usd(x, plus=True)


def usd_per_hour(x) -> str:
    """``$125/h`` (a dash when not finite)."""
    return DASH if not _finite(x) else usd(x) + "/h"


# --------------------------------------------------------------------------- durations


def time_unit(values: Iterable) -> Unit:
    """The unit for a group of durations (seconds): h from 2 h, min from 2 min, else s."""
    top = max((abs(float(v)) for v in values if _finite(v)), default=0.0)
    if top >= 7200:
        return _UNITS[0]
    if top >= 120:
        return _UNITS[1]
    return _UNITS[2]


def decimals_for(values: Iterable, scale: float = 1.0) -> int:
    """Decimals for a column whose values (divided by ``scale``) are shown together: the largest decides
    (two below 10, one below 100, none from 100)."""
    top = max((abs(float(v)) / scale for v in values if _finite(v)), default=0.0)
    if top >= 99.95:
        return 0
    if top >= 9.995:
        return 1
    return 2


def fmt_time(x, unit: Unit, decimals: int | None = None) -> str:
    """``x`` seconds in ``unit`` (from :func:`time_unit`) with ``decimals`` (default: from ``x`` alone)."""
    if not _finite(x):
        return DASH
    v = float(x) / unit[1]
    d = decimals_for([v]) if decimals is None else decimals
    text = f"{abs(v):,.{d}f}"
    sign = MINUS if v < 0 and float(text.replace(",", "")) != 0 else ""
    return f"{sign}{text} {unit[0]}"


def durations(values: Sequence, *, unit: Unit | None = None, decimals: int | None = None) -> list[str]:
    """A column of durations (seconds) in one unit with one number of decimals (module docstring)."""
    unit = unit or time_unit(values)
    if decimals is None:
        decimals = decimals_for(values, unit[1])
    return [fmt_time(v, unit, decimals) for v in values]


def signed_time(x, unit: Unit, decimals: int | None = None) -> str:
    """A difference of durations: ``+1.20 min``, ``−3.35 min``, ``±0.00 min``."""
    if not _finite(x):
        return DASH
    text = fmt_time(abs(float(x)), unit, decimals)
    if float(x) > 0:
        return "+" + text
    return (MINUS if float(x) < 0 else "±") + text


# --------------------------------------------------------------------------- other numbers


def numbers(values: Sequence, suffix: str = "", *, decimals: int | None = None) -> list[str]:
    """A column of plain numbers (hours, counts) with one number of decimals, thousands separated."""
    if decimals is None:
        decimals = decimals_for(values)
    out = []
    for v in values:
        if not _finite(v):
            out.append(DASH)
            continue
        text = f"{abs(float(v)):,.{decimals}f}"
        sign = MINUS if float(v) < 0 and float(text.replace(",", "")) != 0 else ""
        out.append(sign + text + suffix)
    return out


def count(x) -> str:
    """A whole number with thousands separators (``1,346``)."""
    return DASH if not _finite(x) else f"{round(float(x)):,}"


def pct(x, decimals: int = 1) -> str:
    """A share as a percentage (``3.4%``)."""
    return DASH if not _finite(x) else f"{100 * float(x):.{decimals}f}%"


def capitalise(text: str) -> str:
    """The sentence with its first letter upper-case (``fast pays off`` → ``Fast pays off``); the rest kept."""
    return text[:1].upper() + text[1:] if text else text

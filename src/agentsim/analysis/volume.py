"""How many runs a month: one rule for ``size``, ``report``, ``optimize`` and ``sweep``, stated in words.

Spend sizing multiplies a variant's mean cost per run by a monthly volume. A buyer gives that volume
once, the same way to every command, and every output says which volume it used and how it was
derived, so that two pages forwarded side by side can be checked against each other:

* ``runs_per_month`` given directly: ``4,200 runs a month (--runs-per-month)``;
* ``seats × runs_per_seat_per_day × working_days`` (working days default to :data:`WORKING_DAYS`, 21:
  a month of weekdays): ``20 seats × 10 runs × 21 working days = 4,200 runs a month``;
* else the scenario's ``workload.volume`` (``runs_per_month``, ``runs_per_day`` or seats; a day count
  there is the file's ``working_days``, default 30 calendar days as the scenario reference documents),
  where ``working_days`` given as an option replaces the file's day count;
* else the scenario's ``workload.arrivals`` over its ``duration`` read as one day's operating window,
  times the days.

:func:`monthly_volume` returns a :class:`MonthlyVolume` (the number and its derivation) or raises
``ValueError`` with a sentence naming what is missing, in the option names of the command line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from agentsim.model.scenario import Scenario

__all__ = ["FILE_DAYS", "WORKING_DAYS", "MonthlyVolume", "monthly_volume"]

WORKING_DAYS = 21.0  # a month of weekdays: the default for seats given as options
FILE_DAYS = 30.0  # a scenario's workload.volume without working_days counts calendar days (scenario reference)


@dataclass(frozen=True)
class MonthlyVolume:
    """Runs per month and the sentence that derives them (``20 seats × 10 runs × 21 working days = 4,200 …``)."""

    runs_per_month: float
    derivation: str
    source: str  # "options" or "scenario"
    options: tuple[str, ...] = ()  # the command-line options that give this volume again

    def to_json(self) -> dict:
        return {"runs_per_month": self.runs_per_month, "derivation": self.derivation, "source": self.source}


def _n(x: float) -> str:
    """A count as written in a derivation: ``4,200``, ``12.5``."""
    return f"{x:,.0f}" if float(x).is_integer() else f"{x:,.6g}"


def _opt(x: float) -> str:
    return f"{x:g}" if abs(x) < 1e15 else repr(float(x))


def _total(n: float) -> str:
    return f"{_n(n) if float(n).is_integer() else f'{n:,.1f}'} runs a month"


def _check(name: str, x: float | None) -> None:
    if x is not None and not (math.isfinite(x) and x > 0):
        raise ValueError(f"{name} {x:g}: give a number above 0")


def monthly_volume(
    scenario: Scenario,
    runs_per_month: float | None = None,
    *,
    seats: float | None = None,
    runs_per_seat_per_day: float | None = None,
    working_days: float | None = None,
) -> MonthlyVolume:
    """The monthly volume for spend sizing and how it was derived (module docstring).

    ValueError (a sentence naming the option to add or drop) when the options contradict each other,
    or when neither they nor the scenario give a volume.
    """
    _check("--runs-per-month", runs_per_month)
    _check("--seats", seats)
    _check("--runs-per-seat-per-day", runs_per_seat_per_day)
    if working_days is not None and not (math.isfinite(working_days) and 0 < working_days <= 31):
        raise ValueError(f"--working-days {working_days:g}: give the working days per month, above 0 and at most 31")
    if runs_per_month is not None:
        extra = [o for o, v in (("--seats", seats), ("--runs-per-seat-per-day", runs_per_seat_per_day),
                                ("--working-days", working_days)) if v is not None]  # fmt: skip
        if extra:
            raise ValueError(
                f"give --runs-per-month, or --seats with --runs-per-seat-per-day (and --working-days), "
                f"not both: drop {' and '.join(extra)} or --runs-per-month"
            )
        n = float(runs_per_month)
        return MonthlyVolume(n, f"{_total(n)} (--runs-per-month)", "options", ("--runs-per-month", _opt(n)))
    if (seats is None) != (runs_per_seat_per_day is None):
        given, missing = ("--seats", "--runs-per-seat-per-day")[:: 1 if seats is not None else -1]
        raise ValueError(
            f"{given} needs {missing} too: the volume is seats × runs per seat per working day × working days "
            f"(e.g. --seats 20 --runs-per-seat-per-day 10)"
        )
    if seats is not None:
        days = WORKING_DAYS if working_days is None else float(working_days)
        n = float(seats) * float(runs_per_seat_per_day) * days
        text = (
            f"{_n(seats)} seats × {_n(runs_per_seat_per_day)} runs × {_n(days)} working days"
            + (" (the default: a month of weekdays)" if working_days is None else "")
            + f" = {_total(n)}"
        )
        opts = ["--seats", _opt(seats), "--runs-per-seat-per-day", _opt(runs_per_seat_per_day)]
        if working_days is not None:
            opts += ["--working-days", _opt(working_days)]
        return MonthlyVolume(n, text, "options", tuple(opts))
    return _from_scenario(scenario, working_days)


def _from_scenario(scenario: Scenario, working_days: float | None) -> MonthlyVolume:
    opts = ("--working-days", _opt(working_days)) if working_days is not None else ()
    wl = scenario.workload
    v = wl.volume if wl is not None else None
    if v is not None:
        if v.runs_per_month is not None:
            if working_days is not None:
                raise ValueError(
                    "--working-days applies to runs per day or seats, and the scenario gives "
                    "workload.volume.runs_per_month: drop --working-days"
                )
            n = float(v.runs_per_month)
            return MonthlyVolume(n, f"{_total(n)} (the scenario's workload.volume)", "scenario")
        if working_days is not None:
            days, note = float(working_days), " (--working-days)"
        elif v.working_days is not None:
            days, note = float(v.working_days), ""
        else:
            days, note = FILE_DAYS, " (the scenario reference's default: calendar days)"
        if v.runs_per_day is not None:
            n = float(v.runs_per_day) * days
            head = f"{_n(v.runs_per_day)} runs a day × {_n(days)} days{note}"
        else:
            n = float(v.seats) * float(v.runs_per_seat_per_day) * days
            head = f"{_n(v.seats)} seats × {_n(v.runs_per_seat_per_day)} runs × {_n(days)} working days{note}"
        return MonthlyVolume(n, f"{head} = {_total(n)} (the scenario's workload.volume)", "scenario", opts)
    if wl is not None and wl.arrivals is not None and wl.duration is not None:
        days = FILE_DAYS if working_days is None else float(working_days)
        hours = wl.duration.total_seconds / 3600.0
        n = wl.arrivals.per_hour * hours * days
        text = (
            f"{_n(wl.arrivals.per_hour)} runs/h × {_n(hours)} h a day × {_n(days)} days = {_total(n)} "
            "(the scenario's workload.arrivals over its duration, read as one day's window)"
        )
        return MonthlyVolume(n, text, "scenario", opts)
    if working_days is not None:
        raise ValueError(
            "--working-days needs --seats with --runs-per-seat-per-day (or a scenario whose workload.volume gives "
            "runs_per_day or seats): working days multiply a daily volume"
        )
    raise ValueError(
        "no volume given: add --runs-per-month N, or --seats N with --runs-per-seat-per-day N (and "
        "--working-days, default 21), or put `workload: {volume: {runs_per_month: 20000}}` in the scenario"
    )

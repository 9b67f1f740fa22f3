"""The volume options shared by ``size``, ``report``, ``optimize`` and ``sweep``.

``--runs-per-month N``, or ``--seats N --runs-per-seat-per-day N [--working-days D]`` (default 21 working
days); without them the scenario's ``workload.volume``. The rule and the sentence that states it are
:func:`agentsim.analysis.volume.monthly_volume`; this module only declares the options once and turns a
contradiction into an exit-2 error naming the option.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentsim.cli.common import BadInput

if TYPE_CHECKING:
    from agentsim.analysis.volume import MonthlyVolume
    from agentsim.model.scenario import Scenario

__all__ = ["RunsPerMonthOpt", "RunsPerSeatOpt", "SeatsOpt", "WorkingDaysOpt", "volume_of"]

RunsPerMonthOpt = Annotated[
    float | None, typer.Option(help="Runs per month for spend sizing (default: the scenario's workload.volume).")
]
SeatsOpt = Annotated[float | None, typer.Option(help="Seats (people or agents); with --runs-per-seat-per-day.")]
RunsPerSeatOpt = Annotated[float | None, typer.Option(help="Runs per seat per working day; with --seats.")]
WorkingDaysOpt = Annotated[
    float | None,
    typer.Option(
        help="Working days per month, at most 31 (with --seats default 21, a month of weekdays; without, it replaces "
        "the day count of the scenario's workload.volume)."
    ),
]


def volume_of(
    file: Path,
    scenario: Scenario,
    runs_per_month: float | None,
    seats: float | None,
    runs_per_seat_per_day: float | None,
    working_days: float | None,
    *,
    required: bool = True,
) -> MonthlyVolume | None:
    """The volume the options (else the scenario) give; None when none is given and it is not ``required``."""
    from agentsim.analysis.volume import monthly_volume

    given = any(x is not None for x in (runs_per_month, seats, runs_per_seat_per_day, working_days))
    try:
        return monthly_volume(
            scenario,
            runs_per_month,
            seats=seats,
            runs_per_seat_per_day=runs_per_seat_per_day,
            working_days=working_days,
        )
    except ValueError as exc:
        if required or given:
            raise BadInput(f"{file}: {exc}") from None
        return None

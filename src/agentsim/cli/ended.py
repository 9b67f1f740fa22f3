"""How runs ended, beside time and cost, in the CLI's tables; the console the tables print on.

Where runs can fail (limits, error rates, timeouts, workloads), a table row shows the share of runs that
failed or did not finish, the runs completed of those counted, the throughput, the 429s and the binding
``account.limit`` (:func:`agentsim.sim.results.summary_rows` makes the columns). Shared by ``sweep`` and
``optimize --max-failed-share``.
"""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["ENDED_CAPTION", "ENDED_HEADS", "ended_cells", "ended_columns", "nan_none", "table_console"]


def table_console() -> Console:
    """stdout; COLUMNS wide when set, else wide enough for the tables when it is not a terminal (a file, a pipe)."""
    from agentsim.cli.consoles import VisibleConsole as Console

    c = Console(markup=False, emoji=False, soft_wrap=False)
    return (
        c
        if c.is_terminal or os.environ.get("COLUMNS")
        else Console(markup=False, emoji=False, soft_wrap=False, width=160)
    )


def nan_none(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


# where runs can fail: how they ended and what limited them, beside time and cost (sim.results._ended_columns)
ENDED_HEADS = {"failed_share": "failed", "runs_completed": "completed", "throughput_runs_per_hour": "runs/h",
               "rejected_429": "429s", "binding_limit": "binds"}  # fmt: skip
ENDED_CAPTION = (
    "failed = share of the runs counted that failed or did not finish; † = wall time and cost (and $/month) of "
    "the completed runs only, above 1% failed: not every run's; binds = the account.limit that refused the most "
    "requests (or was waited for longest)"
)


def ended_columns(t) -> list[str]:
    """The columns of :data:`ENDED_HEADS` a sweep (or variant) table has where some run can fail."""
    if "failed_share" not in t.columns:
        return []
    return [c for c in ENDED_HEADS if c in t.columns]


def ended_cells(r, columns: list[str]) -> list[str]:
    """One row's cells of :func:`ended_columns`."""
    from agentsim.viz import format as fmt

    out = []
    for c in columns:
        x = nan_none(r[c])
        if c == "binding_limit":
            out.append("none" if x is None else f"{r['binding_account']}.{x}")
        elif c == "failed_share":
            out.append(fmt.pct(x))
        elif c == "runs_completed":
            out.append("–" if x is None else f"{int(x):,} of {int(r['runs_counted']):,}")
        else:
            out.append("–" if x is None else f"{x:,.0f}")
    return out

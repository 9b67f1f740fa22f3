"""Progress bars on stderr for the commands that can take a while: ``run``, ``size``, ``sweep``, ``optimize``,
``report``.

A long command shows one line per stage of its work on stderr, drawn by rich (a dependency of typer)::

    simulating       ━━━━━━━━━━━━━━╸━━━━━━━━━━━━  98,304/200,000  49%  0:00:03  0:00:03
    stage            bar                          done/total      %    ETA      elapsed

The library reports progress through plain callbacks (``simulate(..., progress=...)``,
``build_report(..., progress=...)``, ``run_sweep``, ``optimize``) and knows nothing of bars; this module
turns those calls into a bar. A new stage (``report``: simulating, critical paths, figures) starts its
bar afresh, so its percentage and ETA are its own. A stage whose total is not known (the greedy
optimizer's candidates) shows a moving bar and its count, without a percentage.

The bar is drawn only where a person watches: never with ``-q``/``--quiet`` or ``--json``, and never
when stderr is not a terminal (a pipe, a file, CI logs), so scripted output stays clean. It is
transient: once the command is done, the bar is erased and only the command's own output remains.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

from agentsim.cli.common import as_console, err_console

__all__ = ["Bar", "progress_bar"]


class Bar(Protocol):
    def __call__(self, done: float, total: float | None, stage: str | None = None) -> None: ...


@contextmanager
def progress_bar(quiet: bool, description: str) -> Iterator[Bar | None]:
    """A callback ``(done, total, stage=None)`` driving a progress bar on stderr; None when ``quiet`` or
    when stderr is not a terminal. ``stage`` names the part of the work (default ``description``); a new
    stage restarts the bar, its percentage and its ETA."""
    if quiet or not err_console.is_terminal:
        yield None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn("{task.description:<16}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TimeRemainingColumn(),
        TimeElapsedColumn(),
        console=as_console(err_console),
        transient=True,
    ) as prog:
        task = prog.add_task(description, total=None)
        current = [description]

        def update(done: float, total: float | None, stage: str | None = None) -> None:
            stage = stage or description
            if stage != current[0]:  # a new stage: its own bar, percentage and ETA
                current[0] = stage
                prog.reset(task, total=total, completed=done, description=stage)
            else:
                prog.update(task, completed=done, total=total)

        yield update

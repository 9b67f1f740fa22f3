"""Tables that fit the terminal, and times in one unit per row.

A rich table wider than the terminal cuts its cells to ``…``; a buyer then sees no
price at all. :func:`print_table` never cuts: a table that fits is printed as it is;
one that does not is either split into pages of columns that repeat the first (label)
column (``pages=True``: the ``run`` table, one column per variant) or stacked, one
block per row with ``header: value`` lines wrapped at the width (catalog prices,
profiles, sweeps; ``compact=True``: the ``header value`` pairs of a row as one wrapped
paragraph; ``heading=k``: the first k columns name each block). ``--wide`` prints the
whole table at its natural width instead.

The width is the terminal's, or ``COLUMNS`` when set; output to a file or a pipe
without ``COLUMNS`` is 240 columns wide.

:func:`time_unit` chooses one unit (s, min or h) for a group of durations from their
largest value, so that a row (or a block of rows) never mixes ``112.6 s`` and ``2.1 min``
(:mod:`agentsim.viz.format`, shared with the HTML report).
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from agentsim.cli.consoles import VisibleConsole
from agentsim.sim.summary_model import Summary, as_summary
from agentsim.viz.format import fmt_time, time_unit  # the rule is shared with the HTML report

__all__ = ["Rows", "fmt_time", "print_table", "runs_title", "table_console", "time_unit"]


def table_console(wide: bool = False) -> Console:
    """A console for tables: the terminal's width, ``COLUMNS``, or 240 columns for a file or pipe."""
    width = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 240
    return VisibleConsole(markup=False, emoji=False, soft_wrap=False, highlight=False, width=width)


def _natural_width(console: Console, table: Table) -> int:
    return Measurement.get(console, console.options.update(width=10_000), table).maximum


def _copy(table: Table, columns: list[int]) -> Table:
    out = Table(
        title=table.title,
        title_justify=table.title_justify,
        caption=table.caption,
        caption_justify=table.caption_justify,
    )
    for i in columns:
        c = table.columns[i]
        out.add_column(c.header, justify=c.justify, style=c.style, no_wrap=c.no_wrap)
    cells = [list(table.columns[i].cells) for i in columns]
    for r in range(table.row_count):
        out.add_row(*[col[r] for col in cells])
    return out


def _pages(console: Console, table: Table) -> list[Table]:
    """Split the columns after the first into groups that fit the width (at least one per page)."""
    n = len(table.columns)
    pages, start = [], 1
    while start < n:
        end = start + 1
        while end < n and _natural_width(console, _copy(table, [0, *range(start, end + 1)])) <= console.width:
            end += 1
        pages.append(_copy(table, [0, *range(start, end)]))
        start = end
    return pages


def _stacked(console: Console, table: Table, compact: bool = False, heading: int = 1) -> None:
    width = max(console.width, 40)
    if table.title:
        console.print(str(table.title))
    heads = [str(c.header) for c in table.columns]
    cols = [[str(x) for x in c.cells] for c in table.columns]
    label_w = min(max((len(h) for h in heads[heading:]), default=0), 24)
    for r in range(table.row_count):
        if heading == 1:
            console.print(cols[0][r] if cols[0][r] else heads[0], style="bold")
        else:  # several leading columns name the row: "x=1.5, variant=fast"
            console.print(", ".join(f"{heads[i]}={cols[i][r]}" for i in range(heading)), style="bold")
        rest = list(zip(heads[heading:], cols[heading:], strict=True))
        if compact:  # one wrapped paragraph: "input 5 · output 25 · ..."
            pairs = [f"{h} {col[r]}" for h, col in rest if col[r].strip()]
            console.print(textwrap.fill(" · ".join(pairs), width=width, initial_indent="  ", subsequent_indent="  "))
            continue
        for h, col in rest:
            value = col[r]
            if not value.strip():
                continue
            lead = f"  {h.ljust(label_w)}  "
            text = textwrap.fill(
                value, width=width, initial_indent=lead, subsequent_indent=" " * len(lead), break_on_hyphens=False
            )
            console.print(text, overflow="fold")
    if table.caption:
        console.print(str(table.caption))


def print_table(
    table: Table,
    *,
    wide: bool = False,
    pages: bool = False,
    compact: bool = False,
    heading: int = 1,
    console: Console | None = None,
) -> None:
    """Print ``table`` without cutting a cell: as it is, in pages of columns, or stacked (module docstring)."""
    console = console or table_console()
    need = _natural_width(console, table)
    if need <= console.width:
        console.print(table)
    elif wide:
        VisibleConsole(markup=False, emoji=False, soft_wrap=False, highlight=False, width=need).print(table)
    elif pages and len(table.columns) > 2:
        for page in _pages(console, table):
            if _natural_width(console, page) <= console.width:
                console.print(page)
            else:
                _stacked(console, page, compact)
    else:
        _stacked(console, table, compact, heading)


# --------------------------------------------------------------------------- one column per variant


class Rows:
    """Rows of a table with one column per variant (``run``, ``size``): one unit and one number of decimals
    per row (or per group of rows); ``variants`` maps a variant's name to the value handed to the getters (``run``:
    its :class:`~agentsim.sim.summary_model.Variant`; ``size``: its row of the sizing table)."""

    def __init__(self, table: Table, variants: dict):
        self.t, self.variants = table, variants

    def values(self, get) -> list:
        return [get(v) for v in self.variants.values()]

    def text(self, label: str, fn) -> None:
        self.t.add_row(label, *[fn(v) for v in self.variants.values()])

    def heading(self, label: str) -> None:
        self.t.add_row(label, *[""] * len(self.variants))

    def times(self, rows: list[tuple[str, object]]) -> None:
        """Rows of durations that share one unit (the largest value's) and one number of decimals."""
        from agentsim.viz import format as fmt

        values = [self.values(get) for _, get in rows]
        flat = [x for vs in values for x in vs]
        unit = fmt.time_unit(flat)
        decimals = fmt.decimals_for(flat, unit[1])
        for (label, _), vs in zip(rows, values, strict=True):
            self.t.add_row(label, *fmt.durations(vs, unit=unit, decimals=decimals))

    def metric(self, m, label: str | None = None) -> None:
        from agentsim.viz.sections import format_metric

        self.t.add_row(label or f"  {m.label}", *format_metric(m, self.values(m.get)))

    def section(self, section) -> None:
        """A section of :mod:`agentsim.viz.sections`: a heading, then one row per metric (time groups share a unit)."""
        self.heading(section.title.lower())
        done = set()
        for m in section.metrics:
            if m.group is not None and m.kind == "time":
                if m.group not in done:
                    done.add(m.group)
                    self.times([(f"  {x.label}", x.get) for x in section.metrics if x.group == m.group])
                continue
            self.metric(m)


def runs_title(doc: Summary | dict) -> str:
    """``2,000 runs``, or for a workload (whose variants count different runs) ``a workload, runs counted
    below`` (the table's ``runs counted`` row has them per variant)."""
    doc = as_summary(doc)
    if next(iter(doc.variants.values())).workload is None:
        return f"{doc.runs:,} runs"
    return "a workload, runs counted below"


def print_sources(res, console) -> None:
    """Under the table: the price list used per model (and tier) and where the speeds come from."""
    from agentsim.model.loading import source_of
    from agentsim.pricing.provenance import price_sources, speed_sources

    src = source_of(res.scenario)
    for name, text in price_sources(res.scenario, res.plan.prices_as_of).items():
        console.print(f"prices {name}: {text}", markup=False, highlight=False)
    for name, text in speed_sources(res.scenario, Path(src).parent if src else None).items():
        console.print(f"speeds {name}: {text}", markup=False, highlight=False)

"""The ``agentsim`` command line: a thin layer over the library.

Each command parses its arguments, calls library functions and renders the
result. Exit codes: 0 success, 2 bad input (scenario files, traces, options:
one paragraph per problem naming the file, the place and the fix), 1 a run that
failed for another reason. Set ``AGENTSIM_DEBUG=1`` to see a traceback instead.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentsim.cli.common import (
    BadInput,
    ExecutorOpt,
    MaxCallsOpt,
    NoSizeLimitOpt,
    QuietOpt,
    SchedulerOpt,
    app,
    check_executor_options,
    err_console,
    handle_errors,
)
from agentsim.cli.process_end import end_process

if TYPE_CHECKING:
    from rich.table import Table

    from agentsim.cli.tables import Rows
    from agentsim.sim.results import Results
    from agentsim.sim.summary_model import Summary, Variant

# Start-up: this module and the command modules it imports load only typer and the standard library;
# each command imports what it uses (rich, the scenario model, NumPy, pandas) when it runs, so
# `agentsim --help` answers at once (benchmarks/startup.py; tests/test_startup.py keeps it so).

__all__ = ["BadInput", "app", "err_console", "handle_errors", "main", "print_summary", "summary_table"]


def summary_table(doc: Summary | dict) -> Table:
    """A table with one column per variant and one row per figure (``doc``: the summary, typed or its dict)."""
    from rich.table import Table

    from agentsim.cli.tables import Rows, runs_title
    from agentsim.cli.targets import barge_in_rows, target_rows
    from agentsim.sim.summary_model import as_summary
    from agentsim.viz import sections

    doc = as_summary(doc)
    variants = doc.variants
    t = Table(
        title=f"{doc.scenario}: {runs_title(doc)}, seed {doc.seed}, engine {doc.engine}",
        title_justify="left",
    )
    t.add_column("", style="bold", no_wrap=True)
    for name in variants:
        t.add_column(name, justify="right", no_wrap=True, min_width=len(name))
    rows = Rows(t, variants)
    target_rows(rows, doc)  # with slo targets, the verdict leads: the share within each, p95, p99, rank
    turns = next(iter(variants.values())).vs_baseline.basis == "waiting_s"
    if turns:
        _waiting_rows(rows)
    _wall_rows(rows)
    _cost_rows(rows)
    _breakdown_rows(rows)
    _comparison_rows(rows, next(iter(variants)), doc.value_of_time_usd_per_hour)
    for make in (sections.success_section, sections.workload_section):
        section = make(doc)
        if section is not None:
            rows.section(section)
    if next(iter(variants.values())).streaming is not None:
        _streaming_rows(rows, doc)
    barge_in_rows(rows)
    limits = sections.limits_section(doc)
    if limits is not None:
        rows.section(limits)
        accounts = sections.accounts_section(doc)
        if accounts is not None:
            for m in accounts.metrics:
                rows.metric(m)
    return t


def _wall_rows(rows: Rows) -> None:
    from agentsim.viz import format as fmt

    wall = [("wall time mean", lambda v: v.wall_time_s.mean), ("  p50", lambda v: v.wall_time_s.p50),
            ("  p95", lambda v: v.wall_time_s.p95), ("  p99", lambda v: v.wall_time_s.p99)]  # fmt: skip
    half = [(v.wall_time_s.ci95[1] - v.wall_time_s.ci95[0]) / 2
            if v.wall_time_s.ci95[0] is not None else None for v in rows.variants.values()]  # fmt: skip
    flat = [x for _, get in wall for x in rows.values(get)]
    unit = fmt.time_unit(flat)
    decimals = fmt.decimals_for(flat, unit[1])
    cells = [fmt.durations(rows.values(get), unit=unit, decimals=decimals) for _, get in wall]
    rows.t.add_row(wall[0][0], *cells[0])
    ci = fmt.durations(half, unit=unit, decimals=max(decimals, fmt.decimals_for(half, unit[1])))
    rows.t.add_row("  95% CI", *[c if c == fmt.DASH else "±" + c for c in ci])
    if any(v.wall_time_s.param_ci95 is not None for v in rows.variants.values()):  # uncertainty: parameters
        rows.text("  95% CI with params", lambda v: _param_ci(v, unit, decimals))
    for (label, _), c in zip(wall[1:], cells[1:], strict=True):
        rows.t.add_row(label, *c)


def _waiting_rows(rows: Rows) -> None:
    """What the person waits for (a scenario with turns, contract v1.3): their turns, not their pauses."""
    rows.heading("waiting (the person's turns)")
    rows.times([("  per run mean", lambda v: v.waiting_s.mean), ("    p95", lambda v: v.waiting_s.p95)])
    rows.times([("  a turn mean", lambda v: v.turn_s.mean), ("    p95", lambda v: v.turn_s.p95)])
    rows.text("  turns per run", lambda v: f"{v.turns.mean:.1f}" if v.turns.mean is not None else "–")


def _param_ci(v: Variant, unit, decimals: int) -> str:
    from agentsim.viz import format as fmt

    lo, hi = v.wall_time_s.param_ci95 or [None, None]
    if lo is None:
        return fmt.DASH
    return f"{fmt.fmt_time(lo, unit, decimals)}–{fmt.fmt_time(hi, unit, decimals)}"


def _cost_rows(rows: Rows) -> None:
    from agentsim.viz import format as fmt

    rows.text("cost mean", lambda v: fmt.usd(v.cost_usd.mean))
    rows.text("  p95", lambda v: fmt.usd(v.cost_usd.p95))
    for label, get in (
        ("calls per run", lambda v: v.calls.mean),
        ("input tokens", lambda v: v.tokens.input),
        ("  cache read", lambda v: v.tokens.cache_read),
        ("output tokens", lambda v: v.tokens.output),
        ("reasoning tokens", lambda v: v.tokens.reasoning),
    ):
        vals = rows.values(get)
        rows.t.add_row(label, *fmt.numbers(vals, decimals=1 if max(map(abs, filter(None, vals)), default=0) < 100
                                           else 0))  # fmt: skip


def _breakdown_rows(rows: Rows) -> None:
    from agentsim.sim import slots

    rows.heading("critical path (mean)")
    first = next(iter(rows.variants.values())).breakdown_s.model_fields_set  # (a kind's own slots: extra fields)
    parts = [  # the five every run has, then stall and a step kind's own (listen) when the scenario has them
        (f"  {slot.label}", lambda v, k=slot.name: getattr(v.breakdown_s, k, None))
        for slot in slots.slots()
        if slot.name in slots.BREAKDOWN or slot.name in first
    ]
    rows.times(parts)


def _comparison_rows(rows: Rows, base: str, vot: float | None) -> None:
    from agentsim.sim import payoff
    from agentsim.viz import format as fmt

    names = list(rows.variants)
    dts = rows.values(lambda v: v.vs_baseline.delta_time_s)
    unit = fmt.time_unit(dts)
    decimals = fmt.decimals_for(dts, unit[1])
    rows.t.add_row("Δ time vs first", *["baseline" if n == base else fmt.signed_time(x, unit, decimals)
                                        for n, x in zip(names, dts, strict=True)])  # fmt: skip
    waiting = rows.variants[base].vs_baseline.basis == "waiting_s"
    if waiting:
        dws = rows.values(lambda v: v.vs_baseline.delta_waiting_s)
        rows.t.add_row("Δ waiting vs first", *["baseline" if n == base else fmt.signed_time(x, unit, decimals)
                                               for n, x in zip(names, dws, strict=True)])  # fmt: skip
    dcs = rows.values(lambda v: v.vs_baseline.delta_cost_usd)
    rows.t.add_row("Δ cost vs first", *["baseline" if n == base else fmt.signed_usd(x)
                                        for n, x in zip(names, dcs, strict=True)])  # fmt: skip
    rows.text(
        "USD per hour of waiting saved" if waiting else "USD per hour saved",
        lambda v: payoff.premium_text(v.vs_baseline.usd_per_hour_saved, fmt.usd),
    )
    label = f"pays off at {fmt.usd(vot)}/h" if vot is not None else "pays off (no value_of_time)"
    rows.text(label, lambda v: {True: "yes", False: "no", None: "–"}[v.vs_baseline.pays_off])


def _streaming_rows(rows: Rows, doc: Summary) -> None:
    """A few headline metrics (means) per call with a consumer, and the speed beyond which it gains nothing."""
    from agentsim.sim.stream_metrics import table_rows
    from agentsim.viz.sections import stream_metric

    shown = {metric for metric, _ in table_rows()}  # the headline metrics: common ones and each consumer kind's
    rows.heading("streaming (mean per call)")
    for call, names, apparate in sections_streaming(doc):
        for name in names:
            if name in shown:
                m = stream_metric(name, "mean", call)
                rows.metric(m, f"  {call}: {m.label}")
        if apparate is not None:
            rows.text(f"  {call}: gains nothing above", lambda v, c=call: _apparate(v, c))


def sections_streaming(doc: Summary | dict):
    from agentsim.viz.sections import streaming_sections

    return streaming_sections(doc)


def _apparate(v: Variant, call: str) -> str:
    a = v.streaming.apparate.get(call) if v.streaming is not None else None
    return "–" if a is None else f"{a.tokens_per_s:.1f} tok/s"


def print_summary(res: Results, wide: bool = False) -> None:
    from agentsim.analysis.completion import completion
    from agentsim.cli.tables import print_sources, print_table, table_console
    from agentsim.cli.targets import verdict_text

    doc = res.summary_model()
    # Never cut: a table wider than the terminal (or COLUMNS) is split into pages of variants.
    console = table_console()
    print_table(summary_table(doc), wide=wide, pages=True, console=console)
    verdict = verdict_text(doc)
    if verdict is not None:
        console.print(verdict, markup=False, highlight=False)
    print_sources(res, console)
    for c in completion(res, doc):
        if c.flagged:
            err_console.print("warning: " + _lower_first(c.warning()), markup=False)


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]


# --------------------------------------------------------------------------- commands


def warn_profile_ranges(scenario, file: Path) -> None:
    """Warn (stderr, never fail) where the scenario leaves its calibrated profiles' measured ranges."""
    from agentsim.plan.profile_ranges import range_warnings

    for w in range_warnings(scenario, file):
        err_console.print(f"warning: {w}", markup=False)


FileArg = Annotated[Path, typer.Argument(help="Scenario file (YAML, JSON or TOML).", show_default=False)]


@app.command()
@handle_errors
def run(
    file: FileArg,
    runs: Annotated[int | None, typer.Option(min=1, help="Monte-Carlo runs (default: the scenario's).")] = None,
    seed: Annotated[int | None, typer.Option(min=0, help="Random seed (default: the scenario's).")] = None,
    out: Annotated[Path | None, typer.Option(help="Write calls/runs tables, summary.json, figures here.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print only the summary.json document.")] = False,
    engine: Annotated[str, typer.Option(help="auto, des or fastpath.")] = "auto",
    workers: Annotated[int, typer.Option(min=1, help="Worker processes (results do not depend on it).")] = 1,
    executor: ExecutorOpt = "process",
    scheduler: SchedulerOpt = None,
    max_calls: MaxCallsOpt = None,
    no_size_limit: NoSizeLimitOpt = False,
    wide: Annotated[bool, typer.Option("--wide", help="One wide table even if wider than the terminal.")] = False,
    uncertainty: Annotated[
        str | None,
        typer.Option(help="parameters: add an interval with the models' speed uncertainty (20 more simulations)."),
    ] = None,
    quiet: QuietOpt = False,
) -> None:
    """Simulate a scenario and compare its variants."""
    check_executor_options(executor, scheduler)  # option mistakes first: they cost no import
    if uncertainty not in (None, "parameters"):
        raise BadInput(f"--uncertainty {uncertainty!r}: the only choice is parameters")
    if scheduler:
        from agentsim.sim.executors import reach_scheduler

        reach_scheduler(scheduler)  # an address out of reach is reported before the scenario loads

    from agentsim.cli.progress import progress_bar
    from agentsim.plan import plausibility
    from agentsim.plan.validation import input_files, load_with_lines
    from agentsim.sim.simulation import simulate
    from agentsim.viz.outdir import check_folder
    from agentsim.viz.report import write_results

    scenario, lines = load_with_lines(file)
    warn_profile_ranges(scenario, file)
    inputs = input_files(scenario)  # the scenario, its bases, profiles and empirical files: never written over
    if out is not None:
        check_folder(out, inputs=inputs)  # before the simulation: a bad --out costs a second, not the run
    _print_warnings(plausibility.check_scenario(scenario, str(file), lines))
    where = {"workers": workers, "executor": executor, "scheduler": scheduler}
    with progress_bar(quiet or json_out, "simulating") as bar:
        res = simulate(scenario, runs=runs, seed=seed, engine=engine, uncertainty=uncertainty, progress=bar, **where)
    _print_warnings(plausibility.check_results(res, str(file), lines))  # above the table
    if json_out:
        sys.stdout.write(res.to_json())
    else:
        print_summary(res, wide=wide)
    if out is not None:
        with progress_bar(quiet or json_out, "writing files") as bar:
            written = write_results(res, out, progress=bar, inputs=inputs)
        if not json_out:
            err_console.print(f"wrote {len(written)} files to {out}/", markup=False)


@app.command()
@handle_errors
def validate(
    files: Annotated[list[Path], typer.Argument(help="Scenario files to check.", show_default=False)],
) -> None:
    """Check scenario files without running them."""
    from agentsim.analysis.checks import command_problems
    from agentsim.model.loading import ScenarioError
    from agentsim.plan import plausibility
    from agentsim.plan.validation import load_with_lines

    failed, crashed = [], []
    for f in files:
        try:
            sc, lines = load_with_lines(f)
            problems = command_problems(f, sc, lines)  # what run, sweep, report... check before their work
            if problems:
                raise ScenarioError(problems)
            _print_warnings(plausibility.check_scenario(sc, str(f), lines))
            warn_profile_ranges(sc, f)
        except ScenarioError as exc:
            failed.append(exc)
            err_console.print("\n".join(f"error: {item}" for item in exc.items), markup=False)
        except Exception as exc:  # an internal error in one file must not hide the others' results
            if os.environ.get("AGENTSIM_DEBUG"):
                raise
            crashed.append(f)
            err_console.print(
                f"error: {f}: the check failed: {type(exc).__name__}: {exc} (please report it)", markup=False
            )
        else:
            typer.echo(f"ok: {f}")
    if crashed:
        raise typer.Exit(1)
    if failed:
        raise typer.Exit(2)


def _print_warnings(warnings) -> None:
    for w in warnings:
        err_console.print(str(w), markup=False)


def main() -> None:
    """The console-script entry point (and ``python -m agentsim``): the app, then the process ends without
    tearing down its heap (:func:`agentsim.cli.process_end.end_process`)."""
    try:
        app()
    except SystemExit as exc:  # typer's app always ends so, success included
        end_process(exc)


if __name__ == "__main__":  # pragma: no cover
    main()

# The other command groups register themselves on the shared app (agentsim.cli.common) when imported;
# this is the one place that imports them all.
from agentsim.cli import fit as cli_fit  # noqa: E402, F401
from agentsim.cli import measure as cli_measure  # noqa: E402, F401
from agentsim.cli import prices as cli_prices  # noqa: E402, F401
from agentsim.cli import profiles as cli_profiles  # noqa: E402, F401
from agentsim.cli import replay as cli_replay  # noqa: E402, F401
from agentsim.cli import stream as cli_stream  # noqa: E402, F401
from agentsim.cli import tradeoffs as cli_tradeoffs  # noqa: E402, F401

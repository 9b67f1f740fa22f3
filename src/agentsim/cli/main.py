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
    SchedulerOpt,
    app,
    check_executor_options,
    err_console,
    handle_errors,
)
from agentsim.cli.common import fmt_n as _fmt_n
from agentsim.cli.common import fmt_s as _fmt_s
from agentsim.cli.common import fmt_usd as _fmt_usd
from agentsim.cli.common import signed as _signed

if TYPE_CHECKING:
    from rich.table import Table

    from agentsim.sim.results import Results

# Start-up: this module and the command modules it imports load only typer and the standard library;
# each command imports what it uses (rich, the scenario model, NumPy, pandas) when it runs, so
# `agentsim --help` answers at once (benchmarks/startup.py; tests/test_startup.py keeps it so).

__all__ = ["BadInput", "app", "err_console", "handle_errors", "main", "print_summary", "summary_table"]


def summary_table(doc: dict) -> Table:
    """A table with one column per variant and one row per figure."""
    from rich.table import Table

    from agentsim.cli.tables import fmt_time, time_unit
    from agentsim.sim import payoff

    variants = doc["variants"]
    t = Table(
        title=f"{doc['scenario']}: {doc['runs']:,} runs, seed {doc['seed']}, engine {doc['engine']}",
        title_justify="left",
    )
    t.add_column("", style="bold", no_wrap=True)
    for name in variants:
        t.add_column(name, justify="right", no_wrap=True, min_width=len(name))
    vot = doc.get("value_of_time_usd_per_hour")

    def row(label, fn):
        t.add_row(label, *[fn(v) for v in variants.values()])

    def trow(label, get, unit=None):
        # durations: one unit per row (or per block of rows, when ``unit`` is given)
        values = [get(v) for v in variants.values()]
        unit = unit or time_unit(values)
        t.add_row(label, *[fmt_time(x, unit) for x in values])

    wall = time_unit(
        [v["wall_time_s"][k] for v in variants.values() for k in ("mean", "p50", "p95", "p99")]
    )  # the wall-time block shares one unit
    trow("wall time mean", lambda v: v["wall_time_s"]["mean"], wall)
    row(
        "  95% CI",
        lambda v: (
            "±" + fmt_time((v["wall_time_s"]["ci95"][1] - v["wall_time_s"]["ci95"][0]) / 2, wall)
            if v["wall_time_s"]["ci95"][0] is not None
            else "–"
        ),
    )
    if any("param_ci95" in v["wall_time_s"] for v in variants.values()):  # uncertainty: parameters
        row(
            "  95% CI with params",
            lambda v: (
                f"{_fmt_s(v['wall_time_s']['param_ci95'][0])}–{_fmt_s(v['wall_time_s']['param_ci95'][1])}"
                if v["wall_time_s"].get("param_ci95", [None])[0] is not None
                else "–"
            ),
        )
    for p in ("p50", "p95", "p99"):
        trow(f"  {p}", lambda v, p=p: v["wall_time_s"][p], wall)
    row("cost mean", lambda v: _fmt_usd(v["cost_usd"]["mean"]))
    row("  p95", lambda v: _fmt_usd(v["cost_usd"]["p95"]))
    row("calls per run", lambda v: _fmt_n(v["calls"]["mean"]))
    row("input tokens", lambda v: _fmt_n(v["tokens"]["input"]))
    row("  cache read", lambda v: _fmt_n(v["tokens"]["cache_read"]))
    row("output tokens", lambda v: _fmt_n(v["tokens"]["output"]))
    row("reasoning tokens", lambda v: _fmt_n(v["tokens"]["reasoning"]))
    t.add_row("critical path (mean)", *[""] * len(variants))
    parts = time_unit([x for v in variants.values() for x in v["breakdown_s"].values()])
    for k, label in (("queue", "queue"), ("ttft", "TTFT"), ("decode", "decode"), ("tool", "tools"), ("wait", "waits")):
        trow(f"  {label}", lambda v, k=k: v["breakdown_s"][k], parts)
    for k, label in (("stall", "stalls"), ("listen", "listening")):  # only when the scenario has them
        if k in next(iter(variants.values()))["breakdown_s"]:
            trow(f"  {label}", lambda v, k=k: v["breakdown_s"].get(k), parts)
    base = next(iter(variants))
    dt_unit = time_unit([v["vs_baseline"]["delta_time_s"] for v in variants.values()])
    t.add_row(
        "Δ time vs first",
        *[
            "baseline" if n == base else _signed(lambda x: fmt_time(x, dt_unit), v["vs_baseline"]["delta_time_s"])
            for n, v in variants.items()
        ],
    )
    t.add_row(
        "Δ cost vs first",
        *[
            "baseline" if n == base else _signed(_fmt_usd, v["vs_baseline"]["delta_cost_usd"])
            for n, v in variants.items()
        ],
    )
    row("USD per hour saved", lambda v: payoff.premium_text(v["vs_baseline"]["usd_per_hour_saved"], _fmt_usd))
    label = f"pays off at ${vot:,.0f}/h" if vot is not None else "pays off (no value_of_time)"
    row(label, lambda v: {True: "yes", False: "no", None: "–"}[v["vs_baseline"]["pays_off"]])
    first = next(iter(variants.values()))
    if "success" in first:
        t.add_row("success", *[""] * len(variants))
        row("  success share", lambda v: f"{v['success']['share']:.1%}" if v["success"]["share"] is not None else "–")
        row("  cost per success", lambda v: _fmt_usd(v["success"]["cost_per_success_usd"]))
        trow("  time to success", lambda v: v["success"]["time_to_success_s"])
    if "workload" in first:
        t.add_row("workload", *[""] * len(variants))
        row("  runs counted", lambda v: f"{v['workload']['runs_counted']:,}")
        row("  completed / failed", lambda v: f"{v['workload']['runs_completed']:,} / {v['workload']['runs_failed']:,}")
        row("  unfinished at end", lambda v: f"{v['workload']['runs_unfinished']:,}")
        row("  throughput (runs/h)", lambda v: f"{v['workload']['throughput_runs_per_hour']:,.1f}")
        row("  output tokens/min", lambda v: _fmt_n(v["workload"]["output_tokens_per_min"]))
    if "streaming" in first:
        _streaming_rows(t, row, first, len(variants))
    if "limits" in first:
        t.add_row("limits", *[""] * len(variants))
        qw = time_unit([v["limits"]["queue_wait_s"][k] for v in variants.values() for k in ("mean", "p95")])
        trow("  queue wait mean", lambda v: v["limits"]["queue_wait_s"]["mean"], qw)
        trow("  queue wait p95", lambda v: v["limits"]["queue_wait_s"]["p95"], qw)
        for key, label in (
            ("rejected_429", "429s"),
            ("retries", "retries"),
            ("errors", "errors"),
            ("timeouts", "timeouts"),
            ("fallbacks", "fallbacks"),
            ("failed_runs", "failed runs"),
        ):
            row(f"  {label}", lambda v, key=key: f"{v['limits']['attempts'][key]:,}")
        for acct in first["limits"].get("accounts", {}):
            for kind in ("concurrency", "rpm", "input_tpm", "output_tpm"):
                entry = first["limits"]["accounts"][acct].get(kind)
                if entry is not None and entry.get("utilisation") is not None:
                    row(
                        f"  {acct} {kind} use",
                        lambda v, a=acct, k=kind: f"{v['limits']['accounts'][a][k]['utilisation']:.0%}",
                    )
    return t


# The streaming block of the table: a few headline metrics per call with a consumer (means).
def _stream_rows() -> list[tuple]:
    """(metric, label, format) of the streaming rows: the labels are the consumer kinds' (table_rows)."""
    from agentsim.sim.streaming import table_rows

    fmts = {
        "qoe": lambda x: "–" if x is None else f"{x:.2f}",
        "interrupted_share": lambda x: "–" if x is None else f"{x:.0%}",
    }
    return [(key, label, fmts.get(key, _fmt_s)) for key, label in table_rows()]


def _streaming_rows(t: Table, row, first: dict, n_variants: int) -> None:
    t.add_row("streaming (mean per call)", *[""] * n_variants)
    for call, metrics in first["streaming"]["calls"].items():
        for key, label, fmt in _stream_rows():
            if key in metrics:
                row(
                    f"  {call}: {label}",
                    lambda v, c=call, k=key, f=fmt: f(v["streaming"]["calls"].get(c, {}).get(k, {}).get("mean")),
                )
        app = first["streaming"]["apparate"].get(call)
        if app is not None:
            row(f"  {call}: gains nothing above", lambda v, a=app: f"{a['tokens_per_s']:.1f} tok/s")


def print_summary(res: Results, wide: bool = False) -> None:
    from agentsim.cli.tables import print_table, table_console

    doc = res.summary_dict()
    # Never cut: a table wider than the terminal (or COLUMNS) is split into pages of variants.
    console = table_console()
    print_table(summary_table(doc), wide=wide, pages=True, console=console)
    print_sources(res, console)

    for name, v in doc["variants"].items():
        w = v.get("workload")
        if not w and "status" in res.runs:
            status = res.runs["status"].to_numpy()[(res.runs["variant"] == name).to_numpy()]
            failed = int((status != 0).sum())
            if failed and (failed == status.size or failed / status.size > 0.01):
                err_console.print(
                    f"warning: in variant '{name}', {failed / status.size:.0%} of the runs ({failed:,} of "
                    f"{status.size:,}) did not complete (they failed, e.g. after using up their retries); "
                    + (
                        "no run completed, so this variant has no wall-time or cost figures: check its models' "
                        "error_rate, timeout and limits"
                        if failed == status.size
                        else "wall-time and cost figures describe the completed runs only"
                    ),
                    markup=False,
                )
        if w and w["failed_share"] > 0.01:
            err_console.print(
                f"warning: in variant '{name}', {w['failed_share']:.0%} of the runs counted did not complete "
                f"({w['runs_failed']:,} failed "
                + ("(a fail step, or retries used up)" if "success" in v else "after using up their retries")
                + f", {w['runs_unfinished']:,} unfinished); "
                "wall-time and cost figures describe the completed runs only",
                markup=False,
            )


def print_sources(res: Results, console) -> None:
    """Under the table: the price list used per model (and tier) and where the speeds come from."""
    from agentsim.model.loading import source_of
    from agentsim.pricing.provenance import price_sources, speed_sources

    src = source_of(res.scenario)
    for name, text in price_sources(res.scenario, res.plan.prices_as_of).items():
        console.print(f"prices {name}: {text}", markup=False, highlight=False)
    for name, text in speed_sources(res.scenario, Path(src).parent if src else None).items():
        console.print(f"speeds {name}: {text}", markup=False, highlight=False)


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
) -> None:
    """Simulate a scenario and compare its variants."""
    check_executor_options(executor, scheduler)  # option mistakes first: they cost no import
    if uncertainty not in (None, "parameters"):
        raise BadInput(f"--uncertainty {uncertainty!r}: the only choice is parameters")
    if scheduler:
        from agentsim.sim.executors import reach_scheduler

        reach_scheduler(scheduler)  # an address out of reach is reported before the scenario loads

    from agentsim.plan import plausibility
    from agentsim.plan.validation import load_with_lines
    from agentsim.sim.simulation import simulate
    from agentsim.viz.outdir import check_folder
    from agentsim.viz.report import write_results

    scenario, lines = load_with_lines(file)
    warn_profile_ranges(scenario, file)
    if out is not None:
        check_folder(out)  # before the simulation: a bad --out costs a second, not the run
    _print_warnings(plausibility.check_scenario(scenario, str(file), lines))
    where = {"workers": workers, "executor": executor, "scheduler": scheduler}
    res = simulate(scenario, runs=runs, seed=seed, engine=engine, uncertainty=uncertainty, **where)
    _print_warnings(plausibility.check_results(res, str(file), lines))  # above the table
    if json_out:
        sys.stdout.write(res.to_json())
    else:
        print_summary(res, wide=wide)
    if out is not None:
        written = write_results(res, out)
        if not json_out:
            err_console.print(f"wrote {len(written)} files to {out}/", markup=False)


@app.command()
@handle_errors
def validate(
    files: Annotated[list[Path], typer.Argument(help="Scenario files to check.", show_default=False)],
) -> None:
    """Check scenario files without running them."""
    from agentsim.model.loading import ScenarioError
    from agentsim.plan import plausibility
    from agentsim.plan.validation import load_with_lines

    failed, crashed = [], []
    for f in files:
        try:
            sc, lines = load_with_lines(f)
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


def main() -> None:  # console-script entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    main()

# The other command groups register themselves on the shared app (agentsim.cli.common) when imported;
# this is the one place that imports them all.
from agentsim.cli import measure as cli_measure  # noqa: E402, F401
from agentsim.cli import prices as cli_prices  # noqa: E402, F401
from agentsim.cli import replay as cli_replay  # noqa: E402, F401
from agentsim.cli import stream as cli_stream  # noqa: E402, F401
from agentsim.cli import tradeoffs as cli_tradeoffs  # noqa: E402, F401

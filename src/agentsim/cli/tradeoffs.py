"""Commands for buying decisions: ``sweep``, ``size``, ``optimize`` and ``report``.

Each parses its options, calls :mod:`agentsim.analysis.sweeps`, :mod:`agentsim.analysis.tradeoffs`,
:mod:`agentsim.analysis.optimize` or :mod:`agentsim.viz.report`, and renders the answer. Long
runs show a progress bar on stderr when stderr is a terminal (never with
``--quiet`` or ``--json``). Bad options exit 2 with a message naming the option.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentsim.cli.common import (
    BadInput,
    DurationOpt,
    ExecutorOpt,
    MaxCallsOpt,
    NoSizeLimitOpt,
    SchedulerOpt,
    app,
    as_console,
    check_executor_options,
    err_console,
    handle_errors,
)
from agentsim.cli.common import fmt_s as _fmt_s
from agentsim.cli.common import fmt_usd as _fmt_usd

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

FileArg = Annotated[Path, typer.Argument(help="Scenario file (YAML, JSON or TOML).", show_default=False)]
RunsOpt = Annotated[int | None, typer.Option(min=1, help="Monte-Carlo runs (default: the scenario's).")]
SeedOpt = Annotated[int | None, typer.Option(min=0, help="Random seed (default: the scenario's).")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]
WideOpt = Annotated[bool, typer.Option("--wide", help="One wide table even if wider than the terminal.")]


@contextmanager
def progress_bar(quiet: bool, description: str) -> Iterator:
    """A callback ``(done, total)`` driving a progress bar on stderr; None when quiet or not a terminal."""
    if quiet or not err_console.is_terminal:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=as_console(err_console),
        transient=True,
    ) as prog:
        task = prog.add_task(description, total=None)

        def update(done: int, total: int | None, stage: str | None = None) -> None:
            prog.update(task, completed=done, total=total, description=stage or description)

        yield update


def _money(x: float | None) -> str:
    """USD with a sign for negatives and a plain $0."""
    if x is None or not math.isfinite(x):
        return "–"
    if x == 0:
        return "$0"
    return ("−" if x < 0 else "") + _fmt_usd(abs(x))


def _usd_h(x: float | None) -> str:
    return "–" if x is None or not math.isfinite(x) else _money(x) + "/h"


def _console() -> Console:
    """stdout; COLUMNS wide when set, else wide enough for the tables when it is not a terminal (a file, a pipe)."""
    from rich.console import Console

    c = Console(markup=False, emoji=False, soft_wrap=False)
    return (
        c
        if c.is_terminal or os.environ.get("COLUMNS")
        else Console(markup=False, emoji=False, soft_wrap=False, width=160)
    )


def _bad(exc: Exception) -> BadInput:
    return BadInput(str(exc))


# --------------------------------------------------------------------------- sweep


@app.command()
@handle_errors
def sweep(
    file: FileArg,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="PATH=VALUES: a range start:stop:step (stop included when on the grid), a list "
            "a,b,c or one YAML value. Repeat for a grid. Replaces the file's sweeps:.",
        ),
    ] = None,
    runs: RunsOpt = None,
    seed: SeedOpt = None,
    workers: Annotated[int | None, typer.Option(min=1, help="Processes (default: all cores).")] = None,
    executor: ExecutorOpt = "process",
    scheduler: SchedulerOpt = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Folder for sweep.parquet, sweep.csv, sweep.json and figures (default: results/<scenario>-sweep).",
        ),
    ] = None,
    time: Annotated[str, typer.Option(help="Frontier on mean or p95 wall time (for the printed table).")] = "mean",
    json_out: Annotated[bool, typer.Option("--json", help="Print only the sweep as JSON; write no files.")] = False,
    quiet: QuietOpt = False,
    max_calls: MaxCallsOpt = None,
    no_size_limit: NoSizeLimitOpt = False,
    wide: WideOpt = False,
    label: Annotated[
        list[str] | None,
        typer.Option("--label", help="PATH=TEXT: the title of a swept path's axis in figures and the table."),
    ] = None,
) -> None:
    """Evaluate a scenario over a grid of values: one row per grid point and variant, Pareto frontier marked."""
    from agentsim.analysis.sweeps import parse_set, run_sweep
    from agentsim.plan.validation import load
    from agentsim.viz.report import sweep_document, write_sweep

    if time not in ("mean", "p95"):
        raise BadInput(f"--time {time!r}: choose mean or p95")
    check_executor_options(executor, scheduler)
    target = None
    if not json_out:  # the folder checked before the sweep; by default one named after the scenario (a slug)
        from agentsim.viz.outdir import check_folder, default_folder

        target = check_folder(out if out is not None else default_folder(load(file).name, "sweep"))
    try:
        axes = [parse_set(s) for s in set_] if set_ else None
    except ValueError as exc:
        raise _bad(exc) from None
    labels = _labels(label)
    if labels and axes is None:
        from agentsim.analysis.sweeps import axes_from_scenario

        sc0 = load(file)
        axes = axes_from_scenario(sc0, str(file))
    if labels:
        axes = _apply_labels(axes, labels)
    with progress_bar(quiet or json_out, "sweep") as bar:
        try:
            sw = run_sweep(
                file, axes, runs=runs, seed=seed, workers=workers, executor=executor, scheduler=scheduler, progress=bar
            )
        except ValueError as exc:
            raise _bad(exc) from None
    if json_out:
        sys.stdout.write(json.dumps(sweep_document(sw), indent=2, allow_nan=False) + "\n")
        return
    from agentsim.cli.tables import print_table

    print_table(sweep_table(sw, time), wide=wide, heading=len(sw.axes) + 1, console=_console())
    written = write_sweep(sw, target)
    err_console.print(f"wrote {len(written)} files to {target}/", markup=False)


def _labels(items: list[str] | None) -> dict[str, str]:
    out = {}
    for item in items or []:
        path, sep, text = item.partition("=")
        if not sep or not path.strip() or not text.strip():
            raise BadInput(
                f"--label {item!r}: write PATH=TEXT, e.g. --label 'models.opus.speeds.fast.output_tps_x=speed-up'"
            )
        out[path.strip()] = text.strip()
    return out


def _apply_labels(axes, labels: dict[str, str]):
    import dataclasses

    from agentsim.analysis.sweeps import parse_path

    by_path = {}
    for a in axes:
        by_path[a.path] = a
    out = list(axes)
    for text, title in labels.items():
        try:
            path = parse_path(text)
        except ValueError as exc:
            raise BadInput(f"--label {text}={title}: {exc}") from None
        if path not in by_path:
            swept = ", ".join(a.text for a in axes) or "none"
            raise BadInput(f"--label {text}: that path is not swept (swept paths: {swept})")
        out = [dataclasses.replace(a, label=title) if a.path == path else a for a in out]
    return out


def sweep_table(sw, time: str = "mean", max_rows: int = 60) -> Table:
    """One row per grid point and variant: wall time, cost, Δ against the point's first variant, pays-off."""
    from rich.table import Table

    from agentsim.cli.tables import fmt_time, time_unit
    from agentsim.sim import payoff

    t = sw.table
    col = f"pareto_{time}"
    shown = t if len(t) <= max_rows else t[t[col]]
    heads = [a.label or str(a.path[-1]) for a in sw.axes]  # short headers; the full paths go in the caption
    title = (
        f"{sw.scenario.name}: {len(sw.points)} grid points × {len(sw.variants)} variants, {sw.runs:,} runs, "
        f"seed {sw.seed}; ◆ = on the Pareto frontier ({time} wall time, mean cost)"
    )
    if shown is not t:
        title += f"; showing the {len(shown)} frontier rows of {len(t)}"
    caption = "; ".join(f"{h} = {a.text}" for h, a in zip(heads, sw.axes, strict=True) if h != a.text)
    caption += ("; " if caption else "") + "Δ against the first variant at each grid point"
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    for h in heads:
        table.add_column(h, justify="right", overflow="fold")
    for name in ("variant", "mean wall", "p95 wall", "mean cost", "Δ time", "Δ cost", "$/h saved", "pays off", "◆"):
        table.add_column(name, justify="left" if name == "variant" else "right", no_wrap=True)
    first = shown.groupby("point", sort=False)["variant"].transform("first") if "point" in shown else None
    for i, (_, r) in enumerate(shown.iterrows()):
        unit = time_unit([r["wall_mean_s"], r["wall_p95_s"]])  # one unit per row
        base = first is not None and first.iloc[i] == r["variant"] and r["delta_time_s"] == 0
        dt_unit = time_unit([r["delta_time_s"]])
        table.add_row(
            *[str(r[a.text]) for a in sw.axes],
            str(r["variant"]),
            fmt_time(r["wall_mean_s"], unit),
            fmt_time(r["wall_p95_s"], unit),
            _money(r["cost_mean_usd"]),
            "baseline" if base else _signed_time(r["delta_time_s"], dt_unit),
            "baseline" if base else _money(r["delta_cost_usd"]),
            "–" if base else payoff.premium_text(_nan_none(r["usd_per_hour_saved"]), _money, "/h"),
            "–" if base else {True: "yes", False: "no"}.get(_nan_none(r["pays_off"]), "–"),
            "◆" if r[col] else "",
        )
    return table


def _nan_none(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _signed_time(x, unit) -> str:
    from agentsim.cli.tables import fmt_time

    if _nan_none(x) is None:
        return "–"
    return ("+" if x > 0 else "−" if x < 0 else "±") + fmt_time(abs(x), unit)


# --------------------------------------------------------------------------- size


@app.command()
@handle_errors
def size(
    file: FileArg,
    runs_per_month: Annotated[float | None, typer.Option(help="Runs per month (default: workload.volume).")] = None,
    seats: Annotated[float | None, typer.Option(help="Seats (users); with --runs-per-seat-per-day.")] = None,
    runs_per_seat_per_day: Annotated[
        float | None, typer.Option(help="Runs per seat per working day; with --seats.")
    ] = None,
    working_days: Annotated[
        float | None, typer.Option(help="Working days per month (default: the scenario's, else 30 calendar days).")
    ] = None,
    runs: RunsOpt = None,
    seed: SeedOpt = None,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes (results do not depend on it).")] = 1,
    json_out: Annotated[bool, typer.Option("--json", help="Print only JSON.")] = False,
    max_calls: MaxCallsOpt = None,
    no_size_limit: NoSizeLimitOpt = False,
    wide: WideOpt = False,
) -> None:
    """Monthly API spend, hours of waiting saved and the premium per saved hour, per variant."""
    from agentsim.analysis.tradeoffs import break_even, cheapest_intervals, spend_sizing, variant_table
    from agentsim.analysis.tradeoffs import runs_per_month as rpm
    from agentsim.plan.validation import load
    from agentsim.sim.simulation import simulate

    sc = load(file)
    try:
        per_month = rpm(
            sc, runs_per_month, seats=seats, runs_per_seat_per_day=runs_per_seat_per_day, working_days=working_days
        )
    except ValueError as exc:
        raise BadInput(f"{file}: {exc}") from None
    res = simulate(sc, runs=runs, seed=seed, workers=workers)
    vt = variant_table(res)
    vot = res.value_of_time
    sizing = spend_sizing(vt, per_month, value_of_time=vot)
    be = break_even(vt, value_of_time=vot)
    env = cheapest_intervals(vt)
    if json_out:
        doc = {
            "scenario": sc.name, "seed": res.seed, "runs": res.n_runs, "runs_per_month": per_month,
            "value_of_time_usd_per_hour": vot,
            "variants": {name: {**_clean(sizing.loc[name].to_dict()), **_clean(be.loc[name].to_dict())}
                         for name in vt.index},
            "cheapest_by_value_of_time": _clean_records(env),
        }  # fmt: skip
        sys.stdout.write(json.dumps(doc, indent=2, allow_nan=False) + "\n")
        return
    from agentsim.cli.tables import print_table

    print_table(buyers_table(sc.name, res, sizing, be, env, vot), wide=wide, pages=True, console=_console())


def _clean(d: dict) -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, float) and not math.isfinite(v):
            v = None
        elif hasattr(v, "item"):
            v = v.item()
        out[k] = v
    return out


def _clean_records(df) -> list[dict]:
    return [_clean(r) for r in df.to_dict(orient="records")]


def buyers_table(name, res, sizing, be, env, vot) -> Table:
    from rich.table import Table

    from agentsim.sim import payoff

    n = float(sizing["runs_per_month"].iloc[0])
    success = res.plan.defines_success  # sized per successful task: failed runs are retried
    what = "successful tasks" if success else "runs"
    t = Table(
        title=f"{name}: spend at {n:,.0f} {what} per month ({res.n_runs:,} runs simulated, seed {res.seed})",
        title_justify="left",
        caption="every run's wall time counts as waiting; Δ against the first variant"
        + ("; per successful task (cost per success, time to success: failed runs retried)" if success else ""),
        caption_justify="left",
    )
    t.add_column("", style="bold", no_wrap=True)
    variants = list(sizing.index)
    for v in variants:
        t.add_column(v, justify="right", no_wrap=True, min_width=len(v))

    def row(label, fn):
        t.add_row(label, *[fn(v) for v in variants])

    row("API spend per month", lambda v: _money(sizing.loc[v, "api_usd_per_month"]))
    if "api_usd_per_month_lo" in sizing.columns:
        row(
            "  95% CI",
            lambda v: (
                f"{_money(sizing.loc[v, 'api_usd_per_month_lo'])}–{_money(sizing.loc[v, 'api_usd_per_month_hi'])}"
            ),
        )
    row("hours waiting per month", lambda v: f"{sizing.loc[v, 'wait_hours_per_month']:,.0f} h")
    row(
        "mean / p95 wait per run",
        lambda v: f"{_fmt_s(sizing.loc[v, 'mean_wait_s'])} / {_fmt_s(sizing.loc[v, 'p95_wait_s'])}",
    )
    row("hours saved per month", lambda v: f"{sizing.loc[v, 'hours_saved_per_month']:,.0f} h")
    row("extra spend per month", lambda v: _money(sizing.loc[v, "extra_usd_per_month"]))
    row(
        "premium per saved hour",
        lambda v: payoff.premium_text(sizing.loc[v, "premium_usd_per_saved_hour"], _money, "/h"),
    )
    when = {"above": "V ≥ {v}", "below": "V ≤ {v}", "always": "always", "never": "never", "baseline": "–"}
    when["unknown"] = "– (no completed run)"
    row(
        "pays off when",
        lambda v: when[be.loc[v, "pays_off_when"]].format(v=_usd_h(be.loc[v, "break_even_usd_per_hour"])),
    )
    if vot is not None:
        row(f"net per month at ${vot:,.0f}/h", lambda v: _money(sizing.loc[v, "net_usd_per_month"]))
    cheapest = ", ".join(
        f"{r.variant} {_usd_h(r.from_usd_per_hour)}–"
        + (_usd_h(r.to_usd_per_hour) if math.isfinite(r.to_usd_per_hour) else "∞")
        for r in env.itertuples()
    )
    t.caption += f"\ncheapest overall by value of time V: {cheapest}"
    return t


# --------------------------------------------------------------------------- optimize


@app.command()
@handle_errors
def optimize(
    file: FileArg,
    budget_usd_per_run: Annotated[
        float | None, typer.Option(help="Minimise wall time with mean cost per run at most this (USD).")
    ] = None,
    max_p95: Annotated[str | None, DurationOpt("Minimise cost with p95 wall time at most this")] = None,
    max_mean: Annotated[str | None, DurationOpt("Minimise cost with mean wall time at most this")] = None,
    metric: Annotated[str, typer.Option(help="With a budget: minimise p95 or mean wall time.")] = "p95",
    steps: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated step or group names to decide on (default: the outermost named steps); "
            "a name given twice counts once."
        ),
    ] = None,
    models: Annotated[str | None, typer.Option(help="Comma-separated models a unit may also move to.")] = None,
    base: Annotated[str | None, typer.Option(help="Variant to start from (default: the first).")] = None,
    method: Annotated[str, typer.Option(help="auto, exhaustive or greedy.")] = "auto",
    runs: RunsOpt = None,
    seed: SeedOpt = None,
    workers: Annotated[int, typer.Option(min=1, help="Processes evaluating candidates.")] = 1,
    json_out: Annotated[bool, typer.Option("--json", help="Print only JSON.")] = False,
    quiet: QuietOpt = False,
    max_calls: MaxCallsOpt = None,
    no_size_limit: NoSizeLimitOpt = False,
) -> None:
    """Which steps to run on which speed tier (or model) to minimise p95 under a budget, or cost under a p95."""
    import yaml

    from agentsim.analysis.optimize import critical_table
    from agentsim.analysis.optimize import optimize as run_optimize
    from agentsim.plan.validation import load

    given = [
        o
        for o, v in (("--budget-usd-per-run", budget_usd_per_run), ("--max-p95", max_p95), ("--max-mean", max_mean))
        if v is not None
    ]
    if len(given) != 1:
        raise BadInput(
            "give exactly one of --budget-usd-per-run, --max-p95 or --max-mean"
            + (f" (got {', '.join(given)})" if given else "")
        )
    if max_mean is not None:
        metric = "mean"
    elif max_p95 is not None:
        metric = "p95"
    sc = load(file)
    with progress_bar(quiet or json_out, "candidates") as bar:
        try:
            opt = run_optimize(
                sc,
                budget_usd_per_run=budget_usd_per_run,
                max_time_s=max_p95 if max_p95 is not None else max_mean,
                metric=metric,
                base=base,
                steps=_names(steps),
                models=_names(models),
                runs=runs,
                seed=seed,
                method=method,
                workers=workers,
                progress=bar,
            )
        except ValueError as exc:
            raise BadInput(f"{file}: {exc}") from None
    crit = critical_table(sc, opt, runs=min(500, runs or sc.runs), seed=seed)
    if json_out:
        doc = {
            "scenario": sc.name, "method": opt.method, "mode": opt.mode, "metric": opt.metric, "limit": opt.limit,
            "feasible": opt.feasible, "base_variant": opt.base_variant, "choices": opt.choices,
            "variant": opt.variant, "baseline": _clean(opt.baseline), "chosen": _clean(opt.chosen),
            "left_as_is": opt.uncovered, "evaluated": opt.evaluated,
            "frontier": _clean_records(opt.frontier), "critical_path": _clean_records(crit),
        }  # fmt: skip
        sys.stdout.write(json.dumps(doc, indent=2, allow_nan=False) + "\n")
        return
    from agentsim.cli.tables import print_table

    console = _console()
    for t in optimize_tables(sc.name, opt, crit):
        print_table(t, console=console)
    console.print(
        "as a variant (paste under variants:):  chosen: "
        + yaml.safe_dump(opt.variant or {}, default_flow_style=True, sort_keys=False).strip(),
        markup=False,
    )


def _names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))  # a name given twice counts once
    return names or None


def optimize_tables(name: str, opt, crit) -> list[Table]:
    from rich.table import Table

    success = "basis" in opt.chosen  # ranked per successful task (the scenario has fail steps)
    unit = "per success" if success else "per run"
    cost_word = "cost per success" if success else "mean cost"
    time_word = "time to success" if success and opt.metric == "mean" else f"{opt.metric} wall time"
    goal = (
        f"minimise {time_word} with {cost_word} ≤ {_money(opt.limit)} {unit}"
        if opt.mode == "budget"
        else f"minimise {cost_word} with {time_word} ≤ {_fmt_s(opt.limit)}"
    )
    head = Table(
        title=f"{name}: {goal} ({opt.method}, {opt.evaluated} assignments simulated)"
        + ("" if opt.feasible else " — NO assignment meets the constraint; the closest is shown"),
        title_justify="left",
    )
    head.add_column("step / group")
    head.add_column("kind")
    head.add_column("options")
    head.add_column(f"base ({opt.base_variant})")
    head.add_column("chosen", style="bold")
    for u, k in zip(opt.units, opt.assignment, strict=True):
        head.add_row(
            u.name,
            u.kind,
            ", ".join(o.label for o in u.options),
            u.options[u.base].label,
            u.options[k].label + ("" if k != u.base else " (unchanged)"),
        )
    res = Table(title="result", title_justify="left")
    for c in ("", "base", "chosen", "Δ"):
        res.add_column(c, justify="right" if c else "left")
    figures = (
        ("mean wall time", "wall_mean_s", _fmt_s),
        ("p95 wall time", "wall_p95_s", _fmt_s),
        ("mean cost per run", "cost_mean_usd", _fmt_usd),
    )
    if success:
        figures = (
            ("time to success", "wall_mean_s", _fmt_s),
            ("p95 wall time", "wall_p95_s", _fmt_s),
            ("cost per success", "cost_mean_usd", _fmt_usd),
            ("mean cost per run", "cost_per_run_usd", _fmt_usd),
            ("success share", "success_share", lambda x: f"{x:.1%}"),
        )
    for label, key, fmt in figures:
        b, c = opt.baseline[key], opt.chosen[key]
        res.add_row(label, fmt(b), fmt(c), ("+" if c - b > 0 else "−" if c - b < 0 else "±") + fmt(abs(c - b)))
    front = Table(
        title="frontier walked" if opt.method == "greedy" else "Pareto frontier of all assignments",
        title_justify="left",
    )
    front.add_column("assignment")
    front.add_column(f"{opt.metric} wall" if not success or opt.metric != "mean" else "to success", justify="right")
    front.add_column("cost per success" if success else "mean cost", justify="right")
    extra = "move" if opt.method == "greedy" else "chosen"
    front.add_column(extra)
    for r in opt.frontier.itertuples():
        front.add_row(
            r.assignment,
            _fmt_s(r.time_s),
            _money(r.cost_mean_usd),
            r.move if extra == "move" else ("◀" if r.chosen else ""),
        )
    crit_t = Table(
        title="critical path: share of the wall time per step (and runs where it is on the path)", title_justify="left"
    )
    for c in ("step", "kind", "base", "chosen"):
        crit_t.add_column(c, justify="left" if c in ("step", "kind") else "right")
    for r in crit.itertuples():
        crit_t.add_row(
            r.step,
            r.kind,
            f"{_pct(r.base_share)} ({_pct(r.base_on_path)})",
            f"{_pct(r.chosen_share)} ({_pct(r.chosen_on_path)})",
        )
    if opt.uncovered:
        crit_t.caption = "left as in the base variant: " + ", ".join(opt.uncovered)
        crit_t.caption_justify = "left"
    return [head, res, front, crit_t]


def _pct(x) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{100 * x:.0f}%"


# --------------------------------------------------------------------------- report


@app.command()
@handle_errors
def report(
    file: FileArg,
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")] = Path("report.html"),
    runs: RunsOpt = None,
    seed: SeedOpt = None,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes (results do not depend on it).")] = 1,
    runs_per_month: Annotated[
        float | None, typer.Option(help="Runs per month for spend sizing (default: workload.volume).")
    ] = None,
    sweep: Annotated[bool, typer.Option("--sweep/--no-sweep", help="Include the scenario's sweeps:.")] = True,
    quiet: QuietOpt = False,
    max_calls: MaxCallsOpt = None,
    no_size_limit: NoSizeLimitOpt = False,
) -> None:
    """One self-contained HTML page (figures, tables, the scenario) to open in a browser or mail."""
    from agentsim.viz.outdir import check_file
    from agentsim.viz.report import build_report, write_report

    check_file(out)  # before the simulation: a folder, a special file, a name too long, a folder not writable
    if runs_per_month is not None and not runs_per_month > 0:
        raise BadInput(f"--runs-per-month {runs_per_month:g}: give a number of runs above 0")
    with progress_bar(quiet, "report") as bar:
        page = build_report(
            file,
            runs=runs,
            seed=seed,
            workers=workers,
            runs_per_month=runs_per_month,
            sweep=sweep,
            progress=(lambda stage, d, t: bar(d, t, stage)) if bar else None,
        )
    write_report(page, out)
    from agentsim.viz.outdir import shown

    err_console.print(f"wrote {shown(out)}", markup=False)

"""Commands for buying decisions: ``sweep``, ``size``, ``optimize`` and ``report``.

Each parses its options, calls :mod:`agentsim.analysis.sweeps`, :mod:`agentsim.analysis.tradeoffs`,
:mod:`agentsim.analysis.optimize` or :mod:`agentsim.viz.report`, and renders the answer. Long
runs show a progress bar on stderr when stderr is a terminal (never with
``--quiet`` or ``--json``). Bad options exit 2 with a message naming the option.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentsim.cli.common import (
    BadInput,
    DurationOpt,
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
from agentsim.cli.ended import ENDED_CAPTION, ENDED_HEADS, ended_cells, ended_columns, nan_none, table_console
from agentsim.cli.progress import progress_bar
from agentsim.cli.volume import RunsPerMonthOpt, RunsPerSeatOpt, SeatsOpt, WorkingDaysOpt, volume_of

if TYPE_CHECKING:
    from rich.table import Table

    from agentsim.sim.summary_model import Summary

FileArg = Annotated[Path, typer.Argument(help="Scenario file (YAML, JSON or TOML).", show_default=False)]
RunsOpt = Annotated[int | None, typer.Option(min=1, help="Monte-Carlo runs (default: the scenario's).")]
SeedOpt = Annotated[int | None, typer.Option(min=0, help="Random seed (default: the scenario's).")]
WideOpt = Annotated[bool, typer.Option("--wide", help="One wide table even if wider than the terminal.")]
MaxFailedOpt = Annotated[
    float | None,
    typer.Option(
        help="Over limit candidates (--set/--zip, or the file's sweeps:, listed from the smallest up): the first "
        "whose runs failed or unfinished are at most this share (0 to 1, e.g. 0.01) in every variant (or "
        "--variant), naming each candidate's binding account and limit."
    ),
]
CandidatesOpt = Annotated[
    list[str] | None, typer.Option("--set", help="With --max-failed-share: PATH=VALUES, candidates as in sweep.")
]
VariantOpt = Annotated[
    list[str] | None, typer.Option(help="With --max-failed-share: the variant(s) that must meet it (default: all).")
]
ZipOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--zip",
        help="PATH=VALUES varied together with the other --zip options (value i of each at the same grid "
        "point: zipped, not crossed), e.g. two accounts' limits up a ladder of tiers; crossed with any --set. "
        "Replaces the file's sweeps:.",
    ),
]


_console = table_console


def _bad(exc: Exception) -> BadInput:
    return BadInput(str(exc))


# --------------------------------------------------------------------------- sweep


SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="PATH=VALUES: a range start:stop:step (stop included when on the grid), a list "
        "a,b,c or one YAML value. Repeat for a grid. Replaces the file's sweeps:.",
    ),
]
SweepWorkersOpt = Annotated[int | None, typer.Option(min=1, help="Processes (default: all cores).")]
SweepOutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out",
        "-o",
        help="Folder for sweep.parquet, sweep.csv, sweep.json and figures (default: results/<scenario>-sweep).",
    ),
]
TimeOpt = Annotated[str, typer.Option(help="Frontier on mean or p95 wall time (for the printed table).")]
SweepJsonOpt = Annotated[bool, typer.Option("--json", help="Print only the sweep as JSON; write no files.")]
LabelOpt = Annotated[
    list[str] | None,
    typer.Option("--label", help="PATH=TEXT: the title of a swept path's axis in figures and the table."),
]


@app.command()
@handle_errors
def sweep(
    file: FileArg,
    set_: SetOpt = None,
    zip_: ZipOpt = None,
    runs: RunsOpt = None,
    seed: SeedOpt = None,
    workers: SweepWorkersOpt = None,
    executor: ExecutorOpt = "process",
    scheduler: SchedulerOpt = None,
    out: SweepOutOpt = None,
    time: TimeOpt = "mean",
    json_out: SweepJsonOpt = False,
    quiet: QuietOpt = False,
    max_calls: MaxCallsOpt = None,
    no_size_limit: NoSizeLimitOpt = False,
    wide: WideOpt = False,
    label: LabelOpt = None,
    runs_per_month: RunsPerMonthOpt = None,
    seats: SeatsOpt = None,
    runs_per_seat_per_day: RunsPerSeatOpt = None,
    working_days: WorkingDaysOpt = None,
) -> None:
    """Evaluate a scenario over a grid of values: one row per grid point and variant, Pareto frontier marked.

    With a volume (the options, or the scenario's workload.volume) every row also has its API spend per month."""
    from agentsim.analysis.sweeps import run_sweep
    from agentsim.plan.validation import load
    from agentsim.viz.report import sweep_document, write_sweep

    if time not in ("mean", "p95"):
        raise BadInput(f"--time {time!r}: choose mean or p95")
    check_executor_options(executor, scheduler)
    sc0 = load(file)
    target = None if json_out else _sweep_folder(sc0, out)  # checked before the sweep
    axes = _sweep_axes(file, sc0, set_, label, zip_)
    volume = volume_of(file, sc0, runs_per_month, seats, runs_per_seat_per_day, working_days, required=False)
    with progress_bar(quiet or json_out, "sweep") as bar:
        try:
            sw = run_sweep(
                file, axes, runs=runs, seed=seed, workers=workers, executor=executor, scheduler=scheduler, progress=bar
            )
        except ValueError as exc:
            raise _bad(exc) from None
    if volume is not None:
        from agentsim.analysis.sweeps import with_monthly_spend

        sw = with_monthly_spend(sw, volume.runs_per_month)
    if json_out:
        sys.stdout.write(json.dumps(sweep_document(sw, volume), indent=2, allow_nan=False) + "\n")
        return
    _print_sweep(sw, time, wide, volume)
    written = write_sweep(sw, target, volume)
    err_console.print(f"wrote {len(written)} files to {target}/", markup=False)


def _sweep_folder(sc0, out: Path | None) -> Path:
    """The folder the sweep's files go to, checked: ``--out``, by default one named after the scenario (a slug)."""
    from agentsim.plan.validation import input_files
    from agentsim.viz.outdir import check_folder, default_folder

    return check_folder(out if out is not None else default_folder(sc0.name, "sweep"), inputs=input_files(sc0))


def _print_sweep(sw, time: str, wide: bool, volume) -> None:
    """The sweep table, where returns diminish along its first numeric swept value, and the volume."""
    from agentsim.cli.tables import print_table

    console = _console()
    print_table(sweep_table(sw, time), wide=wide, heading=len(sw.axes) + 1, console=console)
    for line in knee_lines(sw):
        console.print(line, markup=False, highlight=False)
    if volume is not None:
        console.print(f"volume: {volume.derivation}", markup=False, highlight=False)


def _sweep_axes(file: Path, sc, set_: list[str] | None, label: list[str] | None, zip_: list[str] | None = None):
    """The axes of ``--set`` and ``--zip`` (None: the file's ``sweeps:``), titled by ``--label``."""
    from agentsim.analysis.sweeps import axes_from_scenario, parse_set, parse_zip

    try:
        axes = [parse_set(s) for s in set_ or []] + parse_zip(zip_ or [])
    except ValueError as exc:
        raise _bad(exc) from None
    if zip_ is not None and len(zip_) == 1:
        raise BadInput(f"--zip {zip_[0]}: --zip varies several places together; give it at least twice")
    axes = axes or None
    labels = _labels(label)
    if labels and axes is None:
        axes = axes_from_scenario(sc, str(file))
    return _apply_labels(axes, labels) if labels else axes


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
    """One row per grid point and variant: wall time, cost, Δ against the point's first variant, pays-off
    (and the API spend per month when the sweep was given a volume)."""
    from rich.table import Table

    t = sw.table
    col = f"pareto_{time}"
    shown = t if len(t) <= max_rows else t[t[col]]
    heads = [a.label or str(a.path[-1]) for a in sw.axes]  # short headers; the full paths go in the caption
    title = (
        f"{sw.scenario.name}: {len(sw.points)} grid points × {len(sw.variants)} variants, {_runs_words(sw)}, "
        f"seed {sw.seed}; ◆ = on the Pareto frontier ({time} wall time, mean cost)"
    )
    if shown is not t:
        title += f"; showing the {len(shown)} frontier rows of {len(t)}"
    caption = "; ".join(f"{h} = {a.text}" for h, a in zip(heads, sw.axes, strict=True) if h != a.text)
    caption += ("; " if caption else "") + "Δ against the first variant at each grid point"
    ended = ended_columns(t)
    if ended:
        caption += "; " + ENDED_CAPTION
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    for h in heads:
        table.add_column(h, justify="right", overflow="fold")
    monthly = "api_usd_per_month" in t.columns
    slo = "slo_all_share" in t.columns  # the scenario's targets: the share of runs meeting all of them
    gains = gain_cells(sw, shown)  # per unit of the first numeric swept value, from its previous point
    if gains is not None:
        table.caption += f"; {gains[0]}"
    names = ["variant", *[ENDED_HEADS[c] for c in ended], "mean wall", *(["gain/unit"] if gains else []),
             "p95 wall", "mean cost", *(["$/month"] if monthly else []), *(["slo met"] if slo else []), "Δ time",
             "Δ cost", "$/h saved", "pays off", "◆"]  # fmt: skip
    for name in names:
        table.add_column(name, justify="left" if name in ("variant", "binds") else "right", no_wrap=True)
    for i, cells in enumerate(_sweep_cells(sw, shown, col, monthly, slo)):
        at = len(sw.axes) + 1 + len(ended) + 1  # after the mean wall time
        table.add_row(*cells[:at], *([gains[1][i]] if gains else []), *cells[at:])
    return table


def gain_cells(sw, shown) -> tuple[str, list[str]] | None:
    """The sweep table's ``gain/unit`` column (the mean wall time, or waiting, saved per unit of the first
    numeric swept value since its previous point) and its caption; None when no swept value is a number."""
    from agentsim.analysis.sweep_gains import sweep_gains

    try:
        g = sweep_gains(sw)
    except ValueError:
        return None
    axis, metric = g.attrs["axis"], g.attrs["metric"]
    by_row = dict(zip(zip(g["point"], g["variant"], strict=True), g["gain_per_unit"], strict=True))
    values = [by_row.get((p, v)) for p, v in zip(shown["point"], shown["variant"], strict=True)]
    what = "waiting" if metric.startswith("waiting") else "wall time"
    caption = f"gain/unit = mean {what} saved per +1 of {axis} since its previous value"
    return caption, [_small_time(x) for x in values]


def _small_time(x) -> str:
    """A gain per unit, which can be tiny: three significant digits in s, ms or µs."""
    if x is None or not math.isfinite(x):
        return "–"
    if x == 0:
        return "0 s"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(x) >= scale or unit == "µs":
            return f"{x / scale:.3g} {unit}".replace("-", "−")
    return "–"  # pragma: no cover


def knee_lines(sw) -> list[str]:
    """Under the sweep table: per variant (and value of the other swept columns), where returns diminish."""
    from agentsim.analysis.sweep_gains import sweep_knees
    from agentsim.viz import format as fmt

    try:
        knees = sweep_knees(sw)
    except ValueError:
        return []
    axis, metric = knees.attrs["axis"], knees.attrs["metric"]
    what = "waiting" if metric.startswith("waiting") else "wall time"
    out = []
    for r in knees.to_dict("records"):
        where = ", ".join(f"{k}={v}" for k, v in r.items() if k not in ("knee_x", "knee_y", "gain_per_unit_after"))
        if not math.isfinite(r["knee_x"]):
            out.append(f"knee ({where}): none along {axis} (no bend in the mean {what})")
            continue
        after = r["gain_per_unit_after"]
        then = "" if not math.isfinite(after) else f", then {_small_time(after)} saved per +1"
        out.append(f"knee ({where}): returns diminish at {axis} = {r['knee_x']:g} (mean {what} "
                   f"{fmt.durations([r['knee_y']])[0]}{then})")  # fmt: skip
    return out


def _dagger(r) -> str:
    """† on a figure made from the completed runs only (more than 1% of the runs counted did not complete)."""
    return " †" if bool(_nan_none(r.get("completed_runs_only")) or False) else ""


def _runs_words(sw) -> str:
    """The runs of each grid point: a workload's are the runs its window counts, not ``runs``."""
    if sw.scenario.workload is not None and sw.scenario.workload.simulates_many:
        return "runs: those each workload's window counts"
    return f"{sw.runs:,} runs"


def _sweep_cells(sw, shown, col: str, monthly: bool, slo: bool = False) -> list[list[str]]:
    """The rows of :func:`sweep_table`; each duration column in one unit and one number of decimals."""
    from agentsim.sim import payoff
    from agentsim.viz import format as fmt

    first = shown.groupby("point", sort=False)["variant"].transform("first") if "point" in shown else None
    walls = [*shown["wall_mean_s"], *shown["wall_p95_s"]]
    unit = fmt.time_unit(walls)
    decimals = fmt.decimals_for(walls, unit[1])
    dt_unit = fmt.time_unit(shown["delta_time_s"])
    dt_dec = fmt.decimals_for(shown["delta_time_s"], dt_unit[1])
    out = []
    ended = ended_columns(shown)
    for i, (_, r) in enumerate(shown.iterrows()):
        base = first is not None and first.iloc[i] == r["variant"] and r["delta_time_s"] == 0
        out.append([
            *[str(r[a.text]) for a in sw.axes],
            str(r["variant"]),
            *ended_cells(r, ended),
            fmt.fmt_time(r["wall_mean_s"], unit, decimals) + _dagger(r),
            fmt.fmt_time(r["wall_p95_s"], unit, decimals) + _dagger(r),
            fmt.usd(r["cost_mean_usd"]) + _dagger(r),
            *([fmt.usd(r["api_usd_per_month"]) + _dagger(r)] if monthly else []),
            *([fmt.pct(_nan_none(r["slo_all_share"]))] if slo else []),
            "baseline" if base else fmt.signed_time(r["delta_time_s"], dt_unit, dt_dec),
            "baseline" if base else fmt.signed_usd(r["delta_cost_usd"]),
            "–" if base else payoff.premium_text(_nan_none(r["usd_per_hour_saved"]), fmt.usd, "/h"),
            "–" if base else {True: "yes", False: "no"}.get(_nan_none(r["pays_off"]), "–"),
            "◆" if r[col] else "",
        ])  # fmt: skip
    return out


_nan_none = nan_none


# --------------------------------------------------------------------------- size


@app.command()
@handle_errors
def size(
    file: FileArg,
    runs_per_month: RunsPerMonthOpt = None,
    seats: SeatsOpt = None,
    runs_per_seat_per_day: RunsPerSeatOpt = None,
    working_days: WorkingDaysOpt = None,
    runs: RunsOpt = None,
    seed: SeedOpt = None,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes (results do not depend on it).")] = 1,
    json_out: Annotated[bool, typer.Option("--json", help="Print only JSON.")] = False,
    max_calls: MaxCallsOpt = None,
    no_size_limit: NoSizeLimitOpt = False,
    wide: WideOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Monthly API spend, hours of waiting saved and the premium per saved hour, per variant."""
    from agentsim.analysis.tradeoffs import break_even, cheapest_intervals, spend_sizing, variant_table
    from agentsim.plan.validation import load
    from agentsim.sim.simulation import simulate
    from agentsim.sim.summary_model import Summary

    sc = load(file)
    volume = volume_of(file, sc, runs_per_month, seats, runs_per_seat_per_day, working_days)
    with progress_bar(quiet or json_out, "simulating") as bar:
        res = simulate(sc, runs=runs, seed=seed, workers=workers, progress=bar)
    doc = res.summary_dict()  # size --json copies its sections as they are
    summary = Summary.model_validate(doc)
    vt = variant_table(res, summary)
    vot = res.value_of_time
    sizing = spend_sizing(vt, volume.runs_per_month, value_of_time=vot)
    be = break_even(vt, value_of_time=vot)
    env = cheapest_intervals(vt)
    if json_out:
        sys.stdout.write(json.dumps(size_document(res, doc, volume, sizing, be, env), indent=2, allow_nan=False) + "\n")
        return
    from agentsim.cli.tables import print_sources, print_table

    console = _console()
    print_table(buyers_table(sc.name, res, sizing, be, env, vot, summary, volume), wide=wide, pages=True,
                console=console)  # fmt: skip
    print_sources(res, console)
    _warn_incomplete(res, summary)


def size_document(res, doc: dict, volume, sizing, be, env) -> dict:
    """``size --json``: the volume and its derivation, and per variant the spend, the break-even and how its
    runs ended (runs counted, failures, 429s: the numbers of ``run --json``). ``doc``: ``res.summary_dict()``,
    whose ``success``, ``workload`` and ``limits`` sections it copies as they are (as ``run --json`` has them)."""
    from agentsim.analysis.completion import completion

    ended = {c.variant: c for c in completion(res, doc)}
    variants = {}
    for name in sizing.index:
        v, c = doc["variants"][name], ended[name]
        variants[name] = {
            **_clean(sizing.loc[name].to_dict()),
            **_clean(be.loc[name].to_dict()),
            "runs": c.runs,
            "runs_failed": c.failed,
            "runs_unfinished": c.unfinished,
            "not_completed_share": c.share,
            **{k: v[k] for k in ("success", "workload", "limits") if k in v},
        }
    return {
        "scenario": res.scenario.name, "seed": res.seed, "runs": res.n_runs,
        "runs_per_month": volume.runs_per_month, "volume": volume.to_json(),
        "value_of_time_usd_per_hour": res.value_of_time,
        "prices_as_of": doc["prices_as_of"], "price_sources": _price_sources(res),
        "variants": variants,
        "cheapest_by_value_of_time": _clean_records(env),
        "warnings": [c.warning() for c in ended.values() if c.flagged],
    }  # fmt: skip


def _price_sources(res) -> dict[str, str]:
    from agentsim.pricing.provenance import price_sources

    return price_sources(res.scenario, res.plan.prices_as_of)


def _warn_incomplete(res, doc: Summary) -> None:
    """The completed-runs warning of ``run``, on stderr, for every variant that needs it."""
    from agentsim.analysis.completion import completion

    for c in completion(res, doc):
        if c.flagged:
            err_console.print("warning: " + c.warning()[:1].lower() + c.warning()[1:], markup=False)


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


def buyers_table(name, res, sizing, be, env, vot, doc: Summary | dict | None = None, volume=None) -> Table:
    """The ``size`` table: one column per variant; spend, waiting, break-even, then what ``run`` adds when
    it applies (success, workload counts, shared limits), with the volume and its derivation in the title."""
    from rich.table import Table

    from agentsim.analysis.tradeoffs import waiting_note
    from agentsim.cli.tables import Rows, runs_title
    from agentsim.sim.summary_model import as_summary
    from agentsim.viz import format as fmt
    from agentsim.viz import sections

    doc = as_summary(doc) if doc is not None else res.summary_model()
    success = res.plan.defines_success  # sized per successful task: failed runs are retried
    n = float(sizing["runs_per_month"].iloc[0])
    how = volume.derivation if volume is not None else f"{n:,.0f} runs a month"
    t = Table(
        title=f"{name}: monthly spend ({runs_title(doc)}, seed {res.seed})\nvolume: {how}"
        + (f"\n{n:,.0f} successful tasks per month (failed runs retried)" if success else ""),
        title_justify="left",
        caption=waiting_note(sizing.attrs.get("time_basis", "wall_time_s"))
        + "; Δ against the first variant"
        + ("; per successful task (cost per success, time to success: failed runs retried)" if success else ""),
        caption_justify="left",
    )
    t.add_column("", style="bold", no_wrap=True)
    for v in sizing.index:
        t.add_column(v, justify="right", no_wrap=True, min_width=len(v))
    rows = Rows(t, {v: sizing.loc[v] for v in sizing.index})
    _spend_rows(rows, sizing, be, vot)
    for make in (sections.success_section, sections.workload_section, sections.limits_section):
        section = make(doc)
        if section is not None:
            rows.variants = doc.variants
            rows.section(section)
    cheapest = ", ".join(
        f"{r.variant} {fmt.usd_per_hour(r.from_usd_per_hour)}–"
        + (fmt.usd_per_hour(r.to_usd_per_hour) if math.isfinite(r.to_usd_per_hour) else "∞")
        for r in env.itertuples()
    )
    t.caption += f"\ncheapest overall by value of time V: {cheapest}"
    return t


def _spend_rows(rows, sizing, be, vot) -> None:
    from agentsim.sim import payoff
    from agentsim.viz import format as fmt

    rows.text("API spend per month", lambda r: fmt.usd(r["api_usd_per_month"]))
    if "api_usd_per_month_lo" in sizing.columns:
        rows.text("  95% CI", lambda r: f"{fmt.usd(r['api_usd_per_month_lo'])}–{fmt.usd(r['api_usd_per_month_hi'])}")
    hours = list(sizing["wait_hours_per_month"]) + list(sizing["hours_saved_per_month"])
    decimals = fmt.decimals_for(hours)
    rows.t.add_row(
        "hours waiting per month", *fmt.numbers(list(sizing["wait_hours_per_month"]), " h", decimals=decimals)
    )
    rows.times([("mean wait per run", lambda r: r["mean_wait_s"]), ("p95 wait per run", lambda r: r["p95_wait_s"])])
    base = sizing.index[0]
    saved = fmt.numbers(list(sizing["hours_saved_per_month"]), " h", decimals=decimals)
    saved = ["–" if v == base else x for v, x in zip(sizing.index, saved, strict=True)]
    rows.t.add_row("hours saved per month", *saved)
    rows.t.add_row("extra spend per month", *["–" if v == base else fmt.signed_usd(sizing.loc[v, "extra_usd_per_month"])
                                              for v in sizing.index])  # fmt: skip
    rows.text("premium per saved hour", lambda r: payoff.premium_text(r["premium_usd_per_saved_hour"], fmt.usd, "/h"))
    when = {"above": "V ≥ {v}", "below": "V ≤ {v}", "always": "always", "never": "never", "baseline": "–"}
    when["unknown"] = "– (no completed run)"
    rows.t.add_row("pays off when", *[when[be.loc[v, "pays_off_when"]].format(
        v=fmt.usd_per_hour(be.loc[v, "break_even_usd_per_hour"])) for v in sizing.index])  # fmt: skip
    if vot is not None:
        rows.t.add_row(f"net per month at {fmt.usd(vot)}/h",
                       *["–" if v == base else fmt.signed_usd(sizing.loc[v, "net_usd_per_month"])
                         for v in sizing.index])  # fmt: skip


# --------------------------------------------------------------------------- optimize


EXIT_INFEASIBLE = 3  # optimize: no assignment meets the constraint (the closest one is shown)
MetricOpt = Annotated[
    str,
    typer.Option(
        help="With a budget: minimise p95 or mean wall time, or maximise the share of runs meeting every slo "
        "target (slo); auto: slo where the scenario has slo targets, else p95."
    ),
]


BudgetOpt = Annotated[float | None, typer.Option(help="Minimise wall time with mean cost per run at most this (USD).")]
MaxP95Opt = Annotated[str | None, DurationOpt("Minimise cost with p95 wall time at most this")]
MaxMeanOpt = Annotated[str | None, DurationOpt("Minimise cost with mean wall time at most this")]
MinSloShareOpt = Annotated[
    float | None,
    typer.Option(
        help="Minimise cost with at least this share of runs (0 to 1) meeting every slo target of the "
        "scenario, e.g. 0.95."
    ),
]
StepsOpt = Annotated[
    str | None,
    typer.Option(
        help="Comma-separated step or group names to decide on (default: the outermost named steps); "
        "a name given twice counts once."
    ),
]
ModelsOpt = Annotated[str | None, typer.Option(help="Comma-separated models a unit may also move to.")]
BaseOpt = Annotated[str | None, typer.Option(help="Variant to start from (default: the first).")]
MethodOpt = Annotated[str, typer.Option(help="auto, exhaustive or greedy.")]
CandidateWorkersOpt = Annotated[int, typer.Option(min=1, help="Processes evaluating candidates.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print only JSON.")]


@app.command()
@handle_errors
def optimize(
    file: FileArg,
    budget_usd_per_run: BudgetOpt = None,
    max_p95: MaxP95Opt = None,
    max_mean: MaxMeanOpt = None,
    min_slo_share: MinSloShareOpt = None,
    max_failed_share: MaxFailedOpt = None,
    set_: CandidatesOpt = None,
    zip_: ZipOpt = None,
    variant: VariantOpt = None,
    metric: MetricOpt = "auto",
    steps: StepsOpt = None,
    models: ModelsOpt = None,
    base: BaseOpt = None,
    method: MethodOpt = "auto",
    runs: RunsOpt = None,
    seed: SeedOpt = None,
    workers: CandidateWorkersOpt = 1,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
    max_calls: MaxCallsOpt = None,
    no_size_limit: NoSizeLimitOpt = False,
    runs_per_month: RunsPerMonthOpt = None,
    seats: SeatsOpt = None,
    runs_per_seat_per_day: RunsPerSeatOpt = None,
    working_days: WorkingDaysOpt = None,
) -> None:
    """Which steps to run on which speed tier (or model) to minimise p95 under a budget, or cost under a p95.

    With a volume (the options, or the scenario's workload.volume) the monthly spend of the base and the
    chosen assignment is shown too. Exit code 3 when no assignment meets the constraint (the closest one
    is shown, and --json says "feasible": false); 0 when one does; 2 for bad input.
    """
    from agentsim.analysis.optimize import critical_table
    from agentsim.plan.validation import load

    if max_failed_share is not None or set_ or zip_ or variant:  # over limit candidates (cli/limits_optimize)
        goals = (budget_usd_per_run, max_p95, max_mean, min_slo_share, steps, models, base)
        return _optimize_limits(
            file, max_failed_share, (set_, zip_, variant), goals, (runs, seed, workers, json_out, quiet)
        )
    metric, limit = _optimize_goal(budget_usd_per_run, max_p95, max_mean, metric, min_slo_share)
    sc = load(file)
    volume = volume_of(file, sc, runs_per_month, seats, runs_per_seat_per_day, working_days, required=False)
    goal = {"budget": budget_usd_per_run, "limit": limit, "slo": min_slo_share, "metric": metric}
    search = _Search(base, _names(steps), _names(models), runs, seed, method, workers)
    with progress_bar(quiet or json_out, "candidates") as bar:
        opt = _run_optimize(file, sc, goal, search, bar)
    crit = critical_table(sc, opt, runs=min(500, runs or sc.runs), seed=seed)
    if json_out:
        sys.stdout.write(json.dumps(optimize_document(sc.name, opt, crit, volume), indent=2, allow_nan=False) + "\n")
    else:
        _print_optimize(sc.name, opt, crit, volume)
    if not opt.feasible:
        raise typer.Exit(EXIT_INFEASIBLE)


def _optimize_limits(file: Path, bound, candidates: tuple, goals: tuple, run: tuple) -> None:
    """``optimize --max-failed-share``: ``candidates`` is (--set, --zip, --variant); ``goals`` the other goals'
    and decisions' options (none may be given); ``run`` (runs, seed, workers, --json, --quiet)."""
    from agentsim.cli.limits_optimize import optimize_limits
    from agentsim.plan.validation import load

    set_, zip_, variant = candidates
    names = ("--budget-usd-per-run", "--max-p95", "--max-mean", "--min-slo-share", "--steps", "--models", "--base")
    others = dict(zip(names, goals, strict=True))
    run_opts = dict(zip(("runs", "seed", "workers", "json", "quiet"), run, strict=True))
    optimize_limits(file, bound, _sweep_axes(file, load(file), set_, None, zip_), variant, others, run_opts)


def _optimize_goal(budget, max_p95, max_mean, metric: str, slo=None) -> tuple[str, float | None]:
    """The metric to minimise (or to bound) and the time limit, from the one constraint given."""
    options = (("--budget-usd-per-run", budget), ("--max-p95", max_p95), ("--max-mean", max_mean),
               ("--min-slo-share", slo))  # fmt: skip
    given = [o for o, v in options if v is not None]
    if len(given) != 1:
        raise BadInput(
            "give exactly one of --budget-usd-per-run, --max-p95, --max-mean or --min-slo-share"
            + (f" (got {', '.join(given)})" if given else "")
        )
    if slo is not None:  # its range (0 to 1) is checked with every numeric option (cli/common.OPTION_KINDS)
        return "slo", None
    if max_mean is not None:
        return "mean", max_mean
    if max_p95 is not None:
        return "p95", max_p95
    return metric, None


@dataclass(frozen=True)
class _Search:
    """How ``optimize`` searches: from which variant, over which steps and models, on how many runs and
    processes (the options besides the goal)."""

    base: str | None
    steps: list[str] | None
    models: list[str] | None
    runs: int | None
    seed: int | None
    method: str
    workers: int


def _run_optimize(file, sc, goal: dict, search: _Search, bar):
    """:func:`agentsim.analysis.optimize.optimize` on the goal and the search; its ValueError a BadInput."""
    from agentsim.analysis.optimize import optimize as run_optimize

    slo = goal["slo"]
    try:
        return run_optimize(sc, budget_usd_per_run=goal["budget"], max_time_s=goal["limit"], min_slo_share=slo,
                            metric="p95" if slo is not None else goal["metric"], base=search.base,
                            steps=search.steps, models=search.models, runs=search.runs, seed=search.seed,
                            method=search.method, workers=search.workers, progress=bar)  # fmt: skip
    except ValueError as exc:
        raise BadInput(f"{file}: {exc}") from None


def optimize_document(name: str, opt, crit, volume=None) -> dict:
    """``optimize --json``: the goal, the choice, the frontier, the critical path (and the monthly spend)."""
    doc = {
        "scenario": name, "method": opt.method, "mode": opt.mode, "metric": opt.metric, "limit": opt.limit,
        "feasible": opt.feasible, "exit_code": 0 if opt.feasible else EXIT_INFEASIBLE,
        "base_variant": opt.base_variant, "choices": opt.choices,
        "variant": opt.variant, "baseline": _clean(opt.baseline), "chosen": _clean(opt.chosen),
        "left_as_is": opt.uncovered, "evaluated": opt.evaluated,
        "frontier": _clean_records(opt.frontier), "critical_path": _clean_records(crit),
    }  # fmt: skip
    if opt.min_slo_share is not None:
        doc["min_slo_share"] = opt.min_slo_share
    if volume is not None:
        doc["volume"] = volume.to_json()
        doc["api_usd_per_month"] = {
            "base": _monthly(opt.baseline, volume),
            "chosen": _monthly(opt.chosen, volume),
        }
    return doc


def _monthly(row: dict, volume) -> float | None:
    x = row.get("cost_mean_usd")
    return None if x is None or not math.isfinite(x) else x * volume.runs_per_month


def _print_optimize(name: str, opt, crit, volume) -> None:
    import yaml

    from agentsim.cli.tables import print_table

    console = _console()
    for t in optimize_tables(name, opt, crit, volume):
        print_table(t, console=console)
    if volume is not None:
        console.print(f"volume: {volume.derivation}", markup=False, highlight=False)
    console.print(
        "as a variant (paste under variants:):  chosen: "
        + yaml.safe_dump(opt.variant or {}, default_flow_style=True, sort_keys=False).strip(),
        markup=False,
    )
    if not opt.feasible:
        err_console.print(
            f"no assignment meets the constraint; the closest is shown (exit code {EXIT_INFEASIBLE})", markup=False
        )


def _names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))  # a name given twice counts once
    return names or None


def optimize_tables(name: str, opt, crit, volume=None) -> list[Table]:
    """The goal and the choice per unit, the result (base, chosen, Δ), the frontier, the critical path."""
    return [_choice_table(name, opt), _result_table(opt, volume), _frontier_table(opt), _critical_table(opt, crit)]


def _choice_table(name: str, opt) -> Table:
    from rich.table import Table

    from agentsim.viz import format as fmt

    success = "basis" in opt.chosen  # ranked per successful task (the scenario has fail steps)
    unit = "per success" if success else "per run"
    cost_word = "cost per success" if success else "mean cost"
    time_word = "time to success" if success and opt.metric == "mean" else f"{opt.metric} wall time"
    if opt.mode == "budget" and opt.metric == "slo":
        every = "every slo target" if len(opt.targets) > 1 else _one_target(opt)
        goal = f"maximise the share of runs within {every} with {cost_word} ≤ {fmt.usd(opt.limit)} {unit}"
    elif opt.mode == "budget":
        goal = f"minimise {time_word} with {cost_word} ≤ {fmt.usd(opt.limit)} {unit}"
    elif opt.metric == "slo":
        goal = f"minimise {cost_word} with ≥ {fmt.pct(opt.min_slo_share)} of runs meeting every slo target"
    else:
        goal = f"minimise {cost_word} with {time_word} ≤ {fmt.fmt_time(opt.limit, fmt.time_unit([opt.limit]))}"
    head = Table(
        title=f"{name}: {goal} ({opt.method}, {opt.evaluated} assignments simulated)"
        + ("" if opt.feasible else " — NO assignment meets the constraint; the closest is shown"),
        title_justify="left",
    )
    for c in ("step / group", "kind", "options", f"base ({opt.base_variant})"):
        head.add_column(c)
    head.add_column("chosen", style="bold")
    for u, k in zip(opt.units, opt.assignment, strict=True):
        head.add_row(
            u.name,
            u.kind,
            ", ".join(o.label for o in u.options),
            u.options[u.base].label,
            u.options[k].label + ("" if k != u.base else " (unchanged)"),
        )
    return head


def _one_target(opt) -> str:
    from agentsim.cli.targets import target_label

    key, target = next(iter(opt.targets.items()))
    return target_label(key, target)


def _result_table(opt, volume) -> Table:
    from rich.table import Table

    from agentsim.cli.targets import optimize_target_rows
    from agentsim.viz import format as fmt

    success = "basis" in opt.chosen
    res = Table(title="result", title_justify="left")
    for c in ("", "base", "chosen", "Δ"):
        res.add_column(c, justify="right" if c else "left")
    optimize_target_rows(res, opt)  # with slo targets they lead: the share within each (95% CI), p95, p99
    times = [("time to success" if success else "mean wall time", "wall_mean_s"), ("p95 wall time", "wall_p95_s")]
    values = [opt.baseline[k] for _, k in times] + [opt.chosen[k] for _, k in times]
    unit = fmt.time_unit(values)
    dec = fmt.decimals_for(values, unit[1])
    for label, key in times:
        b, c = opt.baseline[key], opt.chosen[key]
        res.add_row(label, fmt.fmt_time(b, unit, dec), fmt.fmt_time(c, unit, dec), fmt.signed_time(c - b, unit, dec))
    money = [("cost per success", "cost_mean_usd"), ("mean cost per run", "cost_per_run_usd")] if success else [
        ("mean cost per run", "cost_mean_usd")]  # fmt: skip
    for label, key in money:
        b, c = opt.baseline[key], opt.chosen[key]
        res.add_row(label, fmt.usd(b), fmt.usd(c), fmt.signed_usd(c - b))
    if volume is not None:
        b, c = _monthly(opt.baseline, volume), _monthly(opt.chosen, volume)
        res.add_row("API spend per month", fmt.usd(b), fmt.usd(c),
                    fmt.signed_usd(c - b) if b is not None and c is not None else fmt.DASH)  # fmt: skip
    shares = [("success share", "success_share")] if success else []
    for label, key in shares:
        b, c = opt.baseline[key], opt.chosen[key]
        delta = fmt.DASH if b is None or c is None else ("+" if c >= b else "") + f"{100 * (c - b):.1f} pts"
        res.add_row(label, fmt.pct(b), fmt.pct(c), delta)
    return res


def _frontier_table(opt) -> Table:
    from rich.table import Table

    from agentsim.cli.targets import frontier_target_cells
    from agentsim.viz import format as fmt

    success = "basis" in opt.chosen
    front = Table(
        title="frontier walked" if opt.method == "greedy" else "Pareto frontier of all assignments",
        title_justify="left",
    )
    front.add_column("assignment")
    heads, target_cells = frontier_target_cells(opt)  # the targets first: the share within each, its p95
    for h in heads:
        front.add_column(h, justify="right")
    slo = opt.metric == "slo"  # (the frontier's time column then holds the share missing a target: shown above)
    if not slo:
        front.add_column(f"{opt.metric} wall" if not success or opt.metric != "mean" else "to success", justify="right")
    front.add_column("cost per success" if success else "mean cost", justify="right")
    extra = "move" if opt.method == "greedy" else "chosen"
    front.add_column(extra)
    times = [[t] for t in fmt.durations(list(opt.frontier["time_s"]))] if not slo else [[]] * len(opt.frontier)
    for r, cells, t in zip(opt.frontier.itertuples(), target_cells, times, strict=True):
        front.add_row(
            r.assignment, *cells, *t, fmt.usd(r.cost_mean_usd), r.move if extra == "move" else ("◀" if r.chosen else "")
        )
    return front


def _critical_table(opt, crit) -> Table:
    from rich.table import Table

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
    return crit_t


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
    runs_per_month: RunsPerMonthOpt = None,
    seats: SeatsOpt = None,
    runs_per_seat_per_day: RunsPerSeatOpt = None,
    working_days: WorkingDaysOpt = None,
    sweep: Annotated[bool, typer.Option("--sweep/--no-sweep", help="Include the scenario's sweeps:.")] = True,
    quiet: QuietOpt = False,
    max_calls: MaxCallsOpt = None,
    no_size_limit: NoSizeLimitOpt = False,
) -> None:
    """One self-contained HTML page (figures, tables, the scenario) to open in a browser or mail.

    Its last line is the command that makes the same page, byte for byte (every option that changed it)."""
    from agentsim.plan.validation import input_files, load
    from agentsim.viz.outdir import check_file
    from agentsim.viz.report import build_report, write_report

    check_file(out)  # before the simulation: a folder, a special file, a name too long, a folder not writable
    sc = load(file)
    inputs = input_files(sc)
    check_file(out, inputs=inputs)  # and not the scenario, nor a file it reads
    volume_of(file, sc, runs_per_month, seats, runs_per_seat_per_day, working_days, required=False)
    with progress_bar(quiet, "report") as bar:
        page = build_report(
            file,
            runs=runs,
            seed=seed,
            workers=workers,
            runs_per_month=runs_per_month,
            seats=seats,
            runs_per_seat_per_day=runs_per_seat_per_day,
            working_days=working_days,
            sweep=sweep,
            progress=(lambda stage, d, t: bar(d, t, stage)) if bar else None,
        )
    write_report(page, out, inputs=inputs)
    from agentsim.viz.outdir import shown

    err_console.print(f"wrote {shown(out)}", markup=False)

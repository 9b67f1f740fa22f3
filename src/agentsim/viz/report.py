"""Writing a result folder (tables, the summary, the resolved scenario, figures) and the HTML report.

Everything is first written into a temporary folder next to the target and only
moved into place once every file is complete, so an interrupted or failed write
never leaves a half-written result behind.

:func:`build_report` makes one self-contained HTML page (figures embedded as SVG
``data:`` URIs, no external files, scripts or fonts) that a person can open in a
browser or send by mail; :func:`write_report` writes it atomically. The page is a
deterministic function of the scenario file, the runs and the seed.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from markupsafe import Markup

from agentsim.model import yaml_text
from agentsim.model.safe_text import csv_frame
from agentsim.plan.validation import input_files
from agentsim.sim.results import Results, version
from agentsim.sim.summary_model import Summary
from agentsim.viz import figures
from agentsim.viz.outdir import Inputs, write_file, write_files, write_folder

__all__ = [
    "Analysis",
    "analyse",
    "build_report",
    "figure_data_uri",
    "figure_specs",
    "resolved_scenario",
    "sweep_document",
    "write_calls_parquet",
    "write_files",
    "write_folder",
    "write_report",
    "write_results",
    "write_sweep",
]


def resolved_scenario(res: Results) -> dict:
    """The scenario as run: every default filled in, with the seed, runs and version used."""
    doc = res.scenario.model_dump(mode="json", exclude_none=True)
    doc["seed"] = res.seed
    doc["runs"] = res.n_runs
    if res.plan.prices_as_of is not None:  # the date catalog prices were looked up as of (pins "today")
        doc["prices_as_of"] = res.plan.prices_as_of.isoformat()
    return {"agentsim_version": version(), "engine": res.engine, **doc}


def write_results(
    res: Results, out_dir: str | os.PathLike, extra: dict | None = None, progress=None, inputs: Inputs | None = None
) -> list[Path]:
    """Write ``calls.parquet``, ``runs.parquet``, ``summary.json``, ``scenario.resolved.yaml`` and
    ``tradeoff.png`` into ``out_dir``. ``progress(done, total)`` follows the calls table, the long part
    (:func:`write_calls_parquet`). ``inputs``: the files the folder must not hold (default: those read to
    make the results' scenario and plan, :func:`agentsim.plan.validation.input_files`)."""

    def fig_writer(make):
        def write(path: Path):
            fig = make()
            fig.savefig(path, dpi=120)

        return write

    writers: dict[str, Callable[[Path], None]] = {
        "summary.json": lambda p: p.write_text(res.to_json(), encoding="utf-8"),
        "runs.parquet": lambda p: res.runs.to_parquet(p, index=False),
        "calls.parquet": lambda p: write_calls_parquet(res, p, progress),
        "scenario.resolved.yaml": lambda p: p.write_text(
            yaml_text.dump(resolved_scenario(res), sort_keys=False, allow_unicode=True), encoding="utf-8"
        ),
        "tradeoff.png": fig_writer(partial(_tradeoff_in_its_unit, res)),
    }
    if res.plan.accounts or res.plan.workload is not None:
        writers["wait_cdf.png"] = fig_writer(partial(figures.plot_wait_cdf, res))
        if res.outcomes:
            writers["limits.png"] = fig_writer(partial(figures.plot_limits, res))
    writers.update(extra or {})
    return write_folder(out_dir, writers, inputs=input_files(res.scenario, res.plan) if inputs is None else inputs)


def _tradeoff_in_its_unit(res: Results):
    """The trade-off figure in the unit the run table gives wall times in (minutes for a 13-minute agent)."""
    from agentsim.viz.plots import tradeoff_figure

    summary = res.summary()
    return tradeoff_figure(summary, res.scenario.name, wall_unit(summary))


def write_calls_parquet(res: Results, path: Path, progress=None) -> None:
    """Write ``res.calls`` to ``path`` block by block, never holding the whole table (``progress(done,
    total)``: parts written so far, see :meth:`Results.calls_parts_count`).

    The blocks come variant-interleaved (each block of runs is simulated once for every
    variant), while the table is ordered variant by variant; so each variant's blocks go
    to a part file first, and the parts are then copied row group by row group into
    ``path``. Memory stays at one block's frames plus one row group, whatever the runs.
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    categories = list(res.variants)
    parts_dir = path.with_name(path.name + ".parts")
    writers: dict[int, pq.ParquetWriter] = {}
    schema = None
    total = res.calls_parts_count()
    try:
        for i, (v, frame) in enumerate(res.calls_parts()):
            if progress is not None:
                progress(i, total)
            if not len(frame):
                continue
            frame = frame.assign(variant=pd.Categorical(frame["variant"], categories=categories))
            table = pa.Table.from_pandas(frame, preserve_index=False)
            if schema is None:
                schema = table.schema
                parts_dir.mkdir()
            else:
                table = _conform(table, schema)
            if v not in writers:
                writers[v] = pq.ParquetWriter(parts_dir / f"{v}.parquet", schema)
            writers[v].write_table(table)
        for w in writers.values():
            w.close()
        if schema is None:  # no call was made at all
            res.calls.to_parquet(path, index=False)
            return
        with pq.ParquetWriter(path, schema) as out:
            for v in sorted(writers):
                part = pq.ParquetFile(parts_dir / f"{v}.parquet")
                for i in range(part.num_row_groups):
                    out.write_table(_conform(part.read_row_group(i), schema))
    finally:
        for w in writers.values():
            w.close()
        shutil.rmtree(parts_dir, ignore_errors=True)


def _conform(table, schema):
    """The same columns under exactly ``schema``: pandas' per-frame metadata may differ, and a parquet
    round trip reads a dictionary of ``large_string`` back as one of ``string``."""
    table = table.replace_schema_metadata(schema.metadata)
    return table if table.schema.equals(schema) else table.cast(schema)


# --------------------------------------------------------------------------- the HTML report


def figure_data_uri(fig) -> str:
    """A figure as an SVG ``data:`` URI (deterministic: no date, fixed element ids)."""
    import base64
    import io

    import matplotlib

    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "agentsim", "svg.fonttype": "path"}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def write_report(html_text: str, path: str | os.PathLike, inputs: Inputs = ()) -> Path:
    """Write an HTML report to ``path`` atomically (nothing half-written on failure); ``path`` must be none of
    ``inputs`` (the files the report was made from)."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder; give a file name such as {path / 'report.html'}")
    # one file, written beside its target (a mount point or volume root works) or to stdout for -
    return write_file(path, lambda p: p.write_text(html_text, encoding="utf-8"), inputs=inputs)


@dataclass
class Analysis:
    """What the page is made of: the results, the summary document and the trade-off tables built from it."""

    res: Results
    doc: Summary
    vt: Any
    be: Any
    env: Any
    volume: Any  # agentsim.analysis.volume.MonthlyVolume, or None
    sizing: Any  # spend_sizing() with a volume, else None
    sources: dict[str, str]  # price source per model and tier
    completion: list  # agentsim.analysis.completion.Completion per variant
    share: Any = None  # critical_share()
    sample: int = 0  # the run shown as a Gantt chart
    calls: Any = None  # the calls of the runs the critical-path table and the Gantt chart read
    spans: Any = None
    unit: tuple[str, float] = ("s", 1.0)  # the page's wall-time unit: every table and figure of wall time uses it


def build_report(
    scenario_file: str | os.PathLike,
    *,
    runs: int | None = None,
    seed: int | None = None,
    workers: int = 1,
    runs_per_month: float | None = None,
    seats: float | None = None,
    runs_per_seat_per_day: float | None = None,
    working_days: float | None = None,
    sweep: bool = True,
    progress: Callable[[str, int, int | None], None] | None = None,
) -> str:
    """Simulate a scenario file and return one self-contained HTML page about it.

    The page has a summary box (verdicts with the prices and dates they rest on, the completed-runs
    warning, the monthly total), the headline comparison, the figures (trade-off with Pareto frontier,
    wall-time CDFs, critical-path breakdown, a sampled run as a Gantt chart, break-even lines), the
    sections that apply to the scenario (success with ``fail`` steps; streaming with consumers; shared
    limits and workloads: 429s, retries, failures, queueing, throughput, requests in flight), break-even,
    cheapest-variant and monthly spend tables (volume: ``runs_per_month``, or ``seats`` ×
    ``runs_per_seat_per_day`` × ``working_days``, else ``workload.volume``:
    :func:`agentsim.analysis.volume.monthly_volume`), the critical-path share of each step, the
    scenario's ``sweeps:`` when it has any (and ``sweep`` is true), the scenario file itself with its
    comments (assumptions, sources), and the command that makes the same page. ``progress(stage, done,
    total)`` is called as the work advances. ValueError when the volume options contradict each other.
    """
    from agentsim.plan.validation import load_with_lines
    from agentsim.sim.simulation import simulate
    from agentsim.viz.report_page import reproduce_command

    step = _stepper(progress)
    path = Path(scenario_file)
    step("simulating")
    sc, lines = load_with_lines(path)
    if sweep and sc.sweeps:  # the grid checked before the simulation, as sweep checks it
        from agentsim.analysis.sweeps import file_grid

        file_grid(sc, str(path), lines)
    volume = _page_volume(sc, runs_per_month, seats, runs_per_seat_per_day, working_days)
    res = simulate(sc, runs=runs, seed=seed, workers=workers, progress=lambda d, t: step("simulating", d, t))
    a = analyse(res, volume)
    _critical_paths(a, step)
    figures = _figures(a, step)
    sweep_part = _sweep_part(path, res, a.unit, workers, step) if sweep and sc.sweeps else None
    return _page(path, a, figures, sweep_part, reproduce_command(path, res, volume, sweep))


def _stepper(progress: Callable[[str, int, int | None], None] | None) -> Callable[..., None]:
    """``step(stage, done=0, total=None)``, telling ``progress`` (if any) how the work advances."""

    def step(stage: str, done: int = 0, total: int | None = None) -> None:
        if progress is not None:
            progress(stage, done, total)

    return step


def _page_volume(sc, runs_per_month, seats, runs_per_seat_per_day, working_days):
    """The monthly volume of the page: from the options, else the scenario's ``workload.volume``, else None;
    options that contradict each other raise ValueError (the scenario's own volume only when none is given)."""
    from agentsim.analysis.volume import monthly_volume

    given = any(x is not None for x in (runs_per_month, seats, runs_per_seat_per_day, working_days))
    try:
        return monthly_volume(sc, runs_per_month, seats=seats, runs_per_seat_per_day=runs_per_seat_per_day,
                              working_days=working_days)  # fmt: skip
    except ValueError:
        if given:
            raise
        return None


def _sweep_part(path: Path, res: Results, unit: tuple[str, float], workers: int, step) -> dict:
    """The page's sweep section: the scenario's ``sweeps:`` run on the runs and seed of the page."""
    from agentsim.analysis.sweeps import run_sweep

    sw = run_sweep(path, runs=res.n_runs, seed=res.seed, workers=workers, progress=lambda d, t: step("sweep", d, t))
    return _sweep_context(sw, res.scenario.name, unit)


def analyse(res: Results, volume=None) -> Analysis:
    """The summary document and the trade-off tables of a result (and the monthly spend, with a volume)."""
    from agentsim.analysis.completion import completion
    from agentsim.analysis.tradeoffs import break_even, cheapest_intervals, spend_sizing, variant_table
    from agentsim.pricing.provenance import price_sources

    doc = res.summary_model()
    vt = variant_table(res, doc)
    vot = res.value_of_time
    sizing = spend_sizing(vt, volume.runs_per_month, value_of_time=vot) if volume is not None else None
    return Analysis(
        res=res,
        doc=doc,
        vt=vt,
        be=break_even(vt, value_of_time=vot),
        env=cheapest_intervals(vt),
        volume=volume,
        sizing=sizing,
        sources=price_sources(res.scenario, res.plan.prices_as_of),
        completion=completion(res, doc),
        unit=wall_unit(vt),
    )


def wall_unit(vt) -> tuple[str, float]:
    """The unit a page shows wall times in (tables and figures alike): the one that reads best for the variants'
    mean and percentiles (:func:`agentsim.viz.format.time_unit`)."""
    from agentsim.viz import format as fmt

    cols = [c for c in ("wall_mean_s", "wall_p50_s", "wall_p95_s", "wall_p99_s") if c in vt.columns]
    return fmt.time_unit(vt[cols].to_numpy(dtype=float).ravel())


CRITICAL_RUNS = 500  # the critical-path table reads the first runs (a bounded sample: one block of runs)


def _critical_paths(a: Analysis, step) -> None:
    """The critical-path share of each step over the first :data:`CRITICAL_RUNS` runs, and the run the
    Gantt chart shows: the first that completed in every variant. Only those runs' calls and spans are
    made (:meth:`Results.tables_of`), never the whole calls table."""
    from agentsim.analysis.timeline import critical_share, summarised

    res = a.res
    done = summarised(res.runs)
    run = done["run"].to_numpy()
    common = np.ones(int(res.runs["run"].max()) + 1 if len(res.runs) else 0, dtype=bool)
    for v in res.variants:  # the runs that completed in every variant
        common &= np.bincount(run[(done["variant"] == v).to_numpy()], minlength=common.size).astype(bool)
    a.sample = int(np.argmax(common)) if common.any() else 0
    step("critical paths", 0, None)
    a.calls, a.spans = res.tables_of({*range(min(CRITICAL_RUNS, res.n_runs)), a.sample})
    a.share = critical_share(
        a.calls, a.spans, res.runs, max_runs=CRITICAL_RUNS, progress=lambda d, t: step("critical paths", d, t)
    )


def _critical_note(a: Analysis) -> str:
    """What the critical-path table is read from, when that is a sample of the runs (else nothing)."""
    runs = a.res.runs["run"]
    if not len(runs) or int(runs.max()) < CRITICAL_RUNS:
        return ""
    return (
        f"Read from the runs numbered below {CRITICAL_RUNS} that completed (of {int(runs.max()) + 1:,} runs): "
        "a sample of whole runs, as a critical path is traced through every call of its run."
    )


def figure_specs(a: Analysis) -> dict[str, tuple[str, str, Callable]]:
    """Every figure the page may show: key -> (title, caption, maker). Only those that apply are listed."""
    from agentsim.analysis.timeline import run_timeline
    from agentsim.viz import plots

    res, name, unit = a.res, a.res.scenario.name, a.unit
    specs = {
        "tradeoff": ("Cost against wall time", "Each variant's mean cost per run against its mean (left) and p95 "
                     "(right) wall time. The dashed line is the Pareto frontier; grey points are dominated (another "
                     "variant is at least as fast and as cheap).",
                     lambda: plots.tradeoff_figure(_summary(a.doc), name, unit)),
        "cdf": ("Distribution of wall time", "The fraction of runs finished by each time. The dotted line marks the "
                "p95.", lambda: plots.cdf_figure(res.runs, name, unit)),
        "breakdown": ("Where the time goes", "Mean time on the critical path per run, split into queueing, time to "
                      "first token, decoding, tools and waits.", lambda: plots.breakdown_figure(res.runs, name, unit)),
        "timeline": ("One sampled run", f"Run {a.sample} of every variant (the first that completed in all of "
                     "them). Each parallel branch has a lane; the activities outlined are on the critical path, the "
                     "faint ones are not (speeding them up gains nothing).",
                     lambda: plots.timeline_figure(run_timeline(a.calls, a.spans, a.sample, res.plan), name, unit)),
        "breakeven": ("Total cost against the value of time", "API cost plus the value of the waiting time, per "
                      "run. The lowest line is the cheapest variant overall at that value of time; circles mark "
                      "where it changes.", lambda: plots.breakeven_figure(a.vt, res.value_of_time, name)),
    }  # fmt: skip
    if res.plan.has_streaming:
        specs["stream"] = ("How the answer arrives", "Tokens delivered against time in one representative run (the "
                           "median of the first variant) of the first call with a consumer, per variant: solid "
                           "delivered, dashed read, dotted spoken.", partial(figures.plot_stream, res))  # fmt: skip
    if res.plan.accounts:  # (the in-flight timeline, figures.plot_limits(res), is left to `run --out`: its series are
        # a workload's every admission, ~10^6 rows, and the table below has the means and peaks)
        specs["wait_cdf"] = ("Queue wait per call", "The share of successful calls that waited at most a given "
                             "time for a slot or rate budget (submit to start).",
                             partial(figures.plot_wait_cdf, res))  # fmt: skip
    return specs


def _figures(a: Analysis, step) -> dict[str, dict]:
    specs = figure_specs(a)
    out = {}
    for i, (key, (title, caption, make)) in enumerate(specs.items()):
        step("figures", i, len(specs))
        out[key] = _figure(title, caption, make())
    step("figures", len(specs), len(specs))
    return out


def _summary(doc: Summary):
    """``Results.summary()`` of the document already made (not computed again)."""
    from agentsim.sim.results import summary_frame, summary_rows

    return summary_frame(summary_rows(doc)).set_index("variant")


def _figure(title: str, caption: str, fig) -> dict:
    return {"title": title, "caption": caption, "uri": figure_data_uri(fig)}


def _sweep_context(sw, name: str, unit: tuple[str, float] = ("s", 1.0)) -> dict:
    from agentsim.viz import plots
    from agentsim.viz.report_tables import format_columns

    figures = [
        _figure(
            "Frontier over the sweep",
            "Every grid point and variant; the frontier is dashed and dominated configurations are grey.",
            plots.frontier_figure(sw.table, "mean", name, unit),
        )
    ]
    for a in sw.axes:
        figures.append(
            _figure(
                f"Against {a.title}",
                "Mean wall time (band: 95% CI), p95 (dashed) and mean cost (band: 95% CI) per variant.",
                plots.sweep_figure(sw.table, a.text, a.label, name, sw.independent_of(a.text), unit),
            )
        )
    t = sw.table
    shown = t if len(t) <= 300 else t[t["pareto_mean"] | t["pareto_p95"]]
    failing = "failed_share" in t.columns  # beside time and cost: the runs that failed, the throughput, 429s
    ended = [c for c in ("failed_share", "throughput_runs_per_hour", "rejected_429") if failing and c in t.columns]
    rows = [[r["point"], *[str(r[a.text]) for a in sw.axes], r["variant"], *[r[c] for c in ended], r["wall_mean_s"],
             r["wall_p95_s"], r["cost_mean_usd"], r["pareto_mean"], r["pareto_p95"]]
            for _, r in shown.iterrows()]  # fmt: skip
    n = len(sw.axes) + len(ended)
    kinds = ["count", *["text"] * len(sw.axes), "text", *[_ENDED_KINDS[c] for c in ended], "time", "time", "usd",
             "check", "check"]  # fmt: skip
    header = ["point", *[_breakable(a.text) for a in sw.axes], "variant", *[_ENDED_HEADS[c] for c in ended],
              "mean wall", "p95 wall", "mean cost", "frontier (mean)", "frontier (p95)"]  # fmt: skip
    return {
        "points": len(sw.points),
        "variants": len(sw.variants),
        "runs": "the workload's"
        if sw.scenario.workload is not None and sw.scenario.workload.simulates_many
        else f"{sw.runs:,}",
        "seed": sw.seed,
        "axes": [{"text": a.text, "values": ", ".join(map(str, a.values))} for a in sw.axes],
        "figures": figures,
        "note": ("" if shown is t else f"Only the {len(shown)} configurations on a frontier are listed (of {len(t)}).")
        + (" " + _COMPLETED_ONLY_PAGE if failing and bool(t["completed_runs_only"].any()) else ""),
        "rows": format_columns(rows, kinds, {n + 3: n + 2}, unit),
        "header": header,
    }


_CSS = """
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;color:#1d1d1f;max-width:1100px;
margin:2em auto;padding:0 1.2em}
h1{font-size:1.6em;margin-bottom:.1em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ddd}
h3{font-size:1.05em;margin:1.2em 0 .3em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.9em}
th,td{padding:.3em .7em;border-bottom:1px solid #e5e5e5}th{background:#f5f5f7;text-align:left}
table.num td:not(:first-child){text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
figure{margin:1.2em 0}figure img{max-width:100%;height:auto;border:1px solid #eee;box-sizing:border-box}
figcaption{font-size:.88em;color:#444;margin-top:.3em}
pre{background:#f7f7f7;padding:1em;overflow-x:auto;font-size:.82em}.meta td:first-child{color:#555;white-space:nowrap}
.lead{font-size:1.05em;background:#f3f8fc;border-left:4px solid #3d7ea6;padding:.6em 1em}
.lead p,.lead ul,.lead ol{margin:.35em 0}.lead .warn{color:#8a3b00}
.lead table.basis{font-size:.85em;margin:.5em 0 .2em}.lead table.basis th,.lead table.basis td{background:none}
code{background:#f2f2f2;padding:0 .25em}details{margin:1em 0}
@page{size:A4;margin:12mm 11mm 13mm}
@media print{
body{font-size:9pt;line-height:1.35;max-width:none;margin:0;padding:0;overflow-wrap:break-word}
code{overflow-wrap:anywhere}
h1{font-size:1.45em;margin-top:0}h2{font-size:1.2em;margin-top:1.1em;break-after:avoid}h3{break-after:avoid}
table{font-size:.9em;margin:.4em 0 .8em}th,td{padding:.15em .4em}thead{display:table-header-group}
tr,figure,.lead li{break-inside:avoid}figure{margin:.6em 0}figure img{max-height:95mm;width:auto}
pre{white-space:pre-wrap;overflow:visible;font-size:.8em;padding:.5em}
.lead{padding:.3em .8em;-webkit-print-color-adjust:exact;print-color-adjust:exact}
details{display:none}
}
"""


def _page(path: Path, a: Analysis, figs: dict[str, dict], sweep: dict | None, reproduce: str) -> str:
    """The page: the template ``templates/report.html`` filled in (values escaped unless marked as markup)."""
    from agentsim.analysis.tradeoffs import waiting_note
    from agentsim.viz import report_tables as tables
    from agentsim.viz import sections
    from agentsim.viz.notes import comment_blocks, paragraphs
    from agentsim.viz.page_env import environment
    from agentsim.viz.report_page import header_rows, summary_box

    res, vot = a.res, a.res.value_of_time
    per_success = a.vt.attrs.get("basis") == "per success"
    files = _source_files(path)
    optional = [(make(a.doc), key) for make, key in ((sections.success_section, "success"),
                (sections.workload_section, "workload"), (sections.limits_section, "limits"))]  # fmt: skip
    env = environment(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    return env.get_template("report.html").render(
        title=f"agentsim report: {res.scenario.name}",
        css=Markup(_CSS),
        description=paragraphs(res.scenario.description),
        box=summary_box(a),
        per_success=per_success,
        meta=header_rows(a, path, version()),
        variants=tables.variants_table(a.vt, per_success, a.unit),
        figures=figs,
        sections={key: tables.section_table(a.doc, sec) for sec, key in optional if sec is not None},
        slo=tables.slo_table(a.doc),
        streaming=tables.streaming_tables(a.doc),
        accounts=tables.accounts_table(a.doc),
        break_even=tables.break_even_table(a.be, vot, a.unit),
        cheapest=tables.cheapest_table(a.env),
        volume=a.volume.derivation if a.volume is not None else None,
        waiting=waiting_note(a.vt.attrs.get("time_basis", "wall_time_s")),
        sizing=tables.spend_table(a.sizing) if a.sizing is not None else None,
        critical=tables.critical_table(a.share),
        critical_note=_critical_note(a),
        sweep=sweep,
        notes=[{"name": str(f), "blocks": comment_blocks(text)} for f, text in files],
        files=[{"name": str(f), "text": text} for f, text in files],
        resolved=yaml_text.dump(resolved_scenario(res), sort_keys=False, allow_unicode=True),
        version=version(),
        seed=res.seed,
        runs=f"{res.n_runs:,}",
        reproduce=reproduce,
    )


def _source_files(path: Path) -> list[tuple[Path, str]]:
    """The scenario file and the files it extends (``extends:``), each with its text and comments."""
    out: list[tuple[Path, str]] = []
    seen: set[Path] = set()
    while path is not None and path.resolve() not in seen:
        seen.add(path.resolve())
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:  # pragma: no cover - it was just loaded
            break
        out.append((path, text))
        try:
            data = yaml.safe_load(text) if path.suffix.lower() != ".toml" else None
        except yaml.YAMLError:  # pragma: no cover - it was just loaded
            data = None
        base = data.get("extends") if isinstance(data, dict) else None
        path = (path.parent / base) if isinstance(base, str) else None
    return out


def sweep_document(sw, volume=None) -> dict:
    """A sweep as JSON-ready data: what was swept, with which seed and runs, the table's rows (and the
    volume their ``api_usd_per_month`` was sized at, with its derivation)."""
    import pandas as pd

    def plain(v):
        if v is None or v is pd.NA:
            return None
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, float) and not np.isfinite(v):
            return None
        return v

    rows = [{k: plain(v) for k, v in r.items()} for r in sw.table.to_dict(orient="records")]
    return {
        "scenario": sw.scenario.name,
        "seed": sw.seed,
        "runs": sw.runs,
        "engine": sw.engine,
        "agentsim_version": version(),
        "axes": [{"set": a.text, "values": list(a.values), "label": a.label} for a in sw.axes],
        **({"volume": volume.to_json()} if volume is not None else {}),
        **({"notes": [COMPLETED_ONLY_NOTE]} if "completed_runs_only" in sw.table.columns else {}),
        "rows": rows,
    }


def _breakable(path: str) -> Markup:
    """A swept path as a table heading that may wrap after each dot and bracket (a printed page is narrow)."""
    parts = re.split(r"(?<=[.\]])", path)
    return Markup("<wbr>").join(parts)


_ENDED_KINDS = {"failed_share": "share", "throughput_runs_per_hour": "number", "rejected_429": "count"}
_ENDED_HEADS = {"failed_share": "failed", "throughput_runs_per_hour": "runs/h", "rejected_429": "429s"}
_COMPLETED_ONLY_PAGE = (
    "Where more than 1% of the runs failed or did not finish (the failed column), the wall time and cost "
    "describe the completed runs only, not every run started."
)
COMPLETED_ONLY_NOTE = (
    "failed_share is the share of the runs counted that failed (retries used up, or a fail step) or did not "
    "finish; where it is above 1% (completed_runs_only: true) the wall-time and cost figures, and the monthly "
    "spend made from them, describe the completed runs only, not every run started"
)


def write_sweep(sw, out_dir: str | os.PathLike, volume=None, inputs: Inputs | None = None) -> list[Path]:
    """Write ``sweep.parquet``, ``sweep.csv``, ``sweep.json``, the frontier figures and one figure per axis."""
    import json
    import re

    from agentsim.viz import plots

    name = sw.scenario.name

    def fig_writer(make):
        def write(path: Path):
            make().savefig(path, dpi=120, metadata={"Software": None})

        return write

    writers: dict[str, Callable[[Path], None]] = {
        "sweep.parquet": lambda p: sw.table.to_parquet(p, index=False),
        "sweep.csv": lambda p: csv_frame(sw.table).to_csv(p, index=False),  # safe to open in a spreadsheet
        "sweep.json": lambda p: p.write_text(
            json.dumps(sweep_document(sw, volume), indent=2, allow_nan=False) + "\n", encoding="utf-8"
        ),
        "frontier-mean.png": fig_writer(lambda: plots.frontier_figure(sw.table, "mean", name)),
        "frontier-p95.png": fig_writer(lambda: plots.frontier_figure(sw.table, "p95", name)),
    }
    for i, a in enumerate(sw.axes):
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", a.text).strip("-")
        writers[f"sweep-{i + 1}-{slug}.png"] = fig_writer(
            lambda a=a: plots.sweep_figure(sw.table, a.text, a.label, name, sw.independent_of(a.text))
        )
    return write_folder(out_dir, writers, inputs=input_files(sw.scenario) if inputs is None else inputs)

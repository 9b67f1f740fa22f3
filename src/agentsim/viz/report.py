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
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import yaml
from markupsafe import Markup

from agentsim.sim import payoff
from agentsim.sim.results import Results, version
from agentsim.viz.outdir import sigterm_interrupts, write_folder

__all__ = [
    "build_report",
    "figure_data_uri",
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


def write_files(out_dir: str | os.PathLike, writers: dict[str, Callable[[Path], None]]) -> list[Path]:
    """Write files atomically as a set into an existing (or new) folder, leaving its other files alone.

    ``writers`` maps a file name to a function writing that path. (A result folder, replaced
    whole, is :func:`agentsim.viz.outdir.write_folder`.)"""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out} exists and is not a folder")
    parent = out.parent if str(out.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    with sigterm_interrupts():
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=parent))
        try:
            for name, write in writers.items():
                write(tmp / name)
            out.mkdir(exist_ok=True)
            written = []
            for name in writers:
                os.replace(tmp / name, out / name)
                written.append(out / name)
            return written
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def write_results(res: Results, out_dir: str | os.PathLike, extra: dict | None = None) -> list[Path]:
    """Write ``calls.parquet``, ``runs.parquet``, ``summary.json``, ``scenario.resolved.yaml`` and
    ``tradeoff.png`` into ``out_dir``."""

    def fig_writer(make):
        def write(path: Path):
            fig = make()
            fig.savefig(path, dpi=120)

        return write

    writers: dict[str, Callable[[Path], None]] = {
        "summary.json": lambda p: p.write_text(res.to_json(), encoding="utf-8"),
        "runs.parquet": lambda p: res.runs.to_parquet(p, index=False),
        "calls.parquet": lambda p: write_calls_parquet(res, p),
        "scenario.resolved.yaml": lambda p: p.write_text(
            yaml.safe_dump(resolved_scenario(res), sort_keys=False, allow_unicode=True), encoding="utf-8"
        ),
        "tradeoff.png": fig_writer(res.plot_tradeoff),
    }
    if res.plan.accounts or res.plan.workload is not None:
        writers["wait_cdf.png"] = fig_writer(res.plot_wait_cdf)
        if res.outcomes:
            writers["limits.png"] = fig_writer(res.plot_limits)
    writers.update(extra or {})
    return write_folder(out_dir, writers)


def write_calls_parquet(res: Results, path: Path) -> None:
    """Write ``res.calls`` to ``path`` block by block, never holding the whole table.

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
    try:
        for v, frame in res.calls_parts():
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


def write_report(html_text: str, path: str | os.PathLike) -> Path:
    """Write an HTML report to ``path`` atomically (nothing half-written on failure)."""
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a folder; give a file name such as {path / 'report.html'}")
    (written,) = write_files(
        path.parent if str(path.parent) else ".", {path.name: lambda p: p.write_text(html_text, encoding="utf-8")}
    )
    return written


def build_report(
    scenario_file: str | os.PathLike,
    *,
    runs: int | None = None,
    seed: int | None = None,
    workers: int = 1,
    runs_per_month: float | None = None,
    sweep: bool = True,
    progress: Callable[[str, int, int | None], None] | None = None,
) -> str:
    """Simulate a scenario file and return one self-contained HTML page about it.

    The page has the headline comparison, the figures (trade-off with Pareto
    frontier, wall-time CDFs, critical-path breakdown, a sampled run as a Gantt
    chart, break-even lines), break-even, cheapest-variant and monthly spend tables
    (with ``workload.volume`` or ``runs_per_month``), the critical-path share of each
    step, the scenario's ``sweeps:`` when it has any (and ``sweep`` is true), and the
    scenario file itself with its comments (assumptions, sources). ``progress(stage,
    done, total)`` is called as the work advances.
    """
    from agentsim.analysis.timeline import critical_share, run_timeline, summarised
    from agentsim.analysis.tradeoffs import break_even, cheapest_intervals, spend_sizing, variant_table
    from agentsim.analysis.tradeoffs import runs_per_month as _rpm
    from agentsim.plan.validation import load
    from agentsim.sim.simulation import simulate
    from agentsim.viz import plots

    def step(stage: str, done: int = 0, total: int | None = None) -> None:
        if progress is not None:
            progress(stage, done, total)

    path = Path(scenario_file)
    step("simulating")
    sc = load(path)
    res = simulate(sc, runs=runs, seed=seed, workers=workers)
    name = sc.name
    vt = variant_table(res)
    vot = res.value_of_time
    be = break_even(vt, value_of_time=vot)
    env = cheapest_intervals(vt)
    try:
        per_month = _rpm(sc, runs_per_month)
    except ValueError:
        per_month = None
    sizing = spend_sizing(vt, per_month, value_of_time=vot) if per_month else None
    step("critical paths")
    share = critical_share(res.calls, res.spans, res.runs)
    done = summarised(res.runs)
    common = set.intersection(*[set(done.loc[done["variant"] == v, "run"]) for v in res.variants])
    sample = int(min(common)) if common else 0
    figures: list[tuple[str, str, Callable]] = [
        (
            "Cost against wall time",
            "Each variant's mean cost per run against its mean (left) and p95 (right) wall "
            "time. The dashed line is the Pareto frontier; grey points are dominated (another variant is at least as "
            "fast and as cheap).",
            lambda: plots.tradeoff_figure(res.summary(), name),
        ),
        (
            "Distribution of wall time",
            "The fraction of runs finished by each time. The dotted line marks the p95.",
            lambda: plots.cdf_figure(res.runs, name),
        ),
        (
            "Where the time goes",
            "Mean time on the critical path per run, split into queueing, time to first token, "
            "decoding, tools and waits.",
            lambda: plots.breakdown_figure(res.runs, name),
        ),
        (
            "One sampled run",
            f"Run {sample} of every variant (the first that completed in all of them). Each parallel branch has a "
            "lane; the activities outlined are on the critical path, the faint ones are not (speeding them up "
            "gains nothing).",
            lambda: plots.timeline_figure(run_timeline(res.calls, res.spans, sample, res.plan), name),
        ),
        (
            "Total cost against the value of time",
            "API cost plus the value of the waiting time, per run. The lowest "
            "line is the cheapest variant overall at that value of time; circles mark where it changes.",
            lambda: plots.breakeven_figure(vt, vot, name),
        ),
    ]
    sweep_part = None
    if sweep and sc.sweeps:
        from agentsim.analysis.sweeps import run_sweep

        sw = run_sweep(path, runs=res.n_runs, seed=res.seed, workers=workers, progress=lambda d, t: step("sweep", d, t))
        sweep_part = _sweep_context(sw, name)
    html_figs = []
    for i, (title, caption, make) in enumerate(figures):
        step("figures", i, len(figures))
        html_figs.append(_figure(title, caption, make()))
    step("figures", len(figures), len(figures))
    return _page(path, sc, res, vt, be, env, sizing, share, html_figs, sweep_part)


def _s(x) -> str:
    """Seconds, in the unit that reads best, with a real minus sign."""
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "–"
    sign, ax = ("−" if x < 0 else ""), abs(x)
    if ax >= 3600:
        return f"{sign}{ax / 3600:,.2f} h"
    if ax >= 120:
        return f"{sign}{ax / 60:,.1f} min"
    return f"{sign}{ax:,.1f} s" if ax >= 10 else f"{sign}{ax:,.2f} s"


def _usd(x) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "–"
    if x == 0:
        return "$0"
    ax = abs(x)
    sign = "−" if x < 0 else ""
    if ax >= 100:
        return f"{sign}${ax:,.0f}"
    if ax >= 1:
        return f"{sign}${ax:,.2f}"
    return f"{sign}${ax:.4f}"


def _num(x) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "–"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.2f}"


def _pct(x) -> str:
    return "–" if x is None or not np.isfinite(x) else f"{100 * x:.1f}%"


def _yes(x) -> str:
    return "✓" if x is True or x is np.True_ else ""


def _b(x) -> Markup:
    """A table cell in bold (the text is escaped)."""
    return Markup("<b>{}</b>").format(x)


def _figure(title: str, caption: str, fig) -> dict:
    return {"title": title, "caption": caption, "uri": figure_data_uri(fig)}


def _sweep_context(sw, name: str) -> dict:
    from agentsim.viz import plots

    figures = [
        _figure(
            "Frontier over the sweep",
            "Every grid point and variant; the frontier is dashed and dominated configurations are grey.",
            plots.frontier_figure(sw.table, "mean", name),
        )
    ]
    for a in sw.axes:
        figures.append(
            _figure(
                f"Against {a.title}",
                "Mean wall time (band: 95% CI), p95 (dashed) and mean cost (band: 95% CI) per variant.",
                plots.sweep_figure(sw.table, a.text, a.label, name),
            )
        )
    t = sw.table
    shown = t if len(t) <= 300 else t[t["pareto_mean"] | t["pareto_p95"]]
    rows = [
        [
            r["point"],
            *[r[a.text] for a in sw.axes],
            r["variant"],
            _s(r["wall_mean_s"]),
            _s(r["wall_p95_s"]),
            _usd(r["cost_mean_usd"]),
            _yes(r["pareto_mean"]),
            _yes(r["pareto_p95"]),
        ]
        for _, r in shown.iterrows()
    ]
    header = [
        "point",
        *[a.text for a in sw.axes],
        "variant",
        "mean wall",
        "p95 wall",
        "mean cost",
        "frontier (mean)",
        "frontier (p95)",
    ]
    return {
        "points": len(sw.points),
        "variants": len(sw.variants),
        "runs": f"{sw.runs:,}",
        "seed": sw.seed,
        "axes": [{"text": a.text, "values": ", ".join(map(str, a.values))} for a in sw.axes],
        "figures": figures,
        "note": "" if shown is t else f"Only the {len(shown)} configurations on a frontier are listed (of {len(t)}).",
        "rows": rows,
        "header": header,
    }


_CSS = """
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;color:#1d1d1f;max-width:1100px;
margin:2em auto;padding:0 1.2em}
h1{font-size:1.6em;margin-bottom:.1em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.9em}
th,td{padding:.3em .7em;border-bottom:1px solid #e5e5e5}th{background:#f5f5f7;text-align:left}
table.num td:not(:first-child){text-align:right;font-variant-numeric:tabular-nums}
figure{margin:1.2em 0}figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.88em;color:#444;margin-top:.3em}
pre{background:#f7f7f7;padding:1em;overflow-x:auto;font-size:.82em}.meta td:first-child{color:#555}
.lead{font-size:1.05em;background:#f3f8fc;border-left:4px solid #3d7ea6;padding:.6em 1em}
code{background:#f2f2f2;padding:0 .25em}details{margin:1em 0}
"""


def _page(path, sc, res, vt, be, env, sizing, share, figs, sweep) -> str:
    """The page: the template ``templates/report.html`` filled in (values escaped unless marked as markup)."""
    import jinja2

    from agentsim.model.loading import source_of
    from agentsim.pricing.provenance import price_sources, speed_sources

    vot = res.value_of_time
    src = source_of(sc)
    prices = price_sources(sc, res.plan.prices_as_of)
    speeds = speed_sources(sc, Path(src).parent if src else None)
    meta = [
        ["scenario file", Markup("<code>{}</code>").format(path)],
        ["runs per variant", f"{res.n_runs:,}"],
        ["seed", str(res.seed)],
        ["engine", res.engine],
        ["agentsim version", version()],
        *[[f"prices: {name}", text] for name, text in prices.items()],
        *[[f"speeds: {name}", text] for name, text in speeds.items()],
        ["value of time", _usd(vot) + "/h" if vot is not None else "not given"],
    ]
    per_success = vt.attrs.get("basis") == "per success"
    variants = [
        [
            _b(name),
            _s(r["wall_mean_s"]),
            "–" if per_success else f"± {_s((r['wall_ci95_hi_s'] - r['wall_ci95_lo_s']) / 2)}",
            _s(r["wall_p50_s"]),
            _s(r["wall_p95_s"]),
            _s(r["wall_p99_s"]),
            _usd(r["cost_mean_usd"]),
            _usd(r["cost_p95_usd"]),
            f"{r['calls_mean']:,.1f}",
            _yes(r["pareto_mean"]),
            _yes(r["pareto_p95"]),
        ]
        for name, r in vt.iterrows()
    ]
    when = {"above": "above {v}", "below": "below {v}", "always": "always", "never": "never", "baseline": "baseline"}
    when["unknown"] = "– (no completed run)"
    break_even = [
        [
            _b(name),
            "baseline" if r["pays_off_when"] == "baseline" else _s(r["delta_time_s"]),
            "baseline" if r["pays_off_when"] == "baseline" else _usd(r["delta_cost_usd"]),
            payoff.premium_text(r["usd_per_hour_saved"], _usd, "/h"),
            when[r["pays_off_when"]].format(v=_usd(r["break_even_usd_per_hour"]) + "/h"),
            ("yes" if r.get("pays_off") else "no") if vot is not None and r["pays_off_when"] != "baseline" else "–",
        ]
        for name, r in be.iterrows()
    ]
    cheapest = [
        [
            _b(r["variant"]),
            _usd(r["from_usd_per_hour"]) + "/h",
            (_usd(r["to_usd_per_hour"]) + "/h") if np.isfinite(r["to_usd_per_hour"]) else "and above",
        ]
        for _, r in env.iterrows()
    ]
    spend = None
    if sizing is not None:
        net = "net_usd_per_month" in sizing.columns
        spend = {
            "runs_per_month": _num(float(sizing["runs_per_month"].iloc[0])),
            "rows": [
                [
                    _b(name),
                    _usd(r["api_usd_per_month"]),
                    f"{_usd(r['api_usd_per_month_lo'])} – {_usd(r['api_usd_per_month_hi'])}",
                    _num(r["wait_hours_per_month"]),
                    _num(r["hours_saved_per_month"]),
                    _usd(r["extra_usd_per_month"]),
                    _usd(r["premium_usd_per_saved_hour"]),
                    *([_usd(r["net_usd_per_month"])] if net else []),
                ]
                for name, r in sizing.iterrows()
            ],
            "header": [
                "variant",
                "API spend / month",
                "95% CI",
                "hours waiting",
                "hours saved",
                "extra spend",
                "premium per saved hour",
                *(["net at value of time"] if net else []),
            ],
        }
    critical = [
        [
            r["variant"],
            _b(r["step"]),
            r["kind"],
            _s(r["busy_s"]),
            _s(r["critical_s"]),
            _pct(r["share"]),
            _pct(r["on_path"]),
        ]
        for _, r in share.iterrows()
    ]
    files = _source_files(path)
    notes = [
        ln.strip().lstrip("#").strip() for _, text in files for ln in text.splitlines() if ln.strip().startswith("#")
    ]
    env_ = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    return env_.get_template("report.html").render(
        title=f"agentsim report: {sc.name}",
        css=Markup(_CSS),
        description=sc.description,
        verdict=_verdict(vt, be, env, vot),
        per_success=per_success,
        meta=meta,
        variants={"rows": variants, "header": VARIANT_HEADER},
        figures=figs,
        break_even={
            "rows": break_even,
            "header": [
                "variant",
                "Δ mean wall",
                "Δ mean cost",
                "USD per hour saved",
                "pays off when value of time is",
                f"pays off at {_usd(vot)}/h" if vot is not None else "pays off",
            ],
        },
        cheapest={"rows": cheapest, "header": ["variant", "from", "to"]},
        sizing=spend,
        critical={
            "rows": critical,
            "header": ["variant", "step", "kind", "busy", "on critical path", "share of wall", "runs on path"],
        },
        sweep=sweep,
        notes=[n for n in notes if n],
        files=[{"name": str(f), "text": text} for f, text in files],
        resolved=yaml.safe_dump(resolved_scenario(res), sort_keys=False, allow_unicode=True),
        version=version(),
        seed=res.seed,
        runs=f"{res.n_runs:,}",
        n_runs=res.n_runs,
        path=str(path),
    )


VARIANT_HEADER = [
    "variant",
    "mean wall",
    "95% CI",
    "p50",
    "p95",
    "p99",
    "mean cost",
    "p95 cost",
    "calls",
    "frontier (mean)",
    "frontier (p95)",
]


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


def _verdict(vt, be, env, vot) -> Markup:
    """One or two sentences a team lead can forward (names escaped, in bold)."""
    if vt["wall_mean_s"].isna().all():
        return Markup("No variant completed a run: every run failed (see the limits and failures below).")
    fastest = vt["wall_mean_s"].idxmin()
    cheapest = vt["cost_mean_usd"].idxmin()
    if vt.attrs.get("basis") == "per success":  # figures per successful task (tradeoffs.per_success)
        mean, unit = "to success", "per success"
    else:
        mean, unit = "mean", "per run"
    parts = [
        Markup("Fastest: <b>{}</b> ({} {}, {} {}). Cheapest: <b>{}</b> ({}, {} {}).").format(
            fastest,
            _s(vt.loc[fastest, "wall_mean_s"]),
            mean,
            _usd(vt.loc[fastest, "cost_mean_usd"]),
            unit,
            cheapest,
            _s(vt.loc[cheapest, "wall_mean_s"]),
            _usd(vt.loc[cheapest, "cost_mean_usd"]),
            unit,
        )
    ]
    if vot is not None:
        row = env[(env["from_usd_per_hour"] <= vot) & (vot < env["to_usd_per_hour"])]
        if len(row):
            best = row["variant"].iloc[0]
            parts.append(
                Markup("At your value of time ({}/h) the cheapest overall is <b>{}</b>.").format(_usd(vot), best)
            )
    for name, r in be.iterrows():
        if r["pays_off_when"] == "above":
            parts.append(
                Markup("{} pays off when an hour of waiting is worth at least {}.").format(
                    name, _usd(r["break_even_usd_per_hour"])
                )
            )
    return Markup(" ").join(parts)


def sweep_document(sw) -> dict:
    """A sweep as JSON-ready data: what was swept, with which seed and runs, and the table's rows."""
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
        "rows": rows,
    }


def write_sweep(sw, out_dir: str | os.PathLike) -> list[Path]:
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
        "sweep.csv": lambda p: sw.table.to_csv(p, index=False),
        "sweep.json": lambda p: p.write_text(
            json.dumps(sweep_document(sw), indent=2, allow_nan=False) + "\n", encoding="utf-8"
        ),
        "frontier-mean.png": fig_writer(lambda: plots.frontier_figure(sw.table, "mean", name)),
        "frontier-p95.png": fig_writer(lambda: plots.frontier_figure(sw.table, "p95", name)),
    }
    for i, a in enumerate(sw.axes):
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", a.text).strip("-")
        writers[f"sweep-{i + 1}-{slug}.png"] = fig_writer(
            lambda a=a: plots.sweep_figure(sw.table, a.text, a.label, name)
        )
    return write_folder(out_dir, writers)

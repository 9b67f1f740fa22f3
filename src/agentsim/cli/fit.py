"""``agentsim fit SESSIONS... -o my-agent.yaml``: a scenario fitted to recorded sessions, with a fit report.

Reads the sessions (every format ``agentsim replay`` reads), fits the scenario
(:mod:`agentsim.fit.agent_fit`), simulates it and compares it with the sessions, then writes, as one
set beside ``-o``: the scenario ``NAME.yaml``, the samples its empirical distributions read
``NAME.samples.csv``, one calibrated profile per model ``NAME.MODEL.profile.yaml`` and the report
``NAME.fit.json``. The table printed is the report's comparison. Nothing is sent anywhere, and no
prompt, code or tool output is read into any file.
"""

from __future__ import annotations

import glob
import sys
from pathlib import Path
from typing import Annotated

import typer

from agentsim.cli.common import BadInput, app, err_console, handle_errors

__all__ = ["fit_command"]


@app.command("fit")
@handle_errors
def fit_command(
    paths: Annotated[list[Path], typer.Argument(help="Session files or folders (any format replay reads).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="The scenario to write, e.g. my-agent.yaml.")],
    fmt: Annotated[str, typer.Option("--format", help="auto, or one format (see agentsim replay).")] = "auto",
    config: Annotated[
        Path | None, typer.Option(help="Replay config (YAML): prices of models not in the catalog.")
    ] = None,
    idle: Annotated[str, typer.Option(help="include or exclude the human's idle time (wait steps).")] = "include",
    holdout: Annotated[
        float, typer.Option(help="Share of sessions held back from the fit and compared with (0: compare with all).")
    ] = 0.0,
    runs: Annotated[int, typer.Option(min=1, help="runs: of the written scenario.")] = 2000,
    sim_runs: Annotated[
        int | None,
        typer.Option("--sim-runs", min=1, help="Runs simulated for the report (default: 2000 or 4 per session)."),
    ] = None,
    project: Annotated[str | None, typer.Option(help="Only sessions whose project name contains this.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print the fit report as JSON.")] = False,
) -> None:
    """Fit a scenario to recorded agent sessions (steps, tokens, tools, subagents, idle time, speeds)."""
    from agentsim.fit.agent_fit import FitError, fit_agent
    from agentsim.replay.config import ReplayConfig, load_replay_config
    from agentsim.traces.session_files import FORMATS, SessionInputError, read_sessions, read_warnings, select_sessions
    from agentsim.viz.outdir import check_file
    from agentsim.viz.report import write_files

    if fmt not in FORMATS:
        raise BadInput(f"--format '{fmt}' is not one of {', '.join(FORMATS)}")
    if out.suffix not in (".yaml", ".yml"):
        raise BadInput(f"--out {out}: give the scenario file to write, ending in .yaml (e.g. my-agent.yaml)")
    check_file(out, "--out", "my-agent.yaml")
    cfg = load_replay_config(config) if config is not None else ReplayConfig()
    try:
        sessions, reports = read_sessions([(p, fmt) for p in paths])
    except SessionInputError as exc:
        raise BadInput(str(exc)) from None
    for line in read_warnings(reports):
        err_console.print(f"warning: {line}", markup=False)
    inputs = _check_set(out, paths, reports, cfg)
    chosen = select_sessions(sessions, project=project)
    if not chosen:
        raise BadInput(f"none of the {len(sessions)} sessions found matches --project {project}")
    try:
        result = fit_agent(
            chosen, name=out.stem, stem=out.stem, config=cfg, idle=idle, holdout=holdout, runs=runs, sim_runs=sim_runs
        )
    except (FitError, ValueError) as exc:
        raise BadInput(str(exc)) from None
    written = write_files(out.parent if str(out.parent) else Path("."), result.writers(), inputs=inputs)
    if json_out:
        import json

        sys.stdout.write(json.dumps(result.report, indent=2) + "\n")
    else:
        _print_report(result.report)
    for note in result.notes:
        err_console.print(f"note: {note}", markup=False)
    err_console.print(f"wrote {', '.join(p.name for p in written)} to {out.parent}/", markup=False)


def _check_set(out: Path, paths: list[Path], reports, cfg) -> tuple[Path, ...]:
    """The files the fit read (sessions, the config and its profiles); before the fit, no file of the set it
    writes beside ``out`` may be one of them. Returns them, for the write's own check."""
    from agentsim.cli.replay import replay_inputs
    from agentsim.viz.outdir import check_file

    inputs = replay_inputs(paths, reports, cfg)
    folder = out.parent if str(out.parent) else Path(".")
    for name in (out.name, f"{out.stem}.fit.json", f"{out.stem}.samples.csv", *_profiles_there(folder, out.stem)):
        check_file(folder / name, "--out", "my-agent.yaml", inputs=inputs)
    return inputs


def _profiles_there(folder: Path, stem: str) -> list[str]:
    """The names of the set's profiles (``STEM.MODEL.profile.yaml``) that exist in ``folder`` already."""
    return sorted(p.name for p in folder.glob(f"{glob.escape(stem)}.*.profile.yaml"))


def _fmt(x) -> str:
    if x is None:
        return "–"
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


def _print_report(report: dict) -> None:
    from rich.table import Table

    from agentsim.cli.tables import print_table

    s = report["sessions"]
    t = Table(
        title=f"fit of {s['fitted']} sessions, compared with {s['compared_with']} ({s['compared']}); "
        f"{report['simulated_runs']:,} simulated runs",
        title_justify="left",
    )
    cols = ("quantity", "rec mean", "sim mean", "rec p50", "sim p50", "rec p90", "sim p90", "KS", "q-err", "verdict")
    for col in cols:
        t.add_column(col, justify="left" if col in ("quantity", "verdict") else "right", no_wrap=True)
    for name, q in report["quantities"].items():
        r, m = q["recorded"], q["simulated"]
        if not r.get("n"):
            continue
        t.add_row(
            f"{name} ({q['unit']})",
            _fmt(r.get("mean")),
            _fmt(m.get("mean")),
            _fmt(r.get("p50")),
            _fmt(m.get("p50")),
            _fmt(r.get("p90")),
            _fmt(m.get("p90")),
            _fmt(q.get("ks")),
            _fmt(q.get("quantile_error")),
            _verdict(q.get("verdict"), report.get("bound")),
        )
    print_table(t)
    f = Table(title="one number per population", title_justify="left")
    for col in ("figure", "recorded", "simulated", "verdict"):
        f.add_column(col, justify="right" if col in ("recorded", "simulated") else "left", no_wrap=True)
    for name, fig in report["figures"].items():
        if isinstance(fig["recorded"], dict):
            for model in sorted(set(fig["recorded"]) | set(fig["simulated"])):
                f.add_row(f"{name}: {model}", _pct(fig["recorded"].get(model)), _pct(fig["simulated"].get(model)))
        else:
            f.add_row(
                name, _fmt(fig["recorded"]), _fmt(fig["simulated"]), _verdict(fig.get("verdict"), report.get("bound"))
            )
    print_table(f)


def _verdict(v: str | None, bound: float | None) -> str:
    """``within 10%`` or ``OUTSIDE 10%`` (of the recorded mean and p90; a figure: its value)."""
    if v is None or bound is None:
        return "–"
    return f"within {bound:.0%}" if v == "within" else f"OUTSIDE {bound:.0%}"


def _pct(x) -> str:
    return "–" if x is None else f"{x:.1%}"

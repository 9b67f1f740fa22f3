"""``agentsim replay``: recorded Claude Code, Codex CLI and OpenTelemetry sessions under other speeds and prices.

Reads the sessions, replays them under each ``--variant`` (see :mod:`agentsim.replay.retime`)
and prints, per variant and in total, recorded vs predicted wall time and cost,
the time spent waiting on the model, on tools and on the human, and the premium
paid per hour saved. ``--out DIR`` writes the per-session and per-call tables
(Parquet and CSV), ``replay.json`` and figures. Nothing is sent anywhere, and no
prompt, code or tool output is ever printed or written.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentsim.cli.common import BadInput, app, err_console, handle_errors
from agentsim.cli.common import fmt_s as _fmt_s
from agentsim.cli.common import fmt_usd as _fmt_usd
from agentsim.cli.common import signed as _signed

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["replay_command", "replay_table"]


def _date(value: str | None, option: str) -> dt.date | None:
    if value is None:
        return None
    text = value.strip()
    try:
        if len(text) == 8 and text.isdigit():
            return dt.date(int(text[:4]), int(text[4:6]), int(text[6:]))
        return dt.date.fromisoformat(text)
    except ValueError:
        raise BadInput(f"{option} '{value}' is not a date (write YYYY-MM-DD, e.g. 2026-11-01)") from None


def _fmt_h(x: float | None) -> str:
    return "–" if x is None else _fmt_s(x)


def replay_table(doc: dict) -> Table:
    """One column per variant (recorded first), one row per figure."""
    from rich.table import Table

    from agentsim.sim import payoff

    rec = doc["recorded"]
    cols = {"recorded": rec, **doc["variants"]}
    srcs = ", ".join(f"{n} {k}" for k, n in doc["sources"].items())
    t = Table(
        title=f"Replay of {doc['sessions']:,} sessions ({srcs}), {rec['calls']:,} API calls, "
        f"{doc['first_session_start'][:10]} to {doc['last_session_start'][:10]}",
        title_justify="left",
    )
    t.add_column("", style="bold", no_wrap=True)
    for name in cols:
        t.add_column(name, justify="right", no_wrap=True, min_width=min(len(name), 24))

    def row(label, fn):
        t.add_row(label, *[fn(v) for v in cols.values()])

    def delta(key, fmt):
        return lambda v: _signed(fmt, v["vs_recorded"][key]) if "vs_recorded" in v else "–"

    row("wall time (total)", lambda v: _fmt_s(v["wall_time_s"]))
    row("  Δ vs recorded", delta("delta_time_s", _fmt_s))
    row("  waiting on the model", lambda v: _fmt_s(v["time_s"]["model"]))
    row("    time to first token", lambda v: _fmt_s(v["time_s"]["ttft"]))
    row("    decode", lambda v: _fmt_s(v["time_s"]["decode"]))
    row("  waiting on tools", lambda v: _fmt_s(v["time_s"]["tool"]))
    row("  waiting on the human", lambda v: _fmt_s(v["time_s"]["human"]))
    row("  other (overhead, lags)", lambda v: _fmt_s(v["time_s"]["other"]))
    row("cost (total)", lambda v: _fmt_usd(v["cost_usd"]))
    row("  Δ vs recorded", delta("delta_cost_usd", _fmt_usd))
    if any(v["unpriced_calls"] for v in cols.values()):
        row("  unpriced calls", lambda v: f"{v['unpriced_calls']:,}")
    row(
        "premium per hour saved",
        lambda v: payoff.premium_text(v.get("vs_recorded", {}).get("usd_per_hour_saved"), _fmt_usd, "/h"),
    )
    vot = doc.get("value_of_time_usd_per_hour")
    if vot is not None:
        row(
            f"pays off at ${vot:,.0f}/h",
            lambda v: {True: "yes", False: "no", None: "–"}[v.get("vs_recorded", {}).get("pays_off")],
        )
    return t


def _speed_profiles(values: list[str], config) -> None:
    from agentsim.replay.config import ReplayModelSpec

    for value in values:
        model, sep, ref = value.partition("=")
        if not sep:
            model, ref = "*", value
        model, ref = model.strip(), ref.strip()
        if not model or not ref:
            raise BadInput(f"--speed-profile '{value}': write MODEL=PROFILE (a bundled name or a file) or PROFILE")
        if "/" in ref or "\\" in ref or ref.endswith((".yaml", ".yml", ".json")):
            ref = str(Path(ref).resolve())  # a file: relative to where the command runs
        old = config.models.get(model)
        config.models[model] = old.model_copy(update={"profile": ref}) if old else ReplayModelSpec(profile=ref)
        config._from_option.add(model)


@app.command("replay")
@handle_errors
def replay_command(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="Session files or folders (default: ~/.claude/projects and ~/.codex/sessions, those present).",
            show_default=False,
        ),
    ] = None,
    fmt: Annotated[
        str, typer.Option("--format", help="auto, claude-code, codex, otel, langfuse, langsmith or openai-agents.")
    ] = "auto",
    variant: Annotated[
        list[str] | None,
        typer.Option(
            "--variant",
            "-v",
            help="fast, standard, identity, speed=TIER, model=PROVIDER/MODEL (comma to combine), or a "
            "variant named in --config. Repeat to compare several (default: fast).",
        ),
    ] = None,
    config: Annotated[
        Path | None, typer.Option(help="Replay config (YAML): models, prices, profiles, variants.")
    ] = None,
    speed_profile: Annotated[
        list[str] | None,
        typer.Option(
            "--speed-profile",
            help="MODEL=PROFILE or PROFILE (every model): a bundled profile or a profile file, "
            "e.g. one written by calibration.",
        ),
    ] = None,
    split: Annotated[str | None, typer.Option(help="ttft-first (default) or proportional.")] = None,
    prices_as_of: Annotated[
        str | None, typer.Option(help="Price every call as of this date (default: its own).")
    ] = None,
    value_of_time: Annotated[float | None, typer.Option(min=0, help="USD per hour of waiting, for 'pays off'.")] = None,
    since: Annotated[str | None, typer.Option(help="Only sessions started on or after this date (UTC).")] = None,
    until: Annotated[str | None, typer.Option(help="Only sessions started on or before this date (UTC).")] = None,
    project: Annotated[str | None, typer.Option(help="Only sessions whose project name contains this.")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print only the replay.json document.")] = False,
    out: Annotated[Path | None, typer.Option(help="Write tables (Parquet, CSV), replay.json and figures here.")] = None,
) -> None:
    """Replay recorded agent sessions under other speeds and prices."""
    from agentsim.replay.retime import replay
    from agentsim.traces.session_files import FORMATS, select_sessions

    if fmt not in FORMATS:
        raise BadInput(f"--format '{fmt}' is not one of {', '.join(FORMATS)}")
    if out is not None:
        from agentsim.viz.outdir import check_folder

        check_folder(out)
    if split is not None and split not in ("ttft-first", "proportional"):
        raise BadInput(f"--split '{split}' is not ttft-first or proportional")
    since_d, until_d = _date(since, "--since"), _date(until, "--until")
    if since_d and until_d and since_d > until_d:
        raise BadInput(f"--since {since_d} is after --until {until_d}")
    cfg = _replay_config(config, speed_profile, split, prices_as_of)
    variants = _variants(variant, cfg)
    sessions, reports = _read_sessions(paths, fmt)
    chosen = select_sessions(sessions, since_d, until_d, project)
    if not chosen:
        raise BadInput(f"none of the {len(sessions)} sessions found matches --since/--until/--project")
    try:
        res = replay(chosen, variants, cfg, reports, value_of_time)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    if json_out:
        sys.stdout.write(res.to_json())
    else:
        _print_replay(res)
    if out is not None:
        written = write_replay(res, out)
        if not json_out:
            err_console.print(f"wrote {len(written)} files to {out}/", markup=False)


def _replay_config(config: Path | None, speed_profile: list[str] | None, split: str | None, prices_as_of: str | None):
    """The replay config: the file's (or the defaults), with the options' profiles, split and price date."""
    from agentsim.replay.config import ReplayConfig, load_replay_config

    cfg = load_replay_config(config) if config is not None else ReplayConfig()
    _speed_profiles(speed_profile or [], cfg)
    if split is not None:  # the config is frozen: a copy with the option (private attributes kept)
        cfg = cfg.model_copy(update={"split": split})
    if prices_as_of is not None:
        cfg = cfg.model_copy(update={"prices_as_of": _date(prices_as_of, "--prices-as-of")})
    return cfg


def _variants(texts: list[str] | None, cfg) -> dict:
    """``--variant`` texts (default: the config's variants, else fast) as name -> spec, each name once."""
    from agentsim.replay.config import parse_variant

    variants = {}
    for text in texts or (list(cfg.variants) if cfg.variants else ["fast"]):
        try:
            name, spec = parse_variant(text, cfg)
        except ValueError as exc:
            raise BadInput(f"--variant: {exc}") from None
        if name in variants:
            raise BadInput(f"--variant '{name}' is given twice")
        variants[name] = spec
    return variants


def _read_sessions(paths: list[Path] | None, fmt: str):
    """The sessions under the paths (default: the agents' own folders), with a warning per damaged file."""
    from agentsim.traces.session_files import SessionInputError, default_paths, read_sessions

    if paths:
        where = [(p, fmt) for p in paths]
    else:
        where = [(p, fmt if fmt != "auto" else f) for p, f in default_paths()]
        if not where:
            raise BadInput(
                "no PATH given and neither ~/.claude/projects nor ~/.codex/sessions exists: "
                "give session files or folders, e.g. `agentsim replay ./sessions`"
            )
    try:
        sessions, reports = read_sessions(where)
    except SessionInputError as exc:
        raise BadInput(str(exc)) from None
    for rep in reports:
        if rep.corrupt:
            lines = rep.corrupt_text()
            err_console.print(
                f"warning: {rep.path}: skipped {rep.corrupt} corrupt lines" + (f" ({lines})" if lines else ""),
                markup=False,
            )
        if rep.duplicates:
            err_console.print(
                f"warning: {rep.path}: {rep.duplicates} records were already read from another file "
                "(a copy, or a path given twice) and are counted once",
                markup=False,
            )
    return sessions, reports


def _print_replay(res) -> None:
    from rich.console import Console

    doc = res.summary_dict()
    console = Console(markup=False, emoji=False, soft_wrap=False)
    if not console.is_terminal:  # piped or captured: wide enough for every column
        width = max(100, 34 + sum(max(len(n), 10) + 3 for n in res.names))
        console = Console(markup=False, emoji=False, soft_wrap=False, width=width)
    console.print(replay_table(doc))
    for note in doc["notes"]:
        err_console.print(f"note: {note}", markup=False)


def write_replay(res, out_dir: Path) -> list[Path]:
    """Write ``replay.json``, ``sessions``/``calls``/``spans`` tables (Parquet and CSV) and two figures."""
    from agentsim.viz import figure_methods  # noqa: F401  (gives the result its plot_* methods)
    from agentsim.viz.outdir import write_folder

    def fig_writer(make):
        def write(path: Path):
            make().savefig(path, dpi=120)

        return write

    tables = {"sessions": res.session_table, "calls": res.calls, "spans": res.spans}
    writers = {"replay.json": lambda p: p.write_text(res.to_json(), encoding="utf-8")}
    for name, frame in tables.items():
        writers[f"{name}.parquet"] = lambda p, f=frame: f.to_parquet(p, index=False)
        writers[f"{name}.csv"] = lambda p, f=frame: f.to_csv(p, index=False)
    writers["tradeoff.png"] = fig_writer(res.plot_tradeoff)
    writers["breakdown.png"] = fig_writer(res.plot_breakdown)
    return write_folder(out_dir, writers)

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


def _title(doc: dict, srcs: str) -> str:
    rec = doc["recorded"]
    text = f"Replay of {doc['sessions']:,} sessions ({srcs}), {rec['turns']:,} turns, {rec['calls']:,} API calls"
    first, last = doc.get("first_session_start"), doc.get("last_session_start")
    if first is not None:
        text += f", {first[:10]} to {last[:10]}"
    if doc.get("undated_sessions"):
        text += f" ({doc['undated_sessions']:,} undated)"
    return text


def replay_table(doc: dict) -> Table:
    """One column per variant (recorded first), one row per figure."""
    from rich.table import Table

    from agentsim.sim import payoff

    rec = doc["recorded"]
    cols = {"recorded": rec, **doc["variants"]}
    srcs = ", ".join(f"{n} {k}" for k, n in doc["sources"].items())
    t = Table(title=_title(doc, srcs), title_justify="left")
    t.add_column("", style="bold", no_wrap=True)
    for name in cols:
        t.add_column(name, justify="right", no_wrap=True, min_width=min(len(name), 24))

    base = doc.get("baseline", "recorded")

    def row(label, fn):
        t.add_row(label, *[fn(v) for v in cols.values()])

    def saving(fn):  # a figure measured against the baseline: none for the recording and the baseline itself
        return lambda v: fn(v) if "vs_recorded" in v and v is not cols.get(base) else "–"

    def delta(key, fmt):
        return lambda v: _signed(fmt, v["vs_recorded"][key]) if "vs_recorded" in v else "–"

    row("waiting (message to answer, total)", lambda v: _fmt_s(v["waiting_s"]))
    row(f"  Δ vs {base}", saving(lambda v: _signed(_fmt_s, -v["waiting_saved_s"])))
    row("  share of waiting saved", saving(_share))
    row(f"  Δ vs {base} per session (mean)", saving(lambda v: _per_session(v, "waiting_saved_s")))
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
    if base != "recorded":
        row(f"  Δ vs {base}", saving(lambda v: _signed(_fmt_usd, v["extra_cost_usd"])))
    row(f"  Δ vs {base} per session (mean)", saving(lambda v: _per_session(v, "extra_cost_usd", _fmt_usd)))
    row(
        "USD per hour of waiting saved",
        saving(lambda v: payoff.premium_text(v["usd_per_hour_waiting_saved"], _fmt_usd, "/h")),
    )
    vot = doc.get("value_of_time_usd_per_hour")
    if vot is not None:
        row(
            f"pays off at ${vot:,.0f}/h of waiting",
            saving(lambda v: {True: "yes", False: "no", None: "–"}[v["vs_recorded"]["pays_off"]]),
        )
    return t


def _share(v: dict) -> str:
    share = v.get("waiting_saved_share")
    if share is None or share["value"] is None:
        return "–"
    lo, hi = share["ci95"]
    text = f"{share['value']:.1%}"
    return text + (f" ({lo:.1%} to {hi:.1%})" if lo is not None else "")


def _per_session(v: dict, key: str, fmt=_fmt_s) -> str:
    m = v["per_session"][key]
    sign = -1 if key.endswith("saved_s") else 1
    return _signed(fmt, sign * m["mean"])


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


PathsArg = Annotated[
    list[Path] | None,
    typer.Argument(
        help="Session files or folders (default: ~/.claude/projects and ~/.codex/sessions, those present).",
        show_default=False,
    ),
]
FormatOpt = Annotated[
    str,
    typer.Option(
        "--format", help="auto, claude-code, codex, otel, langfuse, langsmith, openai-agents or kv-cache-tester."
    ),
]
VariantOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--variant",
        "-v",
        help="fast, standard, identity, speed=TIER, model=PROVIDER/MODEL (comma to combine), or a "
        "variant named in --config. Repeat to compare several (default: fast).",
    ),
]
ConfigOpt = Annotated[Path | None, typer.Option(help="Replay config (YAML): models, prices, profiles, variants.")]
SpeedProfileOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--speed-profile",
        help="MODEL=PROFILE or PROFILE (every model): a bundled profile or a profile file, "
        "e.g. one written by calibration.",
    ),
]
SplitOpt = Annotated[str | None, typer.Option(help="ttft-first (default) or proportional.")]
PricesAsOfOpt = Annotated[str | None, typer.Option(help="Price every call as of this date (default: its own).")]
ValueOfTimeOpt = Annotated[float | None, typer.Option(min=0, help="USD per hour of waiting, for 'pays off'.")]
BaselineOpt = Annotated[
    str | None,
    typer.Option(
        help="Measure savings against this variant (default: the recording), e.g. today's model at "
        "standard speed against the same model in fast mode."
    ),
]
SinceOpt = Annotated[str | None, typer.Option(help="Only sessions started on or after this date (UTC).")]
UntilOpt = Annotated[str | None, typer.Option(help="Only sessions started on or before this date (UTC).")]
ProjectOpt = Annotated[str | None, typer.Option(help="Only sessions whose project name contains this.")]
ExcludeEstimatedOpt = Annotated[
    bool,
    typer.Option(
        "--exclude-estimated",
        help="Leave out sessions with a call whose duration was not recorded but estimated "
        "(kv-cache-tester's untimed streaming requests).",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print only the replay.json document.")]
OutOpt = Annotated[Path | None, typer.Option(help="Write tables (Parquet, CSV), replay.json and figures here.")]


@app.command("replay")
@handle_errors
def replay_command(
    paths: PathsArg = None,
    fmt: FormatOpt = "auto",
    variant: VariantOpt = None,
    config: ConfigOpt = None,
    speed_profile: SpeedProfileOpt = None,
    split: SplitOpt = None,
    prices_as_of: PricesAsOfOpt = None,
    value_of_time: ValueOfTimeOpt = None,
    baseline: BaselineOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    project: ProjectOpt = None,
    exclude_estimated: ExcludeEstimatedOpt = False,
    json_out: JsonOpt = False,
    out: OutOpt = None,
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
    inputs = replay_inputs(paths, reports, cfg)
    if out is not None:
        from agentsim.viz.outdir import check_folder

        check_folder(out, inputs=inputs)  # not a folder that holds a session or a config read
    chosen = select_sessions(sessions, since_d, until_d, project, exclude_estimated)
    if not chosen:
        raise BadInput(
            f"none of the {len(sessions)} sessions found matches --since/--until/--project/--exclude-estimated"
        )
    try:
        res = replay(chosen, variants, cfg, reports, value_of_time, baseline)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
    if json_out:
        sys.stdout.write(res.to_json())
    else:
        _print_replay(res)
    if out is not None:
        written = write_replay(res, out, inputs)
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


def replay_inputs(paths: list[Path] | None, reports, cfg) -> tuple[Path, ...]:
    """The files a replay or a fit read: every session file a reader read, every file named, and the config's
    files (:func:`agentsim.replay.config.config_files`)."""
    from agentsim.replay.config import config_files

    named = [p for p in paths or () if p.is_file()]
    read = [Path(r.path) for r in reports if r.format != "unknown" and Path(r.path).is_file()]
    return tuple(dict.fromkeys([*named, *read, *config_files(cfg)]))


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
        if rep.repeated:
            err_console.print(
                f"warning: {rep.path}: {rep.repeated} records repeat one earlier in the same file and are counted once",
                markup=False,
            )
    return sessions, reports


def _print_replay(res) -> None:
    from agentsim.cli.consoles import VisibleConsole as Console

    doc = res.summary_dict()
    console = Console(markup=False, emoji=False, soft_wrap=False)
    if not console.is_terminal:  # piped or captured: wide enough for every column
        width = max(100, 34 + sum(max(len(n), 10) + 3 for n in res.names))
        console = Console(markup=False, emoji=False, soft_wrap=False, width=width)
    console.print(replay_table(doc))
    for note in doc["notes"]:
        err_console.print(f"note: {note}", markup=False)


def write_replay(res, out_dir: Path, inputs=()) -> list[Path]:
    """Write ``replay.json``, ``sessions``/``calls``/``spans`` tables (Parquet and CSV) and two figures into a
    result folder that holds none of ``inputs``."""
    from agentsim.model.safe_text import csv_frame
    from agentsim.viz import figures
    from agentsim.viz.outdir import write_folder

    def fig_writer(make):
        def write(path: Path):
            make().savefig(path, dpi=120)

        return write

    tables = {"sessions": res.session_table, "calls": res.calls, "spans": res.spans}
    writers = {"replay.json": lambda p: p.write_text(res.to_json(), encoding="utf-8")}
    for name, frame in tables.items():
        writers[f"{name}.parquet"] = lambda p, f=frame: f.to_parquet(p, index=False)
        writers[f"{name}.csv"] = lambda p, f=frame: csv_frame(f).to_csv(p, index=False)  # safe in a spreadsheet
    writers["tradeoff.png"] = fig_writer(lambda: figures.plot_tradeoff(res))
    writers["breakdown.png"] = fig_writer(lambda: figures.plot_breakdown(res))
    return write_folder(out_dir, writers, inputs=inputs)

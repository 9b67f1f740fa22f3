"""``agentsim calibrate`` and ``agentsim measure``: measured speed profiles from the command line.

``calibrate`` reads per-request measurements (benchmark tools, OTLP GenAI spans,
a CSV, or ``measure`` output) and writes a ``kind: calibrated`` profile file
that a scenario model can use with ``profile: ./that.yaml``. ``measure`` streams
real requests to an endpoint and writes what it saw as JSON Lines.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agentsim.cli.common import BadInput, DurationOpt, app, as_console, err_console, handle_errors, parse_duration

if TYPE_CHECKING:
    from rich.table import Table

DEFAULT_INPUT_TOKENS = "500-8000"  # spread enough (coefficient of variation ~0.55) to fit a prefill speed
FORMAT_CHOICES = "auto, llmperf, vllm, guidellm, aiperf, otel, csv or measure"


def _fmt(x: float | None, unit: str = "") -> str:
    if x is None:
        return "–"
    return f"{x:,.3g}{unit}" if abs(x) < 1000 else f"{x:,.0f}{unit}"


def _fit_table(doc: dict) -> Table:
    from rich.table import Table

    fit = doc["fit"]
    t = Table(title=f"{doc['profile']}: {doc['description']}", title_justify="left")
    t.add_column("", style="bold", no_wrap=True)
    t.add_column("", no_wrap=True)
    for col in ("p50", "p90", "p95", "KS"):
        t.add_column(col, justify="right")
    for label, key in (("TTFT (s)", "ttft"), ("output tokens/s", "output_tps")):
        g = fit[key]
        t.add_row(label, "measured", *[_fmt(g["measured"][p]) for p in ("p50", "p90", "p95")], "")
        t.add_row("", "fitted", *[_fmt(g["fitted"][p]) for p in ("p50", "p90", "p95")], f"{g['ks']:.3f}")
    return t


def relative_to_profile(path: str | os.PathLike, profile: Path) -> str:
    """``path`` as written into a profile: relative to the profile's folder (POSIX slashes), so a
    committed profile names no absolute path of the machine it was made on."""
    try:
        rel = os.path.relpath(Path(path).resolve(), profile.resolve().parent)
    except ValueError:  # another drive (Windows): the file name alone
        return Path(path).name
    return Path(rel).as_posix()


def _date_for(
    found_dates: list[tuple[dt.date | None, str | None, Path]], given: str | None, shown=str
) -> tuple[dt.date, str]:
    if given is not None:
        try:
            return dt.date.fromisoformat(given), "given with --date"
        except ValueError:
            raise BadInput(f"--date {given!r} is not a date: write it as YYYY-MM-DD") from None
    dates = [(d, note, p) for d, note, p in found_dates if d is not None]
    if dates:
        d, note, p = min(dates, key=lambda t: t[0])
        return d, f"{note} in {shown(p)}"
    p = found_dates[0][2]
    mtime = dt.datetime.fromtimestamp(p.stat().st_mtime, tz=dt.UTC).date()
    return mtime, f"modification time of {shown(p)} (the file records no dates; pass --date to set it)"


@app.command()
@handle_errors
def calibrate(
    files: Annotated[list[Path], typer.Argument(help="Measurement files.", show_default=False)],
    out: Annotated[Path, typer.Option("-o", "--out", help="Profile file to write (YAML).", show_default=False)],
    fmt: Annotated[str, typer.Option("--format", help=f"Input format: {FORMAT_CHOICES}.")] = "auto",
    model: Annotated[str | None, typer.Option(help="Use only this model's requests (and name the profile).")] = None,
    name: Annotated[str | None, typer.Option(help="Profile name (default: the model, or the file name).")] = None,
    date: Annotated[str | None, typer.Option(help="Measurement date YYYY-MM-DD (default: from the data).")] = None,
    plot: Annotated[Path | None, typer.Option(help="Write the diagnostic figure (PNG) here.")] = None,
    window: Annotated[
        str,
        typer.Option(help="Send-time windows for provider conditions: seconds, or 90s, 10m, 1h (see docs/measure.md)."),
    ] = "10m",
) -> None:
    """Fit TTFT, prefill speed and output speed to measured requests; write a profile."""
    from agentsim.measure.calibrate import CalibrationError, write_profile
    from agentsim.measure.calibrate import calibrate as fit
    from agentsim.traces.measurement_files import FORMATS
    from agentsim.viz.outdir import check_file, is_stdout, shown

    for target, option, example in ((out, "-o", "profile.yaml"), (plot, "--plot", "calibration.png")):
        if target is not None:  # both targets checked before anything is read or written: not an input
            check_file(target, option, example, inputs=files)
    if plot is not None and not is_stdout(out) and os.path.realpath(plot) == os.path.realpath(out):
        raise BadInput(f"--plot {plot} is the profile's file too (-o); give the figure a name of its own")
    if fmt != "auto" and fmt not in FORMATS:
        raise BadInput(f"--format {fmt!r} is not a known format: use {FORMAT_CHOICES}")
    window_s = _window_seconds(window)
    table, found = _read_measurements(files, fmt)
    try:
        cal = fit(table, model=model, window_s=window_s)
    except CalibrationError as exc:
        raise BadInput(f"{', '.join(map(str, files))}: {exc}") from None
    doc = _profile_for(cal, found, files, out, name, date)
    png = _calibration_png(table, model, cal, doc["profile"]) if plot is not None else None  # before any write
    write_profile(out, doc, inputs=files)
    if plot is not None:
        from agentsim.viz.outdir import write_file

        write_file(plot, lambda p: p.write_bytes(png), "--plot", inputs=files)
    from agentsim.cli.consoles import VisibleConsole as Console

    # the table on stdout, unless the profile itself went there
    console = Console(markup=False, emoji=False, soft_wrap=False, stderr=is_stdout(out))
    console.print(_fit_table(doc))
    wrote = f"wrote {shown(out)}" + (f" and {plot}" if plot is not None else "")
    err_console.print("\n".join([*_fit_lines(cal), wrote, *[f"warning: {w}" for w in cal.notes]]), markup=False)


def _read_measurements(files: list[Path], fmt: str):
    """The common measurement table of all the files, and what each file's importer found."""
    import pandas as pd

    from agentsim.traces.measurement_files import read_file

    tables, found = [], []
    for f in files:
        df, rows = read_file(f, fmt)
        tables.append(df)
        found.append(rows)
    return pd.concat(tables, ignore_index=True), found


def _profile_for(cal, found, files: list[Path], out: Path, name: str | None, date: str | None) -> dict:
    """The profile document to write, checked to load (it names its input files relative to itself)."""
    from agentsim.measure.calibrate import profile_document
    from agentsim.model.profiles import Profile
    from agentsim.viz.outdir import is_stdout

    when, date_source = _date_for(
        [(r.date, r.date_note, Path(r.file)) for r in found], date, lambda p: relative_to_profile(p, out)
    )
    doc = profile_document(
        cal,
        name=name or cal.model or ("calibrated" if is_stdout(out) else out.stem),
        sources=[relative_to_profile(f, out) for f in files],
        formats=[r.source_format for r in found],
        date=when,
        date_source=date_source,
        notes=tuple(dict.fromkeys(n for r in found for n in r.notes)),
    )
    Profile.model_validate(doc)  # what we write must load
    return doc


def _calibration_png(table, model: str | None, cal, title: str) -> bytes:
    import io

    from agentsim.measure.calibrate import select_model
    from agentsim.viz.plots_calibrate import calibration_figure

    buf = io.BytesIO()
    calibration_figure(select_model(table, model), cal, title=title).savefig(buf, dpi=110, format="png")
    return buf.getvalue()


def _fit_lines(cal) -> list[str]:
    """What calibrate says under the table: counts, the fitted TTFT, prefill, output speed, stream, conditions."""
    c = cal.counts
    lines = [
        f"requests: {c['requests']} read, {c['usable']} used, {c['failed']} failed, {c['incomplete']} incomplete",
        (
            f"TTFT base: lognormal median {cal.ttft.median_s:.3g} s, p90 {cal.ttft.p90_s:.3g} s"
            if cal.ttft.sigma > 0
            else f"TTFT base: constant {cal.ttft.median_s:.3g} s (the same in every measured request)"
        ),
        (
            "prefill: "
            + (f"{cal.ttft.prefill_tps:,.0f} uncached input tokens/s" if cal.ttft.prefill_tps else "left out")
            + f" ({cal.ttft.prefill_note})"
        ),
        f"output tokens/s: {cal.tps.family} "
        + (
            ", ".join(f"{k} {v:g}" for k, v in cal.tps.spec()[cal.tps.family].items())
            if cal.tps.family != "constant"
            else f"{cal.tps.spec():g} (every measured request decoded at the same speed)"
        ),
        _stream_line(cal.stream),
    ]
    if cal.conditions is not None:
        lines.append(cal.conditions.note)
    if cal.context is not None and cal.context.bins:  # the requests span context sizes: say what was found
        block = cal.context.block
        curve = (
            ", ".join(f"{k} {block[k]}" for k in ("output_tps_x", "ttft_x") if k in block) + f" at {block['tokens']}"
            if block
            else "no context_speed written"
        )
        lines.append(f"speed by context size: {curve} ({cal.context.note})")
    return lines


def _window_seconds(text: str) -> float:
    """``--window``: seconds as a number, or a number with a unit (90s, 10m, 1h)."""
    return parse_duration(text, "--window")


def _stream_line(fit) -> str:
    """What calibrate says of the stream description: what it wrote, or why it wrote none."""
    if fit.stream is None:
        return "stream: " + fit.note
    st, rep = fit.stream, fit.report
    ci = rep.get("jitter", {}).get("ci95")
    jitter = f"jitter_cv {st['jitter_cv']}" + (f" (95% {ci[0]:.3g}-{ci[1]:.3g})" if ci else "")
    stall = "no stall"
    if "stall" in st:
        length = rep["stalls"]["length"]
        how = f"{length['chosen']} by BIC, KS {length['ks']:.3f}" if "bic" in length else length["why"]
        stall = f"stall per_chunk {st['stall']['per_chunk']}, seconds {st['stall']['seconds']} ({how})"
    return f"stream: chunk_tokens {st['chunk_tokens']}, {jitter}, {stall} ({fit.note})"


def _input_range(text: str) -> tuple[int, int]:
    try:
        if "-" in text.strip().lstrip("-"):
            lo, hi = (int(p) for p in text.split("-", 1))
        else:
            lo = hi = int(text)
    except ValueError:
        raise BadInput(f"--input-tokens {text!r}: give a number (2000) or a range (500-8000)") from None
    if not 1 <= lo <= hi:
        raise BadInput(f"--input-tokens {text!r}: need 1 <= low <= high")
    from agentsim.model.domain import problem

    msg = problem("tokens", hi)
    if msg is not None:
        raise BadInput(f"--input-tokens {text!r}: {msg}")
    return lo, hi


BaseUrlOpt = Annotated[
    str,
    typer.Option(help="API base URL, e.g. https://api.openai.com/v1 or https://api.anthropic.com.", show_default=False),
]
InputTokensOpt = Annotated[
    str,
    typer.Option(
        help="Prompt sizes: a range LOW-HIGH (requests spread evenly over it, so calibrate can fit the "
        "prefill speed) or one size, e.g. 1000 (then calibrate cannot separate prefill from TTFT)."
    ),
]
MaxTokensFieldOpt = Annotated[
    str, typer.Option(help="OpenAI body field for the output limit (max_tokens or max_completion_tokens).")
]


@app.command()
@handle_errors
def measure(
    base_url: BaseUrlOpt,
    model: Annotated[str, typer.Option(help="Model name to request.", show_default=False)],
    out: Annotated[Path, typer.Option("-o", "--out", help="JSONL file to write.", show_default=False)],
    api: Annotated[str, typer.Option(help="openai (Chat Completions) or anthropic (Messages).")] = "openai",
    requests: Annotated[int, typer.Option(min=1, help="Number of requests.")] = 20,
    concurrency: Annotated[int, typer.Option(min=1, help="Requests in flight at once.")] = 1,
    input_tokens: InputTokensOpt = DEFAULT_INPUT_TOKENS,
    output_tokens: Annotated[int, typer.Option(min=1, help="Maximum output tokens per request.")] = 256,
    api_key_env: Annotated[str | None, typer.Option(help="Environment variable holding the API key.")] = None,
    timeout: Annotated[str, DurationOpt("Time before a request is abandoned")] = "120",
    seed: Annotated[int, typer.Option(min=0, help="Seed for prompts and the order of input sizes.")] = 0,
    max_tokens_field: MaxTokensFieldOpt = "max_tokens",
) -> None:
    """Stream real requests to an endpoint and record TTFT, every token gap and usage (costs money)."""
    from agentsim.measure.probe import MeasureConfig

    out = _measure_target(out)
    _check_endpoint(api, base_url)
    key = _api_key(api_key_env)
    config = MeasureConfig(
        base_url=base_url,
        model=model,
        api=api,
        requests=requests,
        concurrency=concurrency,
        input_tokens=_input_range(input_tokens),
        output_tokens=output_tokens,
        timeout_s=timeout,
        seed=seed,
        max_tokens_field=max_tokens_field,
    )
    err_console.print(
        f"sending {requests} real streaming requests to {config.url} (model {model}); "
        "they are billed like any other request",
        markup=False,
    )
    counts = _send_requests(out, config, key)
    err_console.print(
        f"measured {counts['ok'] + counts['failed']} requests ({counts['failed']} failed) into {out}; "
        f"next: agentsim calibrate {out} -o profile.yaml",
        markup=False,
    )


def _measure_target(out: Path) -> Path:
    """The file the lines go to, checked before any (billed) request is sent (``-``: standard output)."""
    from agentsim.viz.outdir import check_file, is_stdout

    check_file(out, "-o", "measurements.jsonl")
    if is_stdout(out):  # the lines are written as they come: to the process's standard output
        return Path("/dev/stdout")
    return out


def _check_endpoint(api: str, base_url: str) -> None:
    """``--api`` is one the probe speaks and ``--base-url`` a full http(s) URL."""
    from agentsim.measure.probe import APIS

    if api not in APIS:
        raise BadInput(f"--api {api!r}: use openai or anthropic")
    if not base_url.startswith(("http://", "https://")):
        raise BadInput(f"--base-url {base_url!r}: give a full URL starting with http:// or https://")


def _api_key(api_key_env: str | None) -> str | None:
    """The API key from the environment variable ``--api-key-env`` names (None: no variable named)."""
    if api_key_env is None:
        return None
    key = os.environ.get(api_key_env)
    if not key:
        raise BadInput(f"the environment variable {api_key_env} named by --api-key-env is not set or empty")
    return key


def _send_requests(out: Path, config, key: str | None) -> dict:
    """Run the measurement (with a progress bar on a terminal); Ctrl-C keeps the finished requests. A new file is
    written as requests finish; an existing one is replaced, whole, when the run ends or is interrupted."""
    from agentsim.measure.probe import write_measurements

    done = {"n": 0, "failed": 0}
    progress = None
    if err_console.is_terminal:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        progress = Progress(
            TextColumn("measuring"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[f]}"),
            TimeElapsedColumn(),
            console=as_console(err_console),
            transient=True,
        )
        task = progress.add_task("measure", total=config.requests, f="")

    def on_record(rec: dict) -> None:
        done["n"] += 1
        done["failed"] += 0 if rec["ok"] else 1
        if progress is not None:
            progress.update(task, advance=1, f=f"{done['failed']} failed" if done["failed"] else "")

    def measure(path: Path) -> None:
        if progress is None:
            counts.update(write_measurements(path, config, key, on_record))
            return
        with progress:
            counts.update(write_measurements(path, config, key, on_record))

    counts: dict = {}
    try:
        if out.exists() and out.is_file():  # an earlier file is replaced when the run ends (or is interrupted)
            from agentsim.viz.outdir import write_file

            write_file(out, measure, "-o", keep_partial=True)
        else:  # a new file (or stdout) is written as requests finish: it can be watched meanwhile
            measure(out)
        return counts
    except KeyboardInterrupt:
        err_console.print(
            f"interrupted: the {done['n']} requests that finished are in {out} (valid JSON Lines)", markup=False
        )
        raise typer.Exit(130) from None

"""``agentsim stream``: one HTML page that plays a call's turn from the ask, per variant (agentsim.viz.stream_page)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agentsim.cli.common import BadInput, MaxCallsOpt, NoSizeLimitOpt, app, err_console, handle_errors

__all__ = ["stream"]


@app.command()
@handle_errors
def stream(
    file: Annotated[Path, typer.Argument(help="Scenario file (YAML, JSON or TOML).", show_default=False)],
    out: Annotated[Path, typer.Option("--out", "-o", help="The HTML file to write.")] = Path("stream.html"),
    call: Annotated[
        str | None, typer.Option(help="The call to show (default: the first with a consumer, else the first).")
    ] = None,
    runs: Annotated[
        int | None, typer.Option(min=1, help="Runs to pick the median one from (default: the scenario's).")
    ] = None,
    seed: Annotated[int | None, typer.Option(min=0, help="Random seed (default: the scenario's).")] = None,
    run: Annotated[int | None, typer.Option(min=0, help="Show this run instead of the median one.")] = None,
    percentile: Annotated[
        float, typer.Option(help="Show the run whose call took this percentile of its time (95: a slow turn).")
    ] = 50.0,
    speed: Annotated[float, typer.Option(help="Initial playback speed: 0.5, 1, 2, 5, 10 or 20.")] = 1.0,
    engine: Annotated[str, typer.Option(help="auto, des or fastpath.")] = "auto",
    max_calls: MaxCallsOpt = None,
    no_size_limit: NoSizeLimitOpt = False,
) -> None:
    """One self-contained HTML page that plays a call's turn from the ask, side by side per variant: the steps
    before the first word, then the answer streaming (0.75 words per token), and the person's barge-in. Open
    it with ?t=SECONDS after its address to start paused at that time."""
    from agentsim.analysis.stream_timeline import StreamTimelineError
    from agentsim.viz.outdir import check_file
    from agentsim.viz.report import write_report
    from agentsim.viz.stream_page import build_stream_page

    if speed not in (0.5, 1, 2, 5, 10, 20):
        raise BadInput(f"--speed {speed:g}: choose one of 0.5, 1, 2, 5, 10 or 20")
    if not 0 <= percentile <= 100 or (run is not None and percentile != 50):
        raise BadInput(f"--percentile {percentile:g}: give a percentile from 0 to 100, and not with --run")
    from agentsim.plan.validation import input_files, load

    check_file(out, example="stream.html")  # before the simulation
    inputs = input_files(load(file))
    check_file(out, example="stream.html", inputs=inputs)  # not the scenario, nor a file it reads
    try:
        page = build_stream_page(
            file, call, runs=runs, seed=seed, engine=engine, run=run, speed=speed, percentile=percentile
        )
    except StreamTimelineError as exc:
        raise BadInput(f"{file}: {exc}") from None
    write_report(page, out, inputs=inputs)
    from agentsim.viz.outdir import shown

    err_console.print(f"wrote {shown(out)}", markup=False)

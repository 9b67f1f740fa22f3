"""``agentsim stream``: one self-contained HTML page that plays a call's answer streaming, side by side per variant.

The page replays the token timeline of one representative run (:mod:`agentsim.analysis.stream_timeline`):
every variant shows the same sample text, token by token, at the simulated delivery times ``d_i``
(jitter, chunks and stalls included), with the reader's position (``f_i``) or the speaker's
(tokens said) marked in the text, and a clock. It plays at real speed or faster (a speed control),
and can be paused and scrubbed. Nothing is fetched: the styles, the script and the timeline (JSON)
are inside the page, which is rendered from ``templates/stream.html`` with autoescaping.

For tests and scripts the page exposes ``window.agentsimSeek(t)`` (pause and set the virtual clock to
``t`` seconds since the call was sent) and shows, per variant, ``data-tokens`` (tokens delivered by
the clock, ``#{i : d_i <= t}``), ``data-read`` and ``data-spoken``; the clock element carries
``data-t``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from agentsim.analysis.stream_timeline import token_timelines
from agentsim.model.registry import consumer_kinds

__all__ = ["SAMPLE_TEXT", "build_stream_page", "page_data"]

# Shown token by token (one word a token, cycling); the text does not matter, its timing does.
SAMPLE_TEXT = (
    "Here is what I found. The short answer is yes, with one caveat. The faster option finishes the "
    "whole answer sooner, but a person reading along only gains until the text arrives faster than "
    "they can read it; after that, only the wait for the first words still matters. For a voice agent "
    "the first complete sentence is what counts, because speech cannot start before it. Below are the "
    "details, step by step, with the numbers behind each of them and the assumptions they rest on. "
    "First, the time to the first token sets how long the screen looks frozen. Second, the output "
    "speed sets how soon the answer is complete. Third, pauses in the stream are what users notice "
    "most, because a steady stream reads as progress and a stall reads as a failure."
)


def _clean(values) -> list[float | None]:
    return [None if not math.isfinite(v) else float(v) for v in values]


def page_data(frame) -> dict:
    """The timeline the page plays: per variant, delivery, reading and speaking times (JSON-ready)."""
    columns = {c: label for kind in consumer_kinds().values() for c, (label, _) in kind.columns.items() if c in frame}
    variants = []
    for name in dict.fromkeys(frame["variant"]):
        g = frame[frame["variant"] == name]
        entry = {"name": str(name), "delivered": _clean(g["delivered_s"].to_numpy())}
        for column, label in columns.items():  # a consumer kind's per-token times: "read", "spoken"
            x = g[column].to_numpy()
            entry[label] = _clean(x) if len(x) and not all(map(math.isnan, x)) else None
        variants.append(entry)
    labels = list(columns.values())
    ends = [max((x for x in (*v["delivered"], *(y for k in labels for y in (v[k] or []))) if x is not None), default=0)
            for v in variants]  # fmt: skip
    return {
        "call": frame.attrs.get("call"),
        "consumer": frame.attrs.get("consumer"),
        "run": int(frame["run"].iloc[0]) if len(frame) else 0,
        "duration": float(max(ends, default=0.0)),
        "words": SAMPLE_TEXT.split(),
        "variants": variants,
    }


def build_stream_page(
    scenario_file: str | os.PathLike,
    call: str | None = None,
    *,
    runs: int | None = None,
    seed: int | None = None,
    engine: str = "auto",
    run: int | None = None,
    speed: float = 1.0,
) -> str:
    """Simulate ``scenario_file`` and return the HTML page that plays ``call`` streaming per variant."""
    import jinja2

    from agentsim.plan.validation import load

    sc = load(Path(scenario_file))
    frame = token_timelines(sc, call, runs=runs, seed=seed, engine=engine, run=run)
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    data = page_data(frame)
    return env.get_template("stream.html").render(
        title=f"agentsim stream: {sc.name}",
        description=sc.description or "",
        data=data,
        speed=float(speed),
    )

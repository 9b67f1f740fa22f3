"""``agentsim stream``: one self-contained HTML page that plays a call's answer streaming, side by side per variant.

The page replays the turn of one representative run (:mod:`agentsim.analysis.stream_timeline`) **from the
ask**, the moment the person asked (the run's start): each variant's lane first shows what the person
waits through before the first word (a listen, tools, waits, earlier calls such as routing, queueing, then
the call's own time to its first token) as phases on a strip and as a status line, then the same sample
text as the variant delivers it (jitter, chunks and stalls included), with the reader's position (``f_i``)
or the speaker's (tokens said) marked in the text, and where the person interrupts, the interruption:
reading and speech stop there. Each lane also says, for a voice, the run's voice-to-voice latency, and for
each of the scenario's ``slo`` targets on the call's streaming metrics whether this run meets it and the
share of the simulated runs within it (95% interval). The page says how its run was chosen: the run whose
call took the median time in the first variant, or the one ``--run`` named. A clock, a speed control, pause
and a scrubber. Nothing is fetched: the
styles, the script and the timeline (JSON) are inside the page, rendered from ``templates/stream.html``
with autoescaping.

**Words, not tokens.** English text averages about 0.75 words per token (the ratio the reader's
``words_per_min`` uses), so the page shows ``⌊3 k / 4⌋`` words after ``k`` tokens (computed in integers:
fractional words accumulate, and a word appears once its last fraction has arrived); the reader's and the
speaker's positions are converted the same way. A reader at 250 words/min (5.56 tokens/s) thus appears to
read 250 words a minute, not 333.

For tests and scripts: ``?t=SECONDS`` in the page's URL pauses it at that time on load, and
``window.agentsimSeek(t)`` pauses and sets the clock to ``t`` seconds since the ask. Each lane carries, for
the clock's time ``t``: ``data-tokens`` (tokens delivered, ``#{i : d_i <= t}``), ``data-words``
(``⌊3 data-tokens / 4⌋``), ``data-read`` / ``data-spoken`` (tokens read or said by then, never more than
delivered), ``data-phase`` (the phases under way, ``kind:step`` separated by spaces) and
``data-interrupted`` (``1`` once the person has interrupted); the clock element carries ``data-t``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from agentsim.analysis.stream_timeline import token_timelines
from agentsim.model.registry import consumer_kinds

__all__ = ["SAMPLE_TEXT", "WORDS_PER_TOKEN", "build_stream_page", "page_data", "words_shown"]

WORDS_PER_TOKEN = 0.75  # English words per token, as the reader's words_per_min (docs/concepts.md#stream-timeline)

# Shown word by word (0.75 words a token, cycling); the text does not matter, its timing does.
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


def _consumed(x) -> list[float] | None:
    """A consumer's per-token times as the page counts them: the tokens consumed (NaN after the person's
    interruption, always a tail) left out; None when the consumer has no such times."""
    done = [float(v) for v in x if math.isfinite(v)]
    return done or None


def _rows(phases: list[dict]) -> list[dict]:
    """The phases with a strip row each, so that phases running at once (parallel branches) do not overlap."""
    ends: list[float] = []
    out = []
    for p in phases:
        row = next((r for r, e in enumerate(ends) if e <= p["start_s"]), len(ends))
        ends[row : row + 1] = [p["end_s"]]
        out.append({"kind": p["kind"], "step": str(p["step"]), "start": p["start_s"], "end": p["end_s"], "row": row})
    return out


def page_data(frame) -> dict:
    """The turn the page plays, seconds from the ask: per variant, the phases before the first word and the
    delivery, reading and speaking times (JSON-ready)."""
    columns = {c: label for kind in consumer_kinds().values() for c, (label, _) in kind.columns.items() if c in frame}
    phases = frame.attrs.get("phases", [])
    variants = []
    for name in dict.fromkeys(frame["variant"]):
        g = frame[frame["variant"] == name]
        stop = g["interrupt_s"].to_numpy()[:1]
        entry = {
            "name": str(name),
            "send": float(g["send_s"].iloc[0]) if len(g) else 0.0,
            "delivered": _clean(g["delivered_s"].to_numpy()),
            "interrupt": _clean(stop)[0] if len(stop) else None,
            "phases": _rows([p for p in phases if p["variant"] == name]),
            "voice_to_voice": frame.attrs.get("voice_to_voice", {}).get(name),
            "targets": [_target_text(t) for t in frame.attrs.get("targets", {}).get(name, [])],
        }
        for column, label in columns.items():  # a consumer kind's per-token times: "read", "spoken"
            entry[label] = _consumed(g[column].to_numpy())
        variants.append(entry)
    labels = list(columns.values())
    ends = [
        max((x for x in (*v["delivered"], *(y for k in labels for y in (v[k] or [])),
                         *(p["end"] for p in v["phases"]), v["interrupt"]) if x is not None), default=0)
        for v in variants
    ]  # fmt: skip
    return {
        "call": frame.attrs.get("call"),
        "consumer": frame.attrs.get("consumer"),
        "run": int(frame["run"].iloc[0]) if len(frame) else 0,
        "picked": frame.attrs.get("picked", "median"),
        "first_variant": str(variants[0]["name"]) if variants else "",
        "duration": float(max(ends, default=0.0)),
        "words_per_token": WORDS_PER_TOKEN,
        "words": SAMPLE_TEXT.split(),
        "variants": variants,
    }


def _target_text(t: dict) -> dict:
    """One target of a lane: ``voice_to_voice_s ≤ 0.80 s: this run 1.09 s, missed; 42.0% of 300 runs within
    (95% CI 36.6–47.7%)``, and whether the shown run met it (the page colours it)."""
    from agentsim.viz import format as fmt

    floor = t["metric"].rsplit(".", 1)[-1].startswith("qoe")

    def value(x):
        if x is None:
            return "none"
        return fmt.durations([x])[0] if t["metric"].endswith("_s") else f"{x:.3g}"

    lo, hi = t["ci95"]
    text = (f"{t['metric']} {'≥' if floor else '≤'} {value(t['target'])}: this run {value(t['value'])}, "
            f"{'met' if t['met'] else 'missed'}; {fmt.pct(t['share'])} of {t['runs']:,} runs within "
            f"(95% CI {100 * lo:.1f}–{fmt.pct(hi)})")  # fmt: skip
    return {"text": text, "met": t["met"]}


def words_shown(tokens: int) -> int:
    """Words on the page after ``tokens`` tokens: ``⌊0.75 tokens⌋``, in integers (the page's rule)."""
    return (3 * int(tokens)) // 4


def build_stream_page(
    scenario_file: str | os.PathLike,
    call: str | None = None,
    *,
    runs: int | None = None,
    seed: int | None = None,
    engine: str = "auto",
    run: int | None = None,
    speed: float = 1.0,
    percentile: float = 50.0,
) -> str:
    """Simulate ``scenario_file`` and return the HTML page that plays ``call`` streaming per variant."""
    from agentsim.plan.validation import load
    from agentsim.viz.page_env import environment, visible_data

    sc = load(Path(scenario_file))
    frame = token_timelines(sc, call, runs=runs, seed=seed, engine=engine, run=run, percentile=percentile)
    env = environment()
    data = visible_data(page_data(frame))
    return env.get_template("stream.html").render(
        title=f"agentsim stream: {sc.name}",
        description=sc.description or "",
        data=data,
        speed=float(speed),
    )

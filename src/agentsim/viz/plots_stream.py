"""The stream figure: the turn from the ask, per variant: the phases before the first word, then the tokens.

DataFrame in (:func:`agentsim.analysis.stream_timeline.token_timelines`: one row per visible token of one
call in one representative run, per variant, seconds from the ask, and its ``attrs["phases"]``), matplotlib
:class:`~agentsim.viz.plots.Figure` out. Time runs from the ask (the person's question, the run's start).

* The upper axes: each variant gets one colour: a solid step line for the tokens delivered by time *t*
  (its points are the delivery times ``d_i``, token counts ``i``), dashed for the tokens a reader has read
  (``f_i``), dotted for the tokens a speaker has said, and a dash-dotted vertical line where the person
  interrupts (reading and speech stop there). Where the dashed line runs parallel to the solid one far to
  its right, the reader is the bottleneck and more output speed buys nothing (the apparate point).
* The lower strip: one row per variant, the phases the person waited through before the first word,
  shaded by kind (listen, tool, wait, earlier call, queue, then the call's own wait for its first token),
  then the answer streaming (first to last delivered token), with the interruption marked.
"""

from __future__ import annotations

import math

import pandas as pd

from agentsim.model.registry import consumer_kinds
from agentsim.sim import slots
from agentsim.viz.plots import Figure, variant_colors

__all__ = ["PHASE_COLORS", "stream_figure"]

# the phase kinds' shades (the same as the stream page's) and their legend labels
PHASE_COLORS = {
    "listen": ("#8e7cc3", "listen"),
    "tool": ("#e69138", "tool"),
    "wait": ("#999999", "wait"),
    "call": ("#6aa84f", "earlier call"),
    "queue": ("#cc4125", "queue"),
    "ttft": ("#f1c232", "to first word"),
    "answer": ("#3d7ea6", "answer streaming"),
}


def stream_figure(frame: pd.DataFrame, title: str | None = None) -> Figure:
    """Tokens delivered (and read, and spoken) against seconds since the ask, per variant, over a strip of
    the phases before the first word (see the module doc)."""
    fig = Figure(figsize=(7.5, 5.2), layout="constrained")
    grid = fig.add_gridspec(2, 1, height_ratios=[4, 1])
    ax = fig.add_subplot(grid[0])
    strip = fig.add_subplot(grid[1], sharex=ax)
    names = list(dict.fromkeys(frame["variant"]))
    columns = {c: label for kind in consumer_kinds().values() for c, label in kind.columns.items() if c in frame}
    colors = variant_colors(names)
    for name in names:
        g = frame[frame["variant"] == name]
        c = colors[name]
        ax.step(g["delivered_s"].to_numpy(), g["token"].to_numpy(), where="post", color=c, label=f"{name}: delivered")
        for col, (what, style) in columns.items():  # each consumer kind's per-token times (read, spoken)
            done = g[col].notna()
            if done.any():
                x, y = g.loc[done, col].to_numpy(), g.loc[done, "token"].to_numpy()
                ax.plot(x, y, style, color=c, label=f"{name}: {what}")
        stop = float(g["interrupt_s"].iloc[0]) if len(g) else math.nan
        if not math.isnan(stop):
            ax.axvline(stop, color=c, linestyle="-.", linewidth=1, label=f"{name}: interrupted")
    _phase_strip(strip, frame, names)
    call = frame.attrs.get("call", "")
    run = int(frame["run"].iloc[0]) if len(frame) else 0
    ax.set_title(title or f"how '{call}' arrives, from the ask (run {run})")
    ax.set_ylabel("tokens")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.tick_params(labelbottom=False)
    strip.set_xlabel("seconds since the ask (the person's question)")
    return fig


def _slot_colour(name: str) -> tuple[str, str]:
    """(colour, label) of a phase that is a step kind's own breakdown slot (agentsim.sim.slots)."""
    found = next((s for s in slots.slots() if s.name == name), None)
    return (found.colour, found.legend) if found is not None else ("#bbbbbb", name)


def _phase_strip(strip, frame: pd.DataFrame, names: list[str]) -> None:
    """One row per variant (the first on top): its phases, then the answer streaming, the interruption marked."""
    phases = frame.attrs.get("phases", [])
    shown: set[str] = set()
    for row, name in enumerate(names):
        y = len(names) - 1 - row
        g = frame[frame["variant"] == name]
        spans = [(p["kind"], p["start_s"], p["end_s"]) for p in phases if p["variant"] == name]
        if len(g):
            spans.append(("answer", float(g["delivered_s"].iloc[0]), float(g["delivered_s"].iloc[-1])))
        for kind, a, b in spans:
            color, label = PHASE_COLORS.get(kind) or _slot_colour(kind)
            strip.broken_barh([(a, max(b - a, 0.0))], (y + 0.15, 0.7), facecolors=color,
                              label=None if kind in shown else label)  # fmt: skip
            shown.add(kind)
        stop = float(g["interrupt_s"].iloc[0]) if len(g) else math.nan
        if not math.isnan(stop):
            strip.plot([stop, stop], [y, y + 1], color="#bc4b51", linewidth=2)
    strip.set_yticks([len(names) - 1 - i + 0.5 for i in range(len(names))], names, fontsize=8)
    strip.set_ylim(0, len(names))
    strip.legend(fontsize=7, ncols=4, loc="upper right", framealpha=0.8)

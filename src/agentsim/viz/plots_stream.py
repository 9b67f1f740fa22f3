"""The stream figure: tokens delivered against time, per variant, with the reader's and the speaker's progress.

DataFrame in (:func:`agentsim.analysis.stream_timeline.token_timelines`: one row per visible token of one
call in one representative run, per variant), matplotlib :class:`~agentsim.viz.plots.Figure` out. Each
variant gets one colour: a solid step line for the tokens delivered by time *t* (its points are the
delivery times ``d_i``, token counts ``i``), dashed for the tokens a reader has read (``f_i``), dotted
for the tokens a speaker has said. Where the dashed line runs parallel to the solid one far to its
right, the reader is the bottleneck and more output speed buys nothing (the apparate point).
"""

from __future__ import annotations

import pandas as pd

from agentsim.model.registry import consumer_kinds
from agentsim.viz.plots import Figure, variant_colors

__all__ = ["stream_figure"]


def stream_figure(frame: pd.DataFrame, title: str | None = None) -> Figure:
    """Tokens delivered (and read, and spoken) against seconds since the call was sent, per variant."""
    fig = Figure(figsize=(7.5, 4.5), layout="constrained")
    ax = fig.subplots()
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
    call = frame.attrs.get("call", "")
    run = int(frame["run"].iloc[0]) if len(frame) else 0
    ax.set_title(title or f"how '{call}' arrives (run {run})")
    ax.set_xlabel("seconds since the call was sent")
    ax.set_ylabel("tokens")
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig

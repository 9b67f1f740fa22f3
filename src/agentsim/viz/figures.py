"""The figures of a result, as functions of the figures layer called on it: ``plot_tradeoff(res)`` and friends.

:class:`~agentsim.sim.results.Results` and :class:`~agentsim.replay.retime.ReplayResult` are tables and
statistics; they import no figure code, so the simulation and replay layers never depend on matplotlib or
on this layer. A figure is drawn by calling one of these functions on a result (also as
``agentsim.viz.plot_tradeoff(res)``). The ``res.plot_tradeoff()`` methods of earlier versions are these
functions, attached by the package root (:mod:`agentsim.viz.figure_methods`, installed by
``agentsim/__init__.py``: the composition root, outside the layers). The figure modules are imported when
a figure is drawn, which keeps ``import agentsim`` free of matplotlib.
"""

from __future__ import annotations

from typing import Any

__all__ = ["plot_breakdown", "plot_limits", "plot_stream", "plot_tradeoff", "plot_wait_cdf"]


def plot_tradeoff(res: Any):
    """Mean cost against mean and p95 wall time, one point per variant (a matplotlib Figure); of replayed
    sessions (a :class:`~agentsim.replay.retime.ReplayResult`), per session."""
    from agentsim.replay.retime import ReplayResult
    from agentsim.viz.plots import tradeoff_figure

    title = "replayed sessions" if isinstance(res, ReplayResult) else res.scenario.name
    return tradeoff_figure(res.summary(), title=title)


def plot_limits(res: Any):
    """Requests in flight and token-bucket levels per account over time (a workload on shared limits; else a
    figure that says there is none)."""
    from agentsim.viz.plots_limits import limits_figure

    outs = res.outcomes
    series = res.limits_timeseries()
    if not len(series):
        from agentsim.viz.plots import note_figure

        return note_figure(
            "Requests in flight and token buckets",
            f"'{res.scenario.name}' has no workload on shared limits (limits: with workload:), so no account "
            "fills up over time: there is nothing to draw.",
        )
    return limits_figure(series, outs[0].window if outs else None)


def plot_wait_cdf(res: Any):
    """CDF of the queue wait of every successful call, per variant (with shared limits; else a figure that
    says no call waits)."""
    from agentsim.viz.plots_limits import wait_cdf_figure

    if not res.plan.accounts:
        from agentsim.viz.plots import note_figure

        return note_figure(
            "Queue wait per call (submit to start)",
            f"'{res.scenario.name}' has no shared limits (limits:), so no call waits for a slot or a rate budget: "
            "every queue wait is 0.",
        )
    return wait_cdf_figure(res.calls)


def plot_stream(res: Any, call: str | None = None, run: int | None = None):
    """Tokens delivered against time per variant, for one representative run of ``call``, with the reader's
    and the speaker's progress (:mod:`agentsim.analysis.stream_timeline`: the same runs, simulated again)."""
    from agentsim.analysis.stream_timeline import token_timelines
    from agentsim.viz.plots_stream import stream_figure

    frame = token_timelines(res.scenario, call, runs=res.n_runs, seed=res.seed, engine=res.engine, run=run)
    return stream_figure(frame)


def plot_breakdown(res: Any):
    """Replayed sessions: total wall time per variant, stacked by what it waited on."""
    from agentsim.viz.plots_replay import breakdown_figure

    return breakdown_figure(res)

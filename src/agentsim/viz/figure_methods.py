"""The ``plot_*`` methods of result objects, attached from the figures side.

:class:`~agentsim.sim.results.Results` and :class:`~agentsim.replay.retime.ReplayResult` are tables and
statistics; they import no figure code, so the simulation and replay layers never depend on
matplotlib or on :mod:`agentsim.viz.plots`. This module gives them their figure methods
(``res.plot_tradeoff()`` and friends, as the notebooks use them). ``import agentsim`` imports
it, so the methods are there whichever way a result was made. The figure modules themselves
are imported when a figure is drawn, which keeps ``import agentsim`` free of matplotlib.
"""

from __future__ import annotations

from agentsim.replay.retime import ReplayResult
from agentsim.sim.results import Results

__all__ = ["attach"]


def results_plot_tradeoff(self: Results):
    """Mean cost against mean and p95 wall time, one point per variant (a matplotlib Figure)."""
    from agentsim.viz.plots import tradeoff_figure

    return tradeoff_figure(self.summary(), title=self.scenario.name)


def results_plot_limits(self: Results):
    """Requests in flight and token-bucket levels per account over time (a workload on shared limits; else a
    figure that says there is none)."""
    from agentsim.viz.plots_limits import limits_figure

    outs = self.outcomes
    series = self.limits_timeseries()
    if not len(series):
        from agentsim.viz.plots import note_figure

        return note_figure(
            "Requests in flight and token buckets",
            f"'{self.scenario.name}' has no workload on shared limits (limits: with workload:), so no account "
            "fills up over time: there is nothing to draw.",
        )
    return limits_figure(series, outs[0].window if outs else None)


def results_plot_wait_cdf(self: Results):
    """CDF of the queue wait of every successful call, per variant (with shared limits; else a figure that
    says no call waits)."""
    from agentsim.viz.plots_limits import wait_cdf_figure

    if not self.plan.accounts:
        from agentsim.viz.plots import note_figure

        return note_figure(
            "Queue wait per call (submit to start)",
            f"'{self.scenario.name}' has no shared limits (limits:), so no call waits for a slot or a rate budget: "
            "every queue wait is 0.",
        )
    return wait_cdf_figure(self.calls)


def results_plot_stream(self: Results, call: str | None = None, run: int | None = None):
    """Tokens delivered against time per variant, for one representative run of ``call``, with the
    reader's and the speaker's progress (see :mod:`agentsim.stream_timeline`)."""
    from agentsim.analysis.stream_timeline import token_timelines
    from agentsim.viz.plots_stream import stream_figure

    frame = token_timelines(self.scenario, call, runs=self.n_runs, seed=self.seed, engine=self.engine, run=run)
    return stream_figure(frame)


def replay_plot_tradeoff(self: ReplayResult):
    """Replayed sessions: mean cost against mean and p95 wall time per session, one point per variant."""
    from agentsim.viz.plots import tradeoff_figure

    return tradeoff_figure(self.summary(), title="replayed sessions")


def replay_plot_breakdown(self: ReplayResult):
    """Total wall time per variant, stacked by what it waited on."""
    from agentsim.viz.plots_replay import breakdown_figure

    return breakdown_figure(self)


def attach() -> None:
    """Give the result classes their ``plot_*`` methods (idempotent)."""
    Results.plot_tradeoff = results_plot_tradeoff  # type: ignore[attr-defined]
    Results.plot_limits = results_plot_limits  # type: ignore[attr-defined]
    Results.plot_wait_cdf = results_plot_wait_cdf  # type: ignore[attr-defined]
    Results.plot_stream = results_plot_stream  # type: ignore[attr-defined]
    ReplayResult.plot_tradeoff = replay_plot_tradeoff  # type: ignore[attr-defined]
    ReplayResult.plot_breakdown = replay_plot_breakdown  # type: ignore[attr-defined]


attach()

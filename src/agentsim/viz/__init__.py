"""Figures (DataFrame in, matplotlib Figure out; a result's figures: :mod:`agentsim.viz.figures`), result
folders and the HTML report.

``agentsim.viz.plot_tradeoff(res)`` (and ``plot_limits``, ``plot_wait_cdf``, ``plot_stream``,
``plot_breakdown``) draw a result's figures; importing this package loads no figure code (matplotlib is
imported when a figure is drawn).
"""

from agentsim.viz.figures import plot_breakdown, plot_limits, plot_stream, plot_tradeoff, plot_wait_cdf

__all__ = ["plot_breakdown", "plot_limits", "plot_stream", "plot_tradeoff", "plot_wait_cdf"]

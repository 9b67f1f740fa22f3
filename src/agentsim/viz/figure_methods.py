"""The ``plot_*`` methods of result objects, for code written before the figures were functions.

The figures are functions of the figures layer (:mod:`agentsim.viz.figures`: ``plot_tradeoff(res)``).
:func:`attach` gives :class:`~agentsim.sim.results.Results` and
:class:`~agentsim.replay.retime.ReplayResult` the same functions as methods (``res.plot_tradeoff()``, as the
notebooks use them). Nothing below this layer imports this module, by name or by string: the package root
(``agentsim/__init__.py``, the composition root outside the layers) installs :func:`attach` as the loader of
:mod:`agentsim.model.extensions`, which the result classes run on first use of a ``plot_*`` name.
"""

from __future__ import annotations

from agentsim.replay.retime import ReplayResult
from agentsim.sim.results import Results
from agentsim.viz import figures

__all__ = ["attach"]


def attach() -> None:
    """Give the result classes their ``plot_*`` methods (idempotent)."""
    Results.plot_tradeoff = figures.plot_tradeoff  # type: ignore[attr-defined]
    Results.plot_limits = figures.plot_limits  # type: ignore[attr-defined]
    Results.plot_wait_cdf = figures.plot_wait_cdf  # type: ignore[attr-defined]
    Results.plot_stream = figures.plot_stream  # type: ignore[attr-defined]
    ReplayResult.plot_tradeoff = figures.plot_tradeoff  # type: ignore[attr-defined]
    ReplayResult.plot_breakdown = figures.plot_breakdown  # type: ignore[attr-defined]

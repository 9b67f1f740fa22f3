"""Methods the package root adds to classes of the lower layers: the result classes' ``plot_*`` figures.

The layers import only downward, so :class:`~agentsim.sim.results.Results` (simulation layer) cannot
import its figures (figures layer), by name or by string. For code that calls ``res.plot_tradeoff()``
(the figures are functions of :mod:`agentsim.viz.figures`), the package root -- ``agentsim/__init__.py``,
the composition root outside the layers, which also tells the kind registry where the built-in kinds are
-- installs a loader here (:func:`set_loader`); a result class runs it (:func:`load`) on first use of a
``plot_*`` name it does not have. This module imports nothing of agentsim and keeps no state but the
loaders.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["load", "set_loader"]

_loaders: dict[str, Callable[[], None]] = {}
_done: set[str] = set()


def set_loader(group: str, loader: Callable[[], None]) -> None:
    """Install the function that adds the methods of ``group`` (``"figures"``) to their classes."""
    _loaders[group] = loader
    _done.discard(group)


def load(group: str) -> bool:
    """Run the loader of ``group`` once; whether it has run (False: none installed, or it ran already)."""
    if group in _done or group not in _loaders:
        return False
    _done.add(group)
    _loaders[group]()
    return True

"""agentsim: how fast and how expensive will our AI agents be, on which models and speed tiers?

The notebook API::

    import agentsim
    res = agentsim.simulate("scenarios/coding-agent.yaml", runs=2000, seed=42)
    res.summary()          # one row per variant
    res.runs, res.calls    # pandas DataFrames
    agentsim.viz.plot_tradeoff(res)   # matplotlib Figure (also res.plot_tradeoff())

and one function per command, each returning results with DataFrames (:mod:`agentsim.api`, docs/api.md):
``agentsim.sweep``, ``optimize``, ``size``, ``fit``, ``calibrate``, ``replay`` and ``report``.

The names below are imported on first use (module ``__getattr__``), so that
``import agentsim`` — and every command line start-up — stays cheap: the
simulator's NumPy, SciPy and pandas load only when a simulation needs them.
"""

from __future__ import annotations

import types as _types
from importlib import import_module
from typing import TYPE_CHECKING

__all__ = [
    "Results",
    "ScenarioError",
    "calibrate",
    "fit",
    "load",
    "optimize",
    "replay",
    "report",
    "simulate",
    "size",
    "sweep",
    "version",
]

_WHERE = {
    "Results": ".sim.results",
    "ScenarioError": ".model.loading",
    "load": ".plan.validation",
    "simulate": ".sim.simulation",
    "version": ".sim.results",
    **{name: ".api" for name in ("calibrate", "optimize", "report", "size", "sweep")},
}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from agentsim.api import calibrate, optimize, report, size, sweep
    from agentsim.model.loading import ScenarioError
    from agentsim.plan.validation import load
    from agentsim.sim.results import Results, version
    from agentsim.sim.simulation import simulate


def __getattr__(name: str):
    if name == "__version__":
        value = import_module(".sim.results", __name__).version()
    elif name in _WHERE:
        value = getattr(import_module(_WHERE[name], __name__), name)
    else:
        raise AttributeError(f"module 'agentsim' has no attribute '{name}'")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__, "__version__"])


def _builtin_kinds() -> None:
    """Import the built-in step and consumer kinds, which register themselves (run by the registry on first use)."""
    from agentsim import consumers, steps

    consumers.load()
    steps.load()


def _figure_methods() -> None:
    """Give the result classes their ``plot_*`` methods (run by a result on first use of a ``plot_*`` name)."""
    from agentsim.viz import figure_methods

    figure_methods.attach()


# The registry (agentsim.model.registry, the lowest layer) imports no kind; the package root, outside the
# layers, tells it where the built-in ones are. In the same way it gives the result classes (simulation and
# replay layers) the figure methods of the figures layer above them (agentsim.model.extensions).
from agentsim.model import extensions as _extensions  # noqa: E402
from agentsim.model import registry as _registry  # noqa: E402

_registry.set_loader(_builtin_kinds)
_extensions.set_loader("figures", _figure_methods)


# ``agentsim.fit(...)`` and ``agentsim.replay(...)`` share their names with the subpackages agentsim.fit and
# agentsim.replay, which Python binds to these attributes whenever anything imports from them. So the two
# packages themselves are made callable here, at the composition root (their __init__ modules hold only a
# docstring: importing them costs nothing): calling one runs the API function of the same name
# (agentsim.api), and every submodule stays reachable as before.
class _CallablePackage(_types.ModuleType):
    def __call__(self, *args, **kwargs):
        """agentsim.fit(sessions, ...) or agentsim.replay(sessions, variants, ...): see agentsim.api."""
        return getattr(import_module(".api", __name__), self.__name__.rsplit(".", 1)[-1])(*args, **kwargs)


for _package in (import_module(".fit", __name__), import_module(".replay", __name__)):
    _package.__class__ = _CallablePackage
del _package

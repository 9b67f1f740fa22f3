"""agentsim: how fast and how expensive will our AI agents be, on which models and speed tiers?

The notebook API::

    import agentsim
    res = agentsim.simulate("scenarios/coding-agent.yaml", runs=2000, seed=42)
    res.summary()          # one row per variant
    res.runs, res.calls    # pandas DataFrames
    res.plot_tradeoff()    # matplotlib Figure

The names below are imported on first use (module ``__getattr__``), so that
``import agentsim`` — and every command line start-up — stays cheap: the
simulator's NumPy, SciPy and pandas load only when a simulation needs them.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

__all__ = ["Results", "ScenarioError", "load", "simulate", "version"]

_WHERE = {
    "Results": ".sim.results",
    "ScenarioError": ".model.loading",
    "load": ".plan.validation",
    "simulate": ".sim.simulation",
    "version": ".sim.results",
}

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from agentsim.model.loading import ScenarioError
    from agentsim.plan.validation import load
    from agentsim.sim.results import Results, version
    from agentsim.sim.simulation import simulate


def __getattr__(name: str):
    if name == "__version__":
        value = import_module(".sim.results", __name__).version()
    elif name in _WHERE:
        value = getattr(import_module(_WHERE[name], __name__), name)
        if name in ("Results", "simulate"):
            import_module(".viz.figure_methods", __name__)  # gives the result classes their plot_* methods
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


# The registry (agentsim.model.registry, the lowest layer) imports no kind; the package root, outside the
# layers, tells it where the built-in ones are.
from agentsim.model import registry as _registry  # noqa: E402

_registry.set_loader(_builtin_kinds)

"""agentsim: how fast and how expensive will our AI agents be, on which models and speed tiers?

The notebook API::

    import agentsim
    res = agentsim.simulate("scenarios/coding-agent.yaml", runs=2000, seed=42)
    res.summary()          # one row per variant
    res.runs, res.calls    # pandas DataFrames
    res.plot_tradeoff()    # matplotlib Figure
"""

from . import figure_methods  # noqa: F401  (gives Results and ReplayResult their plot_* methods)
from .loading import ScenarioError
from .results import Results, version
from .simulation import simulate
from .validation import load

__all__ = ["Results", "ScenarioError", "load", "simulate", "version"]
__version__ = version()

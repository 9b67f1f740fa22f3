"""What the compiler's helpers share: the scenario, the nodes, draws and tiers made so far, the problems found.

:class:`CompileContext` is the small part of a compile that the helpers of :mod:`agentsim.plan.tiers`
(the tiers), :mod:`agentsim.plan.by_model` (model-dependent values) and :mod:`agentsim.plan.shared`
(accounts, workload, conditions, per-call draws) read and add to. They take it, not the
:class:`~agentsim.plan.compiler.Compiler`, so none of them depends on the compiler (which imports them):
the compiler holds one context and hands it on.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from agentsim.model.distributions import EmpiricalDist
from agentsim.model.scenario import Problem, Scenario
from agentsim.plan.distributions import DistError, Sampler, empirical_path, practical_max, sampler
from agentsim.plan.nodes import MAX_TOKENS, Draw, Node, Tier

__all__ = ["CompileContext"]


class CompileContext:
    """One compile's shared state (see the module doc): ``sc`` (the scenario), ``variants`` (name -> spec),
    ``prices_as_of`` (one date for the whole compile), and the lists every helper appends to: ``nodes``,
    ``draws``, ``tiers``, ``problems``."""

    def __init__(self, scenario: Scenario, base_dir: Path | None, prices_as_of: dt.date):
        self.sc = scenario
        self.base_dir = base_dir
        self.problems: list[Problem] = []
        self.nodes: list[Node] = []
        self.draws: list[Draw] = []
        self.tiers: list[Tier] = []
        self.variants = scenario.variant_specs()
        self.prices_as_of = prices_as_of
        self._samplers: dict = {}  # distribution spec -> its sampler
        self._tops: dict[int, float] = {}  # id(sampler) -> its practical maximum
        self.read: list[Path] = []  # files read (empirical CSV files): what no output may replace

    def problem(self, path, message, hint="") -> None:
        self.problems.append(Problem(tuple(path), message, hint))

    def sampler(self, spec, path, what: str, *, positive=False, upper: float | None = None) -> Sampler:
        """A sampler of a distribution, checked: above zero (``positive``) or not negative, at most ``upper``."""
        try:
            s = self._sampler_of(spec)
        except DistError as exc:
            self.problem((*path, *exc.subpath), exc.message, exc.hint)
            return Sampler("constant", {"value": 1.0})
        if upper is not None and not self._within(s, path, what, upper):
            return Sampler("constant", {"value": 1.0})
        lo, _ = s.support
        if positive and not s.strictly_positive:
            self.problem(
                path,
                f"{what} must be above zero but this distribution can reach {lo:g}",
                "add a positive min, e.g. min: 1" if s.family != "constant" else "use a positive number",
            )
        elif not positive and lo < 0:
            self.problem(
                path,
                f"{what} cannot be negative but this distribution can reach {lo:g}",
                "add min: 0" if s.family != "constant" else "use a number of at least 0",
            )
        return s

    def _within(self, s: Sampler, path, what: str, upper: float) -> bool:
        """Whether ``s`` stays at most ``upper`` (its practical maximum); reports the problem when not."""
        top = self._tops.get(id(s))
        if top is None:
            top = self._tops[id(s)] = practical_max(s)
        if top <= upper:
            return True
        unit = "tokens" if upper == MAX_TOKENS else "s"
        self.problem(
            path,
            f"{what} can reach {top:.3g} {unit}, above the limit of {upper:.3g} {unit}",
            "check the value for a typo" + (", or clip it with max:" if s.family != "constant" else ""),
        )
        return False

    def _sampler_of(self, spec) -> Sampler:
        """The sampler of a distribution, made once per distinct spec (a scenario repeats most of them)."""
        try:
            found = self._samplers.get(spec)
        except TypeError:  # a spec holding a list (choice, empirical values) is not hashable: made each time
            return sampler(spec, self.base_dir)
        if found is None:
            found = self._samplers[spec] = sampler(spec, self.base_dir)
            if isinstance(spec, EmpiricalDist) and spec.empirical.file is not None:
                self.read.append(empirical_path(spec.empirical.file, self.base_dir))
        return found

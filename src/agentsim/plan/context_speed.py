"""Context-dependent speed, compiled: a tier's piecewise-linear factors by context size.

A model (or one of its speed tiers) may say how its speed changes with the context a call sends
(contract v1.2, DESIGN.md §3.3)::

    context_speed: {tokens: [0, 200000, 800000], output_tps_x: [1, 0.9, 0.8], ttft_x: [1, 1.5, 2]}

The *context size* of a call is its whole input ``n``: the context re-sent plus the call's own new
input, cached or not (the ``input`` column of the calls table). With knots ``k_0 < ... < k_m`` and
factors ``v_0 ... v_m``, the factor at ``n`` is the straight line between the two knots around it,
held flat outside them::

    f(n) = v_0                                                    n <= k_0
         = v_i + (v_{i+1} - v_i) * ((n - k_i) / (k_{i+1} - k_i))  k_i <= n < k_{i+1}
         = v_m                                                    n >= k_m

(:func:`agentsim.sim.rules.context_factor`, written once for floats and arrays). A call then runs at
``tps x f_tps(n)`` and its drawn TTFT becomes ``ttft0 x f_ttft(n)`` (the prefill term is unchanged).

A tier's ``context_speed`` replaces its model's. A factor list whose factors are all 1 is compiled
to nothing (``None``), so a flat curve gives the very same bits as no curve: the engines skip it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

__all__ = ["ContextSpeed", "Piecewise", "compile_context_speed"]


@dataclass(frozen=True)
class Piecewise:
    """Factors ``values`` at context sizes ``knots``, with each segment's rise and run computed once."""

    knots: tuple[float, ...]
    values: tuple[float, ...]

    @cached_property
    def rises(self) -> tuple[float, ...]:
        """``v_{i+1} - v_i`` of each segment."""
        return tuple(b - a for a, b in zip(self.values, self.values[1:], strict=False))

    @cached_property
    def runs(self) -> tuple[float, ...]:
        """``k_{i+1} - k_i`` of each segment."""
        return tuple(b - a for a, b in zip(self.knots, self.knots[1:], strict=False))

    @cached_property
    def arrays(self):
        """(knots, values, rises, runs) as float64 arrays, for the array form of the rule."""
        import numpy as np  # here, not at the top: compiling a scenario need not import NumPy

        return tuple(np.array(x, dtype=np.float64) for x in (self.knots, self.values, self.rises, self.runs))

    @property
    def lowest(self) -> float:
        return min(self.values)

    @property
    def highest(self) -> float:
        return max(self.values)


@dataclass(frozen=True)
class ContextSpeed:
    """A tier's factors by context size: on its drawn TTFT and on its output speed (None: that one is 1)."""

    ttft: Piecewise | None
    tps: Piecewise | None


def _curve(tokens: list[int], factors: list[float] | None) -> Piecewise | None:
    if factors is None or all(f == 1.0 for f in factors):
        return None
    return Piecewise(tuple(float(t) for t in tokens), tuple(float(f) for f in factors))


def compile_context_speed(spec) -> ContextSpeed | None:
    """A :class:`ContextSpeed` from a ``context_speed`` spec (None for no spec, or one whose factors are all 1)."""
    if spec is None:
        return None
    ttft, tps = _curve(spec.tokens, spec.ttft_x), _curve(spec.tokens, spec.output_tps_x)
    if ttft is None and tps is None:
        return None
    return ContextSpeed(ttft, tps)

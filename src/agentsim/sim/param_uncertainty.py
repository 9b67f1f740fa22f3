"""Parameter uncertainty: an interval for the mean wall time that includes the error of the speeds.

The Monte-Carlo CI (``wall_time_s.ci95``) says how well the runs pin down the mean *for the
speeds given*. The speeds themselves are uncertain: a calibrated profile is fitted to a few
dozen requests, a hand-set ``output_tps: 60`` is a guess. A model can say how uncertain::

    models:
      m:
        ...
        uncertainty: {output_tps_x: {uniform: {low: 0.8, high: 1.2}}, ttft_x: {lognormal: {median: 1, p90: 1.3}}}

Each factor (``ttft_x`` on the drawn TTFT, ``output_tps_x`` on the output speed,
``prefill_tps_x`` on the prefill speed; default 1) is drawn **once per parameter set**, not per
call or per run. With ``uncertainty: parameters`` at the top level of the scenario (or
``agentsim run --uncertainty parameters``), agentsim runs the method below and adds
``wall_time_s.param_ci95`` to every variant of ``summary.json`` and a row to the run table.
Without it nothing changes (no key, same bytes).

**Method (outer draw over parameter sets, inner Monte-Carlo runs).** For ``k = 1..K``
(:data:`PARAMETER_SETS`), draw every model's factors from a random stream of its own (seeded
by the scenario seed, ``k`` and the model's position), multiply them into every speed tier of
the model, and simulate the scenario's ``runs`` runs **with the scenario's seed**: every
parameter set sees the same random numbers (common random numbers), so the spread of the K
means is the parameters' effect, not Monte-Carlo noise, and the variants keep their common
random numbers inside each draw. With ``m_k`` the mean wall time of set ``k``, ``s`` the
standard deviation of the ``m_k`` and ``h`` the half-width of the Monte-Carlo CI of the point
run (factors 1), the interval is

    mean(m_k) ± sqrt(h² + (1.96 s)²)

(the law of total variance: parameter spread and Monte-Carlo error add as variances). With no
spread (every factor constant) it is the Monte-Carlo CI exactly. **Cost:** K + 1 simulations
instead of one (K = 20), so 21 times the run time.
"""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np

from agentsim.sim.summary_model import Summary, as_summary

__all__ = ["PARAMETER_SETS", "parameter_ci95", "plan_with_factors"]

PARAMETER_SETS = 20  # K: parameter sets drawn
Z95 = 1.959963984540054
_STREAM = 0x9A7A  # random-stream tag of parameter draws (apart from every simulation stream)


def plan_with_factors(plan, factors: dict[str, tuple[float, float, float]]):
    """A copy of the plan whose tiers of each model have (ttft_x, output_tps_x, prefill_tps_x) multiplied in."""
    tiers = []
    for t in plan.tiers:
        if t.model in factors:
            fx, gx, px = factors[t.model]
            t = dataclasses.replace(t, ttft_x=t.ttft_x * fx, tps_x=t.tps_x * gx, prefill_tps=t.prefill_tps * px)
        tiers.append(t)
    out = copy.copy(plan)
    out.tiers = tiers
    out.memo = {}  # worked out from the tiers anew
    return out


def _draws(scenario, seed: int, k: int) -> dict[str, tuple[float, float, float]]:
    from agentsim.plan.distributions import sampler

    out = {}
    for i, (name, spec) in enumerate(scenario.models.items()):
        u = getattr(spec, "uncertainty", None)
        if u is None:
            continue
        rng = np.random.default_rng([seed, _STREAM, k, i])
        vals = []
        for key in ("ttft_x", "output_tps_x", "prefill_tps_x"):
            s = sampler(getattr(u, key))
            vals.append(float(s.ppf(rng.uniform(1e-12, 1 - 1e-12, 1))[0]))
        out[name] = tuple(vals)
    return out


def parameter_ci95(scenario, plan, point: Summary | dict, runs: int, seed: int, simulate, sets: int = PARAMETER_SETS):
    """``variant -> [low, high]``: the parameter-aware interval of the mean wall time.

    ``point`` is the summary document of the run with every factor 1; ``simulate(plan)`` runs a
    plan with the scenario's runs and seed and returns its summary document (each a :class:`Summary`
    or its dict).
    """
    point = as_summary(point)
    means = {name: [] for name in point.variants}
    for k in range(sets):
        doc = as_summary(simulate(plan_with_factors(plan, _draws(scenario, seed, k))))
        for name, v in doc.variants.items():
            means[name].append(v.wall_time_s.mean)
    out = {}
    for name, v in point.variants.items():
        m = [x for x in means[name] if x is not None]
        lo, hi = v.wall_time_s.ci95
        if not m or lo is None:
            out[name] = [None, None]
            continue
        if float(np.ptp(m)) == 0.0:  # no spread (np.std of equal values need not be 0): the Monte-Carlo CI
            out[name] = [lo, hi]
            continue
        sd = float(np.std(m, ddof=1))
        h = (hi - lo) / 2
        half = math.sqrt(h * h + (Z95 * sd) ** 2)
        centre = float(np.mean(m))
        out[name] = [centre - half, centre + half]
    return out

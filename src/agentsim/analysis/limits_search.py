"""The smallest limits that keep failed runs under a share: ``optimize --max-failed-share`` over limit candidates.

The candidates are the grid points of a sweep (:mod:`agentsim.analysis.sweeps`): ``--set``/``--zip``
options or the scenario's ``sweeps:``, listed from the smallest limits up (a ladder of presets,
``limits.NAME.preset=anthropic/tier-1/opus-4,anthropic/tier-2/opus-4,...``, or two accounts' limits
varied together with ``--zip``). Every candidate is simulated with the same seed (common random numbers).
A candidate is *feasible* when, in every variant considered, the share of runs that failed or did not
finish (a workload's ``failed_share``: of the runs counted in its window) is at most the bound. The
answer is the first feasible candidate in the order given -- the smallest limits, as the user ordered
them -- so a higher tier is only chosen when the lower ones fail too many runs. For each candidate the
table names, per variant, the failed share, the throughput, the 429s and the binding account and limit
(the one that refused the most requests: :mod:`agentsim.sim.binding`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from agentsim.analysis.sweeps import Sweep

__all__ = ["LimitChoice", "smallest_limits"]


@dataclass(frozen=True)
class LimitChoice:
    """The candidates (one row per grid point and variant considered), the bound, and the point chosen."""

    sweep: Sweep
    max_failed_share: float
    variants: list[str]
    candidates: pd.DataFrame  # point, the swept columns, variant, failed_share, throughput, 429s, binding, ...
    chosen: int | None  # the grid point chosen (None: no candidate meets the bound)
    closest: int  # the point with the smallest worst failed share (the chosen one when feasible)

    @property
    def feasible(self) -> bool:
        return self.chosen is not None


def smallest_limits(sw: Sweep, max_failed_share: float, variants: list[str] | None = None) -> LimitChoice:
    """The first grid point of ``sw`` whose ``variants`` (default: all) have at most ``max_failed_share``
    of their runs failed or unfinished; raises ValueError for a bound outside [0, 1) or an unknown variant."""
    if not (0.0 <= max_failed_share < 1.0) or math.isnan(max_failed_share):
        raise ValueError(f"--max-failed-share {max_failed_share}: give a share from 0 to below 1, e.g. 0.01")
    names = variants if variants else sw.variants
    unknown = [v for v in names if v not in sw.variants]
    if unknown:
        raise ValueError(f"no variant named {unknown[0]!r} (variants: {', '.join(sw.variants)})")
    t = sw.table
    if "failed_share" not in t.columns:
        raise ValueError(
            "no run of this scenario can fail (it has no limits, error rates, timeouts or workload), so "
            "every candidate meets --max-failed-share: give the accounts limits: (docs/limits.md)"
        )
    keep = ["point", *sw.columns, "variant", "failed_share"]
    figures = ("runs_completed", "runs_counted", "throughput_runs_per_hour", "rejected_429", "binding_account",
               "binding_limit", "wall_mean_s", "cost_mean_usd")  # fmt: skip
    keep += [c for c in figures if c in t.columns]
    cand = t.loc[t["variant"].isin(names), keep].reset_index(drop=True)
    worst = cand.groupby("point", sort=True)["failed_share"].max()
    ok = worst[worst <= max_failed_share]
    chosen = int(ok.index[0]) if len(ok) else None
    closest = chosen if chosen is not None else int(worst.idxmin())
    cand["meets"] = cand["point"].map(worst <= max_failed_share).astype(bool)
    return LimitChoice(sw, float(max_failed_share), list(names), cand, chosen, closest)

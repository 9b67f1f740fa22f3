"""A sweep's diminishing returns: the marginal gain per unit of a swept value, and the knee, per variant.

For one numeric swept column ``axis`` of a :class:`~agentsim.analysis.sweeps.Sweep` (default: the first
whose values are all numbers) and one figure of its table ``metric`` (default: the mean wall time, or the
mean waiting where the scenario has turns), every line of the grid along ``axis`` -- one variant, the other
swept columns held at one value each (columns varied together with ``axis`` move with it) -- is sorted by
``axis`` and read with :mod:`agentsim.analysis.knee`: the gain per unit of ``axis`` from the previous point
(seconds saved per token/s, for a speed sweep), that gain as a share of the figure, and the Kneedle knee,
the point after which more of ``axis`` buys markedly less.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from agentsim.analysis.knee import find_knee, higher_is_better, marginal_gains

if TYPE_CHECKING:
    from agentsim.analysis.sweeps import Sweep

__all__ = ["default_axis", "default_metric", "sweep_gains", "sweep_knees"]


def default_axis(sw: Sweep) -> str:
    """The first swept column whose values are all numbers (booleans are not) and take at least two values."""
    for a in sw.axes:
        vals = list(a.values)
        numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in vals)
        if numeric and len(set(vals)) > 1:
            return a.text
    raise ValueError("no swept value is a number that takes two or more values: marginal gains need one")


def default_metric(sw: Sweep) -> str:
    """The mean waiting where the scenario has turns (what the person waits for), else the mean wall time."""
    basis = sw.table.get("time_basis")
    return "waiting_mean_s" if basis is not None and (basis == "waiting_s").any() else "wall_mean_s"


def _lines(sw: Sweep, axis: str, metric: str):
    if axis not in sw.columns:
        raise ValueError(f"'{axis}' is not swept (swept: {', '.join(sw.columns)})")
    if metric not in sw.table.columns:
        raise ValueError(f"'{metric}' is not a column of the sweep table")
    keys = ["variant", *sw.independent_of(axis)]
    for key, g in sw.table.groupby(keys, sort=False, observed=True, dropna=False):
        yield (
            dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True)),
            g.sort_values(axis, kind="stable"),
        )


def sweep_gains(sw: Sweep, axis: str | None = None, metric: str | None = None) -> pd.DataFrame:
    """One row per grid point and variant, in the sweep table's order: ``point``, the swept columns,
    ``variant``, ``metric``, ``gain_per_unit``, ``gain_share`` and ``knee`` (True at the line's knee)."""
    axis = axis or default_axis(sw)
    metric = metric or default_metric(sw)
    higher = higher_is_better(metric)
    parts = []
    for _, g in _lines(sw, axis, metric):
        x, y = g[axis].to_numpy(dtype=np.float64), g[metric].to_numpy(dtype=np.float64)
        gain, share = marginal_gains(x, y, higher)
        k = find_knee(x, y, higher)
        parts.append(g[["point", *sw.columns, "variant", metric]].assign(
            gain_per_unit=gain, gain_share=share, knee=(x == k.x) if k is not None else np.zeros(len(x), dtype=bool)
        ))  # fmt: skip
    out = pd.concat(parts).sort_index() if parts else pd.DataFrame()
    out.attrs.update(axis=axis, metric=metric, higher_is_better=higher)
    return out.reset_index(drop=True)


def sweep_knees(sw: Sweep, axis: str | None = None, metric: str | None = None) -> pd.DataFrame:
    """One row per line of the grid along ``axis`` (a variant, the other swept columns): ``knee_x`` (the swept
    value at the knee; NaN: none found), ``knee_y`` (``metric`` there) and ``gain_per_unit_after`` (the gain of
    the next step: what one more unit buys beyond the knee)."""
    axis = axis or default_axis(sw)
    metric = metric or default_metric(sw)
    higher = higher_is_better(metric)
    rows = []
    for key, g in _lines(sw, axis, metric):
        k = find_knee(g[axis].to_numpy(dtype=np.float64), g[metric].to_numpy(dtype=np.float64), higher)
        rows.append({**key, "knee_x": np.nan if k is None else k.x, "knee_y": np.nan if k is None else k.y,
                     "gain_per_unit_after": np.nan if k is None or k.gain_after is None else k.gain_after})  # fmt: skip
    out = pd.DataFrame(rows)
    out.attrs.update(axis=axis, metric=metric, higher_is_better=higher)
    return out

"""Where a calibrated profile holds: the token ranges and concurrency it was measured at.

A fit is only known inside the data it came from. ``agentsim calibrate`` records, under a
profile's ``measured:`` key::

    measured:
      input_tokens: [480, 16020]    # smallest and largest prompt (cached tokens included)
      output_tokens: [120, 300]     # smallest and largest response
      concurrency: 4                # most requests in flight at once (from start times and latencies)
      dropped: [prefill_tps]        # terms left out for lack of spread (optional)

**Requests in flight.** Request *i* was sent at ``start_i`` and finished at ``start_i +
latency_i``; the number in flight when *j* was sent is the number of requests with
``start_i <= start_j < start_i + latency_i`` (*j* itself included). Sorting the starts and
the ends gives it for every request at once: ``#starts <= start_j - #ends <= start_j``.
Requests are counted within their own file (two files may use different clocks).
The profile's ``concurrency`` is the largest of these counts.

:mod:`agentsim.plan.profile_ranges` compares a scenario with these ranges.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["in_flight", "measured_range", "requests_in_flight"]


def in_flight(start_s: np.ndarray, latency_s: np.ndarray) -> np.ndarray:
    """Requests in flight (this one included) when each request was sent; NaN where unknown."""
    start = np.asarray(start_s, dtype=float)
    end = start + np.asarray(latency_s, dtype=float)
    known = np.isfinite(start) & np.isfinite(end)
    out = np.full(start.shape, np.nan)
    if not known.any():
        return out
    starts, ends = np.sort(start[known]), np.sort(end[known])
    s = start[known]
    out[known] = np.searchsorted(starts, s, side="right") - np.searchsorted(ends, s, side="right")
    return out


def requests_in_flight(use: pd.DataFrame) -> np.ndarray:
    """:func:`in_flight` for every row, counted within each source file (files may use different clocks)."""
    out = np.full(len(use), np.nan)
    files = use["source_file"] if "source_file" in use else pd.Series(0, index=use.index)
    for _, idx in use.groupby(files.to_numpy(), sort=False).indices.items():
        out[idx] = in_flight(use["start_s"].to_numpy(float)[idx], use["latency_s"].to_numpy(float)[idx])
    return out


def _span(values: pd.Series) -> list[int] | None:
    v = pd.to_numeric(values, errors="coerce").to_numpy(float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return None
    return [int(np.floor(v.min())), int(np.ceil(v.max()))]


def measured_range(use: pd.DataFrame, dropped: list[str] | None = None) -> dict[str, Any] | None:
    """The ``measured:`` block of a profile from the usable rows of a measurement table."""
    out: dict[str, Any] = {}
    for key in ("input_tokens", "output_tokens"):
        span = _span(use[key])
        if span is not None:
            out[key] = span
    flight = requests_in_flight(use)
    if np.isfinite(flight).any():
        out["concurrency"] = int(np.nanmax(flight))
    if dropped:
        out["dropped"] = list(dropped)
    return out or None

"""Queueing in measurements: told apart from the time to first token, or at least flagged.

A server that serves at most *c* streams at once makes the others wait. Measured at a
concurrency above *c*, that wait lands in every request's TTFT, and a profile fitted to it
predicts slow first tokens even for a lone call; a scenario that also declares the cap then
counts the queue twice. ``agentsim calibrate`` looks for the wait in two places, per request
*i* with ``n_i`` requests in flight when it was sent (:func:`agentsim.measure.measured_range.in_flight`):

1. **Time to headers** (``headers_s``, written by ``agentsim measure``). A server or proxy
   that queues before answering sends its headers late. Let ``h0`` be the unqueued time to
   headers (the smallest ``headers_s``: connection set-up and upload, tens of milliseconds;
   at a steady concurrency above a server's cap nearly every request waits, so only the few
   sent before the queue formed show it, and a higher quantile would be a queued value;
   network jitter of a few milliseconds is taken out with the wait). The headers are
   *queued* when requests overlapped (more than one in flight) and either ``headers_s``
   grows with ``n_i`` (Spearman rank correlation at least :data:`MIN_RHO`, p below
   :data:`MAX_P`; needs ``n_i`` to vary) or the median excess ``headers_s - h0`` exceeds
   :data:`HEADERS_WAIT_S` (a closed loop above a server's cap keeps ``n_i`` constant, so
   only the size of the wait shows). Either way the headers must come clearly before the
   first token (median ``ttft_s - headers_s`` at least :data:`MIN_AFTER_HEADERS_S`): a
   server that sends its headers with the first token has put its whole TTFT into
   ``headers_s``, and nothing is taken out. The excess ``w_i = max(0, headers_s_i - h0)`` is
   then queueing: it is taken out of the request's TTFT before the fit (the first token
   never precedes the headers, so at least ``h0`` is left).
2. **TTFT itself.** A server that sends headers at once and queues inside leaves no trace
   but the TTFT: when the TTFT (after step 1) still grows with ``n_i`` by the same test,
   the queueing cannot be split off; calibrate warns, and the profile holds only at the
   concurrency it was measured at.

The growth tests need ``n_i`` to vary: at a steady concurrency (``measure --concurrency
20`` keeps 20 in flight) only the ramp-up, the first requests sent a moment apart, varies it,
which keeps the rank correlation low (most values tie) but clearly significant. At
``--concurrency 1`` there is nothing to test and nothing to flag. The profile says what was found under
``measured.queueing``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from agentsim.measure.measured_range import requests_in_flight

__all__ = ["HEADERS_WAIT_S", "MAX_P", "MIN_AFTER_HEADERS_S", "MIN_RHO", "Queueing", "find_queueing"]

MIN_RHO = 0.1  # rank correlation with requests in flight that counts as growth (ties keep it low)
MAX_P = 0.001  # ... and its largest p-value
MIN_ROWS = 20
HEADERS_WAIT_S = 0.1  # a median wait for headers above this (seconds) is queueing
MIN_AFTER_HEADERS_S = 0.02  # headers must precede the first token by this much (median) to be told apart


@dataclass(frozen=True)
class Queueing:
    headers_rho: float | None  # Spearman rho of headers_s with requests in flight (None: not testable)
    headers_p: float | None
    ttft_rho: float | None  # of TTFT (queueing from headers removed) with requests in flight
    ttft_p: float | None
    removed_s: np.ndarray  # seconds of header wait taken out of each request's TTFT
    peak: int | None  # most requests in flight

    @property
    def headers_queued(self) -> bool:
        return bool(self.removed_s.any())

    @property
    def ttft_grows(self) -> bool:
        return _grows(self.ttft_rho, self.ttft_p)

    def block(self) -> dict[str, Any] | None:
        """The profile's ``measured.queueing`` (None when nothing was found)."""
        if not (self.headers_queued or self.ttft_grows):
            return None
        return {
            "headers_queued": self.headers_queued,
            "ttft_grows": self.ttft_grows,
            "removed_median_s": float(np.median(self.removed_s)),
            "valid_at_concurrency": self.peak if self.ttft_grows else None,
        }

    def warnings(self) -> list[str]:
        out = []
        if self.headers_queued:
            out.append(
                f"the response headers waited (median {np.median(self.removed_s):.3g} s beyond the unqueued "
                f"time to headers, up to {self.peak} requests in flight): the server queued requests; the wait "
                "was taken out of the TTFT before the fit"
            )
        if self.ttft_grows:
            out.append(
                f"the time to first token grows with the requests in flight (Spearman rho {self.ttft_rho:.2f}, "
                f"up to {self.peak} in flight): it includes queueing that cannot be split off, so the profile "
                f"holds only at a concurrency of about {self.peak}; a scenario that declares the server's "
                "concurrency cap would count the queue twice. Measure below the cap (e.g. --concurrency 1)"
            )
        return out


def _grows(rho: float | None, p: float | None) -> bool:
    return rho is not None and p is not None and rho >= MIN_RHO and p < MAX_P


def _spearman(x: np.ndarray, y: np.ndarray) -> tuple[float | None, float | None]:
    from scipy import stats

    k = np.isfinite(x) & np.isfinite(y)
    if k.sum() < MIN_ROWS or np.ptp(x[k]) == 0 or np.ptp(y[k]) == 0:
        return None, None
    res = stats.spearmanr(x[k], y[k])
    return float(res.statistic), float(res.pvalue)


def find_queueing(use: pd.DataFrame) -> Queueing:
    """Look for queueing in the usable rows of a measurement table (see the module docstring)."""
    flight = requests_in_flight(use)
    ttft = use["ttft_s"].to_numpy(float)
    removed = np.zeros(len(use))
    hrho = hp = None
    if "headers_s" in use:
        headers = use["headers_s"].to_numpy(float)
        hrho, hp = _spearman(flight, headers)
        known = np.isfinite(headers)
        overlapped = bool(np.isfinite(flight).any() and np.nanmax(flight) > 1)
        if known.sum() >= MIN_ROWS and overlapped:
            h0 = float(np.min(headers[known]))
            queued = _grows(hrho, hp) or float(np.median(headers[known] - h0)) > HEADERS_WAIT_S
            apart = float(np.median(ttft[known] - headers[known])) >= MIN_AFTER_HEADERS_S
            if queued and apart:  # the first token never comes before the headers: at least h0 is left
                removed = np.where(known, np.clip(headers - h0, 0.0, None), 0.0)
    trho, tp = _spearman(flight, ttft - removed)
    peak = int(np.nanmax(flight)) if np.isfinite(flight).any() else None
    return Queueing(hrho, hp, trho, tp, removed, peak)

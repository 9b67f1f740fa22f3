"""Runs that did not complete: how many per variant, and the warning every output repeats.

Wall-time and cost figures describe *completed* runs (a run that used up its retries, hit a ``fail``
step or was still running when a workload ended has no wall time). When more than 1% of a variant's
runs did not complete, the figures flatter it, and ``run``, ``size`` and the report say so with the
same sentence. The counts are the summary's (``summary.json``: a workload's ``runs_counted``,
``runs_failed`` and ``runs_unfinished``) or, in replications, the runs table's ``status`` column
(0 completed, 1 failed, 2 unfinished), so every output shows exactly the numbers ``run`` shows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from agentsim.sim.results import Results
from agentsim.sim.summary_model import Summary, as_summary

__all__ = ["THRESHOLD", "Completion", "completion", "runs_per_variant"]

THRESHOLD = 0.01  # a share of runs not completed above which the figures are flagged


@dataclass(frozen=True)
class Completion:
    """How the runs of one variant ended."""

    variant: str
    runs: int  # runs counted (a workload's runs started in its window; else every replication)
    failed: int
    unfinished: int
    workload: bool
    defines_success: bool

    @property
    def not_completed(self) -> int:
        return self.failed + self.unfinished

    @property
    def share(self) -> float:
        return self.not_completed / self.runs if self.runs else 0.0

    @property
    def flagged(self) -> bool:
        """Whether the figures need the warning (none completed, or more than :data:`THRESHOLD` did not)."""
        return self.not_completed > 0 and (self.not_completed == self.runs or self.share > THRESHOLD)

    def warning(self) -> str:
        """The sentence (capitalised, no trailing period) ``run``, ``size`` and the report print."""
        if self.workload:
            why = "(a fail step, or retries used up)" if self.defines_success else "after using up their retries"
            return (
                f"In variant '{self.variant}', {self.share:.0%} of the runs counted did not complete "
                f"({self.failed:,} failed {why}, {self.unfinished:,} unfinished); "
                "wall-time and cost figures describe the completed runs only"
            )
        head = (
            f"In variant '{self.variant}', {self.share:.0%} of the runs ({self.not_completed:,} of {self.runs:,}) "
            "did not complete ("
            + (
                "they failed: a fail step, or retries used up); "
                if self.defines_success
                else "they failed, e.g. after using up their retries); "
            )
        )
        if self.not_completed == self.runs:
            return head + (
                "no run completed, so this variant has no wall-time or cost figures: check its models' "
                "error_rate, timeout and limits"
            )
        return head + "wall-time and cost figures describe the completed runs only"


def completion(res: Results, doc: Summary | dict | None = None) -> list[Completion]:
    """Per variant, how its runs ended (``doc``: the summary (``res.summary_model()``, or the dict), when already
    made)."""
    doc = as_summary(doc) if doc is not None else res.summary_model()
    out = []
    status_col = res.runs["status"].to_numpy() if "status" in res.runs else None
    variant_col = res.runs["variant"]  # compared as categorical codes: no string per row
    for name, v in doc.variants.items():
        succeeds = v.success is not None
        w = v.workload
        if w is not None:
            out.append(Completion(name, w.runs_counted, w.runs_failed, w.runs_unfinished, True, succeeds))
            continue
        if status_col is None:
            out.append(Completion(name, res.n_runs, 0, 0, False, succeeds))
            continue
        status = status_col[(variant_col == name).to_numpy()]
        failed = int(np.count_nonzero(status == 1))
        unfinished = int(np.count_nonzero(status == 2))
        out.append(Completion(name, int(status.size), failed, unfinished, False, succeeds))
    return out


def runs_per_variant(doc: Summary | dict, n_runs: int) -> dict[str, int]:
    """Runs per variant as ``run`` counts them: a workload's ``runs_counted``, else the replications."""
    return {name: v.workload.runs_counted if v.workload is not None else n_runs
            for name, v in as_summary(doc).variants.items()}  # fmt: skip

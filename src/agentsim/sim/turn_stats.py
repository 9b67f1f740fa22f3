"""What the person waits for (contract v1.3): their turns' durations, gathered from the blocks of a simulation.

A scenario with ``turns`` steps (:mod:`agentsim.steps.turns`) has the engines keep every turn's duration;
the runs table sums them per run (``waiting_s``, ``turns``: :func:`agentsim.sim.records.waiting`), and
:class:`TurnSamples` keeps the turns themselves, with the run each belongs to, so that ``summary.json``'s
``turn_s`` and an ``slo: {turn_s: ...}`` target are taken over the turns of the runs a summary describes.
A scenario without ``turns`` has one turn per run, its wall time: nothing is kept, the runs table has it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["TURN_PERCENTILES", "TurnSamples", "per_run_worst", "turn_summary"]

TURN_PERCENTILES = (50, 90, 95, 99)


class TurnSamples:
    """One variant's turns: their seconds and the run (of the simulation) each belongs to, in block order."""

    def __init__(self) -> None:
        self._seconds: list[np.ndarray] = []
        self._runs: list[np.ndarray] = []
        self._joined: tuple[np.ndarray, np.ndarray] | None = None

    def add(self, seconds: np.ndarray, runs: np.ndarray) -> None:
        if seconds.size:
            self._seconds.append(np.asarray(seconds, dtype=np.float64))
            self._runs.append(np.asarray(runs, dtype=np.int64))
            self._joined = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._joined is None:
            if self._seconds:
                self._joined = (np.concatenate(self._seconds), np.concatenate(self._runs))
            else:
                self._joined = (np.zeros(0), np.zeros(0, dtype=np.int64))
        return self._joined

    def of_runs(self, run_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The seconds of the turns of the runs ``run_ids``, and each turn's position in ``run_ids``."""
        seconds, runs = self.arrays()
        if not run_ids.size or not runs.size:
            return np.zeros(0), np.zeros(0, dtype=np.int64)
        top = int(max(run_ids.max(), runs.max())) + 1
        position = np.full(top, -1, dtype=np.int64)
        position[run_ids] = np.arange(run_ids.size)
        where = position[runs]
        keep = where >= 0
        return seconds[keep], where[keep]


def per_run_worst(seconds: np.ndarray, positions: np.ndarray, n: int) -> np.ndarray:
    """Each of ``n`` runs' longest turn (NaN for a run without a completed turn)."""
    out = np.full(n, np.nan)
    np.fmax.at(out, positions, seconds)
    return out


def turn_summary(seconds: np.ndarray) -> dict[str, Any]:
    """``turn_s``: mean and percentiles over turns (None for no turns)."""
    if not seconds.size:
        return {"mean": None, **{f"p{p}": None for p in TURN_PERCENTILES}}
    mean = float(np.mean(seconds))
    values = np.percentile(seconds, TURN_PERCENTILES)
    return {"mean": mean, **{f"p{p}": float(v) for p, v in zip(TURN_PERCENTILES, values, strict=True)}}

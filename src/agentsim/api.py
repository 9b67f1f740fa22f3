"""The notebook API of every command: ``agentsim.sweep``, ``optimize``, ``size``, ``fit``, ``calibrate``,
``replay`` and ``report``, beside ``agentsim.load`` and ``agentsim.simulate``.

Each is a thin function over the same library code its command runs, takes what the command takes (a
scenario file, or for most also a ``Scenario`` or a plain ``dict``; session or measurement files), prints
nothing and writes nothing unless asked (``report(out=...)``), and returns a result whose tables are
pandas DataFrames (docs/api.md):

==============  ==========================================================================================
``sweep``       :class:`~agentsim.analysis.sweeps.Sweep`: ``.table``, ``.gains()``, ``.knees()``
``optimize``    :class:`~agentsim.analysis.optimize.Optimum`: ``.choices``, ``.chosen``, ``.frontier``
``size``        :class:`Sized`: ``.spend``, ``.break_even``, ``.cheapest`` and the :class:`Results`
``fit``         :class:`Fitted`: ``.scenario`` (a dict), ``.comparison``, ``.report``
``calibrate``   :class:`Calibrated`: ``.measurements`` and the fit (``.ttft``, ``.tps``, ``.counts``)
``replay``      :class:`~agentsim.replay.retime.ReplayResult`: ``.summary()``, ``.sessions``
``report``      the HTML page (a string), written to ``out`` when given
==============  ==========================================================================================

This module sits outside the layers (like the package root, the composition root): it is imported only
when one of these names is first used (``agentsim.__getattr__``), so ``import agentsim`` stays light.
Errors are the library's: :class:`agentsim.ScenarioError` for a bad scenario, ``ValueError`` for a bad
argument, each one paragraph naming what to fix.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from agentsim.model.scenario import Scenario
from agentsim.sim.results import Results

__all__ = ["Calibrated", "Fitted", "Sized", "calibrate", "fit", "optimize", "replay", "report", "size", "sweep"]

PathLike = str | os.PathLike


def _scenario(scenario: Scenario | PathLike | Mapping) -> Scenario:
    """A path, a ``dict`` or a ``Scenario`` as a checked scenario (the rule of ``agentsim.simulate``)."""
    from agentsim.plan.validation import load, parse

    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, Mapping):
        return parse(dict(scenario))
    return load(Path(scenario))


def _axes(set: Mapping[str, Any] | Iterable[str] | str | None, zip: Iterable[str] | None):
    """``set``: ``{PATH: VALUES}`` (a list, or the text of ``--set``: ``1:4:0.5``, ``a,b``) or ``PATH=VALUES``
    strings; ``zip``: ``PATH=VALUES`` strings varied together."""
    from agentsim.analysis.sweeps import parse_set, parse_zip

    items = [set] if isinstance(set, str) else set
    axes = []
    if isinstance(items, Mapping):
        for path, values in items.items():
            text = values if isinstance(values, str) else "[" + ", ".join(map(_yaml, values)) + "]"
            axes.append(parse_set(f"{path}={text}"))
    else:
        axes += [parse_set(s) for s in items or []]
    axes += parse_zip(list(zip or []))
    return axes or None


def _yaml(value: Any) -> str:
    import yaml

    return yaml.safe_dump(value, default_flow_style=True, width=10_000).strip().removesuffix("\n...")


def sweep(
    scenario: PathLike | Mapping,
    set: Mapping[str, Any] | Iterable[str] | str | None = None,  # (the names of the command's options)
    *,
    zip: Iterable[str] | None = None,
    runs: int | None = None,
    seed: int | None = None,
    workers: int | None = 1,
    executor: str = "process",
    scheduler: str | None = None,
):
    """``agentsim sweep``: a scenario file (or a ``dict`` shaped like one) over a grid (``set``, else its
    ``sweeps:``); one process by
    default (``workers=None``: every core). ``.table`` has one row per grid point and variant; ``.gains()``
    the marginal gain per unit of a swept value, ``.knees()`` where returns diminish."""
    from agentsim.analysis.sweeps import run_sweep

    source = dict(scenario) if isinstance(scenario, Mapping) else scenario
    return run_sweep(source, _axes(set, zip), runs=runs, seed=seed, workers=workers, executor=executor,
                     scheduler=scheduler)  # fmt: skip


def optimize(scenario: Scenario | PathLike | Mapping, **options):
    """``agentsim optimize``: speed tiers (or models, ``models=[...]``) per step under one of
    ``budget_usd_per_run``, ``max_time_s`` or ``min_slo_share`` (the keywords of
    :func:`agentsim.analysis.optimize.optimize`); with ``slo`` targets a budget maximises the share within them."""
    from agentsim.analysis.optimize import optimize as run_optimize

    return run_optimize(_scenario(scenario), **options)


@dataclass(frozen=True)
class Sized:
    """What ``agentsim size`` prints: per variant the monthly spend, the break-even value of an hour, and which
    variant is cheapest at which value of time; ``volume.derivation`` says where the runs a month come from."""

    results: Results
    volume: Any  # agentsim.analysis.volume.Volume
    spend: pd.DataFrame
    break_even: pd.DataFrame
    cheapest: pd.DataFrame


def size(
    scenario: Scenario | PathLike | Mapping,
    runs_per_month: float | None = None,
    *,
    seats: float | None = None,
    runs_per_seat_per_day: float | None = None,
    working_days: float | None = None,
    runs: int | None = None,
    seed: int | None = None,
    workers: int = 1,
) -> Sized:
    """``agentsim size``: monthly API spend, hours of waiting saved and the premium per saved hour, per variant
    (the volume: ``runs_per_month``, or seats x runs per seat per working day x working days, else the
    scenario's ``workload.volume``)."""
    from agentsim.analysis.tradeoffs import break_even, cheapest_intervals, spend_sizing, variant_table
    from agentsim.analysis.volume import monthly_volume
    from agentsim.sim.simulation import simulate

    sc = _scenario(scenario)
    volume = monthly_volume(sc, runs_per_month, seats=seats, runs_per_seat_per_day=runs_per_seat_per_day,
                            working_days=working_days)  # fmt: skip
    res = simulate(sc, runs=runs, seed=seed, workers=workers)
    vt = variant_table(res)
    vot = res.value_of_time
    return Sized(res, volume, spend_sizing(vt, volume.runs_per_month, value_of_time=vot),
                 break_even(vt, value_of_time=vot), cheapest_intervals(vt))  # fmt: skip


@dataclass(frozen=True)
class Fitted:
    """A scenario fitted to recorded sessions (``agentsim fit``): ``scenario`` in the file vocabulary (a dict;
    its empirical distributions read ``STEM.samples.csv``, written by :meth:`write`), ``comparison`` the
    fitted scenario simulated against the sessions, quantity by quantity, and the whole ``report``."""

    result: Any  # agentsim.fit.agent_fit.FitResult

    @property
    def scenario(self) -> dict:
        return self.result.scenario

    @property
    def report(self) -> dict:
        return self.result.report

    @property
    def notes(self) -> list[str]:
        return list(self.result.notes)

    @property
    def comparison(self) -> pd.DataFrame:
        """One row per quantity: recorded and simulated mean, p50 and p95, the KS distance and quantile error."""
        rows = []
        for name, q in self.report["quantities"].items():
            rec, sim = q["recorded"], q["simulated"]
            rows.append({"quantity": name, "unit": q["unit"], "recorded_n": rec.get("n"),
                         **{f"{w}_{k}": d.get(k) for w, d in (("recorded", rec), ("simulated", sim))
                            for k in ("mean", "p50", "p95")},
                         "ks": q.get("ks"), "quantile_error": q.get("quantile_error")})  # fmt: skip
        return pd.DataFrame(rows).set_index("quantity")

    def write(self, folder: PathLike) -> list[Path]:
        """Write the set ``agentsim fit -o FOLDER/STEM.yaml`` writes (scenario, samples, profiles, report)."""
        from agentsim.viz.report import write_files

        return write_files(Path(folder), self.result.writers())


def _sessions(paths: Iterable[PathLike] | PathLike, fmt: str):
    from agentsim.traces.session_files import read_sessions

    items = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    return read_sessions([(Path(p), fmt) for p in items])


def _config(config):
    from agentsim.replay.config import ReplayConfig, load_replay_config

    if config is None:
        return ReplayConfig()
    return config if isinstance(config, ReplayConfig) else load_replay_config(config)


def fit(
    sessions: Iterable[PathLike] | PathLike,
    *,
    name: str = "fitted",
    fmt: str = "auto",
    config=None,
    idle: str = "include",
    holdout: float = 0.0,
    runs: int = 2000,
    sim_runs: int | None = None,
    project: str | None = None,
) -> Fitted:
    """``agentsim fit``: a scenario fitted to recorded sessions (files or folders in any format ``replay``
    reads), simulated and compared with them."""
    from agentsim.fit.agent_fit import fit_agent
    from agentsim.traces.session_files import select_sessions

    found, _ = _sessions(sessions, fmt)
    chosen = select_sessions(found, project=project)
    if not chosen:
        raise ValueError(f"none of the {len(found)} sessions found matches project {project!r}")
    return Fitted(fit_agent(chosen, name=name, stem=name, config=_config(config), idle=idle, holdout=holdout,
                            runs=runs, sim_runs=sim_runs))  # fmt: skip


@dataclass(frozen=True)
class Calibrated:
    """Measured requests (``measurements``, one row each) and the speeds fitted to them (``calibration``: its
    ``ttft``, ``tps``, ``goodness``, ``counts``... are read through this object too)."""

    calibration: Any  # agentsim.measure.calibrate.Calibration
    measurements: pd.DataFrame
    files: list[str] = field(default_factory=list)

    def __getattr__(self, name: str):
        return getattr(self.calibration, name)


def calibrate(files: Iterable[PathLike] | PathLike, *, model: str | None = None, fmt: str = "auto") -> Calibrated:
    """``agentsim calibrate``: TTFT, prefill speed and output speed fitted to measured requests (any format the
    command reads: agentsim's CSV, vLLM, llmperf, genai-perf...)."""
    from agentsim.measure.calibrate import calibrate as fit_speeds
    from agentsim.traces.measurement_files import read_measurements

    items = [files] if isinstance(files, str | os.PathLike) else list(files)
    table = read_measurements([str(f) for f in items], fmt)
    return Calibrated(fit_speeds(table, model), table, [str(f) for f in items])


def replay(
    sessions: Iterable[PathLike] | PathLike,
    variants: Iterable[str] | str = ("fast",),
    *,
    fmt: str = "auto",
    config=None,
    value_of_time: float | None = None,
    baseline: str | None = None,
):
    """``agentsim replay``: recorded sessions re-timed and re-priced under each variant (the text of
    ``--variant``: ``fast``, ``model=claude-haiku-4-5``...); ``.summary()`` is one row per variant."""
    from agentsim.replay.config import parse_variant
    from agentsim.replay.retime import replay as run_replay

    cfg = _config(config)
    found, reports = _sessions(sessions, fmt)
    specs = dict(parse_variant(v, cfg) for v in ([variants] if isinstance(variants, str) else variants))
    return run_replay(found, specs, cfg, reports=reports, value_of_time=value_of_time, baseline=baseline)


def report(scenario_file: PathLike, out: PathLike | None = None, **options) -> str:
    """``agentsim report``: the self-contained HTML page about a scenario file (the keywords of
    :func:`agentsim.viz.report.build_report`: ``runs``, ``seed``, ``runs_per_month``, ``seats``...), written
    to ``out`` when given (whole or not at all; never over the scenario or a file it reads)."""
    from agentsim.plan.validation import input_files, load
    from agentsim.viz.report import build_report, write_report

    page = build_report(scenario_file, **options)
    if out is not None:
        write_report(page, Path(out), inputs=input_files(load(Path(scenario_file))))
    return page

"""Writing a result folder: tables, the summary, the resolved scenario and figures.

Everything is first written into a temporary folder next to the target and only
moved into place once every file is complete, so an interrupted or failed write
never leaves a half-written result behind.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import yaml

from .results import Results, version

__all__ = ["resolved_scenario", "write_files", "write_results"]


def resolved_scenario(res: Results) -> dict:
    """The scenario as run: every default filled in, with the seed, runs and version used."""
    doc = res.scenario.model_dump(mode="json", exclude_none=True)
    doc["seed"] = res.seed
    doc["runs"] = res.n_runs
    if res.plan.prices_as_of is not None:  # the date catalog prices were looked up as of (pins "today")
        doc["prices_as_of"] = res.plan.prices_as_of.isoformat()
    return {"agentsim_version": version(), "engine": res.engine, **doc}


def write_files(out_dir: str | os.PathLike, writers: dict[str, Callable[[Path], None]]) -> list[Path]:
    """Write files atomically as a set: ``writers`` maps a file name to a function writing that path."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"{out} exists and is not a folder")
    parent = out.parent if str(out.parent) else Path(".")
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=parent))
    try:
        for name, write in writers.items():
            write(tmp / name)
        out.mkdir(exist_ok=True)
        written = []
        for name in writers:
            os.replace(tmp / name, out / name)
            written.append(out / name)
        return written
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def write_results(res: Results, out_dir: str | os.PathLike, extra: dict | None = None) -> list[Path]:
    """Write ``calls.parquet``, ``runs.parquet``, ``summary.json``, ``scenario.resolved.yaml`` and
    ``tradeoff.png`` into ``out_dir``."""

    def fig_writer(make):
        def write(path: Path):
            fig = make()
            fig.savefig(path, dpi=120)

        return write

    writers: dict[str, Callable[[Path], None]] = {
        "summary.json": lambda p: p.write_text(res.to_json(), encoding="utf-8"),
        "runs.parquet": lambda p: res.runs.to_parquet(p, index=False),
        "calls.parquet": lambda p: res.calls.to_parquet(p, index=False),
        "scenario.resolved.yaml": lambda p: p.write_text(
            yaml.safe_dump(resolved_scenario(res), sort_keys=False, allow_unicode=True), encoding="utf-8"
        ),
        "tradeoff.png": fig_writer(res.plot_tradeoff),
    }
    if res.plan.accounts or res.plan.workload is not None:
        writers["wait_cdf.png"] = fig_writer(res.plot_wait_cdf)
        if res.extra.get("outcomes"):
            writers["limits.png"] = fig_writer(res.plot_limits)
    writers.update(extra or {})
    return write_files(out_dir, writers)

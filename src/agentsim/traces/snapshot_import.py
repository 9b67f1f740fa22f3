"""``agentsim profiles import SOURCE FILE...``: saved provider listings in, one dated profile per endpoint out.

:func:`import_snapshots` reads each file with its source's reader (:mod:`agentsim.traces.openrouter`,
:mod:`agentsim.traces.artificial_analysis`), dates it (:func:`~agentsim.traces.provider_snapshots.taken_at_of`)
and groups the snapshots into profile documents
(:func:`~agentsim.traces.provider_snapshots.profile_documents`). Nothing is fetched. A file that
cannot be read, or a set of files that gives no profile at all, raises
:class:`~agentsim.traces.provider_snapshots.SnapshotFileError`.
"""

from __future__ import annotations

from pathlib import Path

from agentsim.traces.artificial_analysis import read_artificial_analysis
from agentsim.traces.openrouter import LATENCY_UNITS, read_openrouter
from agentsim.traces.provider_snapshots import ImportResult, SnapshotFileError, profile_documents, taken_at_of

__all__ = ["SOURCES", "import_snapshots"]

SOURCES = ("openrouter", "artificial-analysis")


def import_snapshots(
    source: str, paths: list[Path], taken_at: str | None = None, latency_unit: str = "auto"
) -> ImportResult:
    """Profiles from saved ``source`` listings (``openrouter`` or ``artificial-analysis``)."""
    if source not in SOURCES:
        raise SnapshotFileError(f"unknown source '{source}': choose {' or '.join(SOURCES)}")
    if latency_unit not in LATENCY_UNITS:
        raise SnapshotFileError(f"--latency-unit '{latency_unit}': choose {', '.join(LATENCY_UNITS)}")
    if not paths:
        raise SnapshotFileError("no file given: give the listings you downloaded")
    result = ImportResult()
    snapshots = []
    seen: set[Path] = set()
    for path in paths:
        if path.resolve() in seen:
            result.notes.append(f"{path}: given twice; read once")
            continue
        seen.add(path.resolve())
        if not path.is_file():
            raise SnapshotFileError(f"{path}: no such file (give the file you downloaded)")
        moment, hour_known, how = taken_at_of(path, taken_at)
        if source == "openrouter":
            snaps, skipped, notes = read_openrouter(path, moment, hour_known, latency_unit)
        else:
            snaps, skipped, notes = read_artificial_analysis(path, moment, hour_known)
        if not snaps and not skipped:
            raise SnapshotFileError(f"{path}: the listing has no endpoints")
        result.skipped += skipped
        result.notes += notes
        when = moment.isoformat().replace("+00:00", "Z") if hour_known else f"{moment.date()} (no time of day)"
        result.notes.append(f"{path}: taken at {when} (from {how})")
        snapshots += snaps
    profile_documents(snapshots, result)
    if not result.profiles:
        why = "; ".join(result.skipped[:5])
        raise SnapshotFileError(f"no endpoint with both a time to first token and an output speed: {why}")
    return result

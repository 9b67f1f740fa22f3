"""``agentsim profiles``: the speed-profile library, and profiles made from published provider statistics.

* ``agentsim profiles`` lists the bundled speed profiles with their sources, dates and medians.
* ``agentsim profiles import openrouter FILE...`` and ``agentsim profiles import artificial-analysis FILE...``
  read provider listings the user downloaded (nothing is fetched) and write one dated profile per model
  and provider (:mod:`agentsim.traces.snapshot_import`; the fit is documented in
  :mod:`agentsim.traces.provider_snapshots` and docs/provider-speeds.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from agentsim.cli.common import BadInput, app, err_console, handle_errors

__all__ = ["field_provenance", "profile_rows", "profiles_app"]

profiles_app = typer.Typer(
    help="Speed profiles: list the bundled ones, or import published provider statistics.",
    no_args_is_help=False,
    rich_markup_mode=None,
)
import_app = typer.Typer(help="Make profiles from provider statistics you downloaded.", no_args_is_help=True)
profiles_app.add_typer(import_app, name="import")
app.add_typer(profiles_app, name="profiles")


def _num(x: float) -> str:
    return f"{x:g}"


def _echo_json(doc: Any) -> None:
    sys.stdout.write(json.dumps(doc, indent=2) + "\n")


def _p50(spec) -> float:
    import numpy as np

    from agentsim.plan.distributions import sampler

    return float(sampler(spec).ppf(np.array([0.5]))[0])


_ASSUMED = "assumed"


def field_provenance(prof) -> dict[str, str]:
    """Per field (``ttft``, ``output_tps``, ``speeds``): the kinds of the profile's figures behind it, else assumed.

    A field counts as sourced only when a figure states it directly: a time to first token in s or ms
    for ``ttft``, an output speed in tokens/s for ``output_tps``, a speed-tier figure for ``speeds``.
    Anything else (a TTFT the profile's notes call an assumption) reads ``assumed``; a calibrated
    profile's fitted fields read ``calibrated``.
    """
    if prof.kind == "calibrated":
        return {"ttft": "calibrated", "output_tps": "calibrated", "speeds": _ASSUMED if prof.speeds else "–"}
    kinds: dict[str, list[str]] = {"ttft": [], "output_tps": [], "speeds": []}
    for f in prof.figures:
        q = f.quantity.lower()
        if "fast-mode" in q or "multiplier" in q:
            kinds["speeds"].append(f.kind)
        elif q.startswith(("time to first token", "ttft")) and f.unit in ("s", "ms"):
            kinds["ttft"].append(f.kind)
        elif q.startswith("output speed") and f.unit == "tokens/s":
            kinds["output_tps"].append(f.kind)
    out = {k: " + ".join(dict.fromkeys(v)) or _ASSUMED for k, v in kinds.items()}
    if not prof.speeds:
        out["speeds"] = "–"
    return out


def profile_rows() -> list[dict[str, Any]]:
    """Every bundled profile as a JSON-able dict, with the medians of its TTFT and output speed."""
    from agentsim.model.profiles import bundled_profiles, load_profile

    rows = []
    for name in sorted(bundled_profiles()):
        prof, path = load_profile(name)
        doc = prof.model_dump(mode="json", exclude_none=True)
        rows.append(
            {
                "name": name,
                **doc,
                "ttft_p50_s": _p50(prof.ttft),
                "output_tps_p50": _p50(prof.output_tps),
                "provenance": field_provenance(prof),
                "file": path.name,
            }
        )
    return rows


@profiles_app.callback(invoke_without_command=True)
@handle_errors
def profiles(
    ctx: typer.Context,
    json_out: Annotated[bool, typer.Option("--json", help="Print only JSON.")] = False,
    wide: Annotated[bool, typer.Option("--wide", help="One wide table even if wider than the terminal.")] = False,
) -> None:
    """Bundled speed profiles (use as `profile: NAME` in a model): sources, dates, medians.

    `agentsim profiles import SOURCE FILE...` makes profiles from provider listings you downloaded."""
    if ctx.invoked_subcommand is not None:
        return
    from rich.table import Table

    from agentsim.cli.tables import print_table

    rows = profile_rows()
    if json_out:
        _echo_json(rows)
        return
    t = Table(title="bundled speed profiles (`profile: NAME`)", title_justify="left")
    t.add_column("name", no_wrap=True)
    t.add_column("kind", no_wrap=True)
    t.add_column("date", no_wrap=True)
    t.add_column("TTFT p50", justify="right", no_wrap=True)
    t.add_column("tokens/s p50", justify="right", no_wrap=True)
    t.add_column("speed tiers", no_wrap=True)
    t.add_column("source")
    for r in rows:
        tiers = ", ".join(
            f"{k}: x{_num(v['output_tps_x'])} tps" + (f", x{_num(v['ttft_x'])} TTFT" if v["ttft_x"] != 1 else "")
            for k, v in r.get("speeds", {}).items()
        )
        prov = r["provenance"]
        t.add_row(
            r["name"],
            r["kind"],
            r["date"],
            f"{r['ttft_p50_s']:.2f} s ({prov['ttft']})",
            f"{r['output_tps_p50']:,.0f} ({prov['output_tps']})",
            f"{tiers} ({prov['speeds']})" if tiers else "–",
            r["source"],
        )
    print_table(t, wide=wide)


# --------------------------------------------------------------------------- importing provider statistics

OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Folder the profiles are written to (one NAME.yaml each).")]
TakenAtOpt = Annotated[
    str | None,
    typer.Option(
        "--taken-at",
        help="When the files were downloaded (2026-05-06T14:00Z, UTC unless it says otherwise), or mtime "
        "(each file's modification time). Default: a date and time in each file's name.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the profiles and what was skipped as JSON.")]


@import_app.command("openrouter")
@handle_errors
def import_openrouter(
    files: Annotated[list[Path], typer.Argument(help="Saved bodies of GET /api/v1/models/AUTHOR/SLUG/endpoints.")],
    out: OutOpt = Path("."),
    taken_at: TakenAtOpt = None,
    latency_unit: Annotated[
        str,
        typer.Option("--latency-unit", help="auto (decided by plausibility), s or ms: the unit of latency_last_30m."),
    ] = "auto",
    json_out: JsonOpt = False,
) -> None:
    """OpenRouter endpoint statistics (TTFT and throughput percentiles, last 30 minutes) as profiles."""
    _import("openrouter", files, out, taken_at, latency_unit, json_out)


@import_app.command("artificial-analysis")
@handle_errors
def import_artificial_analysis(
    files: Annotated[list[Path], typer.Argument(help="Saved bodies of GET /api/v2/data/llms/models.")],
    out: OutOpt = Path("."),
    taken_at: TakenAtOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Artificial Analysis medians (TTFT, output speed; 72 hours) as profiles, with a default spread."""
    _import("artificial-analysis", files, out, taken_at, "auto", json_out)


def _import(source: str, files: list[Path], out: Path, taken_at: str | None, unit: str, json_out: bool) -> None:
    from agentsim.measure.calibrate import write_profile
    from agentsim.traces.provider_snapshots import SnapshotFileError
    from agentsim.traces.snapshot_import import import_snapshots
    from agentsim.viz.outdir import OutputError
    from agentsim.viz.report import write_files

    if out.exists() and not out.is_dir():
        raise BadInput(f"--out {out} is a file: give a folder for the profiles")
    try:
        result = import_snapshots(source, files, taken_at, unit)
    except SnapshotFileError as exc:
        raise BadInput(str(exc)) from None
    writers = {f"{name}.yaml": (lambda p, d=doc: write_profile(p, d)) for name, doc in result.profiles.items()}
    try:
        written = write_files(out, writers, inputs=files)  # (no profile over a listing it read)
    except OSError as exc:
        raise OutputError(
            f"--out {out}: writing the profiles failed ({exc.strerror or exc}); choose another folder"
        ) from None
    if json_out:
        _echo_json({**result.to_json(), "written": [str(p) for p in written]})
    else:
        _import_table(result)
    for line in result.skipped:
        err_console.print(f"skipped: {line}", markup=False)
    for line in result.notes:
        err_console.print(f"note: {line}", markup=False)
    if not json_out:
        err_console.print(
            f"wrote {len(written)} profile{'s' if len(written) != 1 else ''} to {out}/ "
            f"(use as profile: {out}/NAME.yaml)",
            markup=False,
        )


def _import_table(result) -> None:
    from rich.table import Table

    from agentsim.cli.tables import print_table

    t = Table(title="imported speed profiles", title_justify="left")
    for col in ("name", "date", "TTFT p50", "tokens/s p50", "spread", "time of day"):
        t.add_column(col, no_wrap=True, justify="right" if "p50" in col else "left")
    for name, doc in result.profiles.items():
        prof = _profile(doc)
        spread = (
            "default"
            if doc["fit"]["ttft"]["default_spread"] or doc["fit"]["output_tps"]["default_spread"]
            else "fitted"
        )
        tod = doc.get("conditions", {}).get("time_of_day", {})
        t.add_row(
            name,
            doc["date"],
            f"{_p50(prof.ttft):.3g} s",
            f"{_p50(prof.output_tps):,.0f}",
            spread,
            ", ".join(tod) or "–",
        )
    print_table(t)


def _profile(doc: dict):
    from agentsim.model.profiles import Profile

    return Profile.model_validate(doc)

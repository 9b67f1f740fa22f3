"""Speed profiles: a model's TTFT and output speed as a dated, sourced data file.

A scenario model can say ``profile: gemini-3-flash`` (a profile bundled with
agentsim, see ``agentsim profiles``) or ``profile: ./measured.yaml`` (a file, for
example written by ``agentsim calibrate``). The profile fills the model's ``ttft``, ``prefill_tps``,
``output_tps``, ``stream``, ``conditions``, ``context_speed`` and ``speeds`` speed effects; anything
the scenario gives itself wins. Prices never come from a profile.

A profile file::

    profile: gemini-3-flash          # its name
    description: Gemini 3 Flash on Google AI Studio
    kind: vendor-claimed             # measured | vendor-claimed | calibrated | assumption
    source: OpenRouter provider statistics, Feb 2026
    date: 2026-02-10                 # when the figures were published or measured
    ttft: {lognormal: {median: 1.0, p90: 2.0}}   # seconds, excluding prefill
    prefill_tps: 20000                            # optional, uncached input tokens per second
    output_tps: {lognormal: {median: 218, p90: 280}}
    speeds: {fast: {output_tps_x: 2.5}}           # optional: speed effects of tiers (no prices)
    stream: {chunk_tokens: 4, jitter_cv: 0.3}     # optional: how it streams (scenario's stream wins)
    uncertainty: {ttft_x: {lognormal: {median: 1, p90: 1.05}}}   # optional: the speeds' uncertainty
    conditions: {ttft_x: {lognormal: {median: 1, p90: 1.3}}}     # optional: provider conditions (per run)
    context_speed: {tokens: [0, 740000], output_tps_x: [1, 0.82]}  # optional: speed by context size
    measured:                                     # optional (agentsim calibrate): where the fit holds
      input_tokens: [500, 16000]                  #   prompt sizes measured; output_tokens likewise
      concurrency: 4                              #   most requests in flight; dropped: [prefill_tps]
    notes: free text
    fit: {...}                                    # optional: calibration diagnostics (free form)
    figures:                                      # optional: the published numbers behind it
      - {quantity: output speed, value: 218, unit: tokens/s, kind: measured,
         source: "Some benchmark article", published: 2026-01-14, url: "https://..."}
"""

from __future__ import annotations

import datetime as dt
import os
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from agentsim.model.domain import Duration, Number, PosCount, Tokens
from agentsim.model.field_kinds import PROFILE_ROOTS, kind_problems
from agentsim.model.loading import ErrorItem, ScenarioError, errors_from_validation, load_data
from agentsim.model.scenario import (
    ConditionsSpec,
    ContextSpeedSpec,
    Dist,
    PosNum,
    StreamSpec,
    StrictModel,
    UncertaintySpec,
    suggest,
)

__all__ = ["PROFILE_KINDS", "Profile", "apply_profiles", "bundled_profiles", "load_profile", "profile_problems"]

PROFILE_KINDS = ("measured", "vendor-claimed", "calibrated", "assumption")


class Figure(StrictModel):
    """One published number behind a profile: what, how much, in what unit, from where and when."""

    quantity: str = Field(description="What the number measures, e.g. 'output speed'.")
    value: Number
    high: Number | None = Field(None, description="Upper end, when the source gives a range.")
    unit: str
    kind: Literal["measured", "vendor-claimed", "derived"]
    source: str = Field(description="The publication (and who measured or claimed the number).")
    published: dt.date | None = Field(None, description="Publication date; omitted when the page shows none.")
    url: str | None = None
    note: str | None = None


class SpeedEffect(StrictModel):
    output_tps_x: PosNum = 1.0
    ttft_x: PosNum = 1.0
    context_speed: ContextSpeedSpec | None = Field(None, description="This tier's speed by context size.")


class QueueingFound(StrictModel):
    """What calibrate found about queueing in the measurements (see :mod:`agentsim.queueing`)."""

    headers_queued: bool = Field(description="The response headers waited in a queue (the wait was removed from TTFT).")
    ttft_grows: bool = Field(description="TTFT grew with requests in flight (queueing left in TTFT).")
    removed_median_s: Duration = Field(0.0, description="Median seconds of header wait taken out of TTFT.")
    valid_at_concurrency: PosCount | None = Field(None, description="The only concurrency the TTFT holds at.")


class MeasuredRange(StrictModel):
    """Where a calibrated profile holds (see :mod:`agentsim.measured_range`)."""

    input_tokens: tuple[Tokens, Tokens] | None = Field(None, description="Smallest and largest prompt measured.")
    output_tokens: tuple[Tokens, Tokens] | None = Field(None, description="Smallest and largest response measured.")
    concurrency: PosCount | None = Field(None, description="Most requests in flight at once while measuring.")
    dropped: list[Literal["prefill_tps"]] = Field(
        default_factory=list, description="Terms left out of the fit for lack of spread."
    )
    queueing: QueueingFound | None = Field(None, description="Queueing found in the measurements.")


class Profile(StrictModel):
    profile: str = Field(description="The profile's name.")
    description: str | None = None
    kind: Literal["measured", "vendor-claimed", "calibrated", "assumption"]
    source: str = Field(description="Publication, benchmark or measurement the figures come from.")
    date: dt.date = Field(description="When the figures were published or measured.")
    ttft: Dist
    output_tps: Dist
    prefill_tps: PosNum | None = None
    speeds: dict[str, SpeedEffect] = Field(default_factory=dict)
    stream: StreamSpec | None = Field(None, description="How the model streams (chunks, gap jitter, stalls).")
    measured: MeasuredRange | None = Field(None, description="Token ranges and concurrency the fit was measured at.")
    uncertainty: UncertaintySpec | None = Field(
        None, description="How uncertain the fitted speeds are (used by uncertainty: parameters)."
    )
    conditions: ConditionsSpec | None = Field(
        None, description="Provider conditions: TTFT and speed factors shared by a run's calls (calibrate's windows)."
    )
    context_speed: ContextSpeedSpec | None = Field(
        None, description="Output speed and TTFT factors by context size (calibrate's context bins, or a source's)."
    )
    notes: str | None = None
    fit: dict[str, Any] | None = None
    figures: list[Figure] = Field(default_factory=list, description="The published numbers behind the profile.")


def _bundled_dir():
    return resources.files("agentsim") / "profiles"


def bundled_profiles() -> dict[str, Path]:
    """Name -> file of every profile bundled with agentsim."""
    d = _bundled_dir()
    return {Path(p.name).stem: Path(str(p)) for p in d.iterdir() if p.name.endswith((".yaml", ".yml"))}


def _is_path(ref: str) -> bool:
    return "/" in ref or "\\" in ref or ref.endswith((".yaml", ".yml", ".json"))


def load_profile(ref: str, base_dir: Path | None = None) -> tuple[Profile, Path]:
    """Load a profile by bundled name or by path (relative to ``base_dir``)."""
    if _is_path(ref):
        path = Path(ref)
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
    else:
        known = bundled_profiles()
        if ref not in known:
            raise LookupError(ref, suggest(ref, list(known)) or "run `agentsim profiles` to list them")
        path = known[ref]
    data, lines = load_data(path, kind="profile")
    items = []
    if isinstance(data, dict):  # the speed fields against the domain table, as a scenario model's are
        speeds = {k: data[k] for k in PROFILE_ROOTS if k in data}
        for where, msg in kind_problems(speeds, ("models", "profile")):
            items.append(ErrorItem.at(str(path), lines, where[2:], msg))
    try:
        profile = Profile.model_validate(data)
    except ValidationError as exc:
        flagged = {i.path for i in items}
        items += [i for i in errors_from_validation(exc, data, lines, str(path)) if i.path not in flagged]
    if items:
        raise ScenarioError(items)
    return profile, path


def profile_problems(doc: dict) -> list[str]:
    """What :func:`load_profile` would refuse in a profile document (``"place: why"`` each), without a
    file: a writer checks with it what it is about to write."""
    speeds = {k: doc[k] for k in PROFILE_ROOTS if k in doc}
    out = [f"{where[2:]}: {msg}" for where, msg in kind_problems(speeds, ("models", "profile"))]
    try:
        Profile.model_validate(doc)
    except ValidationError as exc:
        out += [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()]
    return out


SPEED_KEYS = ("ttft", "output_tps", "prefill_tps", "stream", "uncertainty", "conditions", "context_speed")


def apply_profiles(data: dict, file: str, lines: dict, base_dir: Path | None, read: list | None = None) -> dict:
    """Fill ``models.*`` speed fields from their ``profile:`` (scenario values win). Returns new data; each
    profile file read is added to ``read`` (resolved Paths) when given."""
    models = data.get("models")
    if not isinstance(models, dict):
        return data
    out_models = {}
    for name, m in models.items():
        if not isinstance(m, dict) or "profile" not in m:
            out_models[name] = m
            continue
        ref = m["profile"]
        where = ("models", name, "profile")
        if not isinstance(ref, str) or "\0" in ref:
            raise ScenarioError([ErrorItem.at(file, lines, where, "profile takes a name or a file path")])
        try:
            prof, prof_path = load_profile(ref, base_dir)
        except LookupError as exc:
            raise ScenarioError(
                [ErrorItem.at(file, lines, where, f"no bundled profile named '{ref}'", exc.args[1])]
            ) from None
        except ScenarioError as exc:
            if len(exc.items) == 1 and exc.items[0].line is None:  # the file as a whole: say where it is named
                item = exc.items[0]
                missing = item.message == "no such file"
                raise ScenarioError(
                    [
                        ErrorItem.at(
                            file,
                            lines,
                            where,
                            f"profile file '{ref}' does not exist"
                            if missing
                            else f"profile file '{ref}': {item.message}",
                            "paths are relative to the scenario file" if missing else item.hint,
                        )
                    ]
                ) from None
            raise
        if read is not None:
            read.append(Path(os.path.realpath(prof_path)))
        merged = dict(m)
        pdump = prof.model_dump(mode="json", exclude_none=True)
        for key in SPEED_KEYS:
            if key not in merged and key in pdump:
                merged[key] = pdump[key]
        # tier speed effects: the profile's, unless the scenario sets them (prices stay the scenario's)
        if prof.speeds and isinstance(merged.get("speeds"), dict):
            tiers = {}
            for tier, spec in merged["speeds"].items():
                spec = dict(spec) if isinstance(spec, dict) else spec
                if isinstance(spec, dict) and tier in prof.speeds:
                    for k, v in prof.speeds[tier].model_dump(mode="json", exclude_none=True).items():
                        spec.setdefault(k, v)
                tiers[tier] = spec
            merged["speeds"] = tiers
        out_models[name] = merged
    return {**data, "models": out_models}

"""Rate-limit presets: the providers' published rate-limit tiers, kept as dated, sourced data.

A preset is one provider's account limits at one usage tier for one model class, as the provider
publishes them. The figures live in ``agentsim/limit_presets/PROVIDER.yaml`` (data, not code: each file
says where its figures come from, when they were read, and what could not be found), like the speed
profiles of :mod:`agentsim.model.profiles`. A scenario names one with ``preset:`` in an account::

    limits:
      opus: {preset: anthropic/tier-2/opus-4, models: [opus]}
      haiku: {preset: anthropic/tier-2/haiku-4.5, models: [haiku], policy: queue}   # its own keys win

A reference is ``PROVIDER/TIER/CLASS``; ``PROVIDER/TIER`` is enough when that tier has one class. The
preset fills the account's ``rpm``, ``input_tpm``, ``output_tpm``, ``concurrency``, ``policy`` and
``count_cache_reads`` where the account does not set them; the account's own keys win. Presets are
applied to the scenario's data before it is validated (:func:`apply_limit_presets`), so a sweep can
set ``limits.NAME.preset`` to a list of tiers.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import Field

from agentsim.model.base import StrictModel
from agentsim.model.domain import CountRate, PosCount
from agentsim.model.loading import ErrorItem, ScenarioError, line_of, load_data
from agentsim.model.scenario import suggest

__all__ = [
    "LIMIT_KEYS",
    "LimitPresets",
    "apply_limit_presets",
    "bundled_presets",
    "preset_limits",
    "presets_table",
]

# the account keys a preset fills (where the account does not set them)
LIMIT_KEYS = ("concurrency", "rpm", "input_tpm", "output_tpm", "policy", "count_cache_reads")


class UnknownPreset(Exception):
    """A reference that names no bundled preset: ``(message, hint)``."""


class ClassLimits(StrictModel):
    """One model class's limits at one tier (a limit left out is not published, or not found)."""

    concurrency: PosCount | None = None
    rpm: CountRate | None = None
    input_tpm: CountRate | None = None
    output_tpm: CountRate | None = None


class Tier(StrictModel):
    description: str
    classes: dict[str, ClassLimits] = Field(min_length=1)


class LimitPresets(StrictModel):
    """One provider's file: where the figures come from, their date, and its tiers."""

    provider: str
    source: str = Field(description="The provider's page the figures are from (a URL).")
    as_of: str = Field(description="When the figures were in force (YYYY-MM-DD).")
    read_from: str | None = Field(None, description="Where they were read, when not from the source itself.")
    policy: str = Field(pattern="^(queue|reject)$")
    count_cache_reads: bool
    tiers: dict[str, Tier] = Field(min_length=1)


def _bundled_dir():
    return resources.files("agentsim") / "limit_presets"


@cache
def bundled_presets() -> dict[str, LimitPresets]:
    """Provider -> its presets, for every file bundled with agentsim."""
    out = {}
    for p in sorted(_bundled_dir().iterdir(), key=lambda p: p.name):
        if p.name.endswith(".yaml"):
            data, _ = load_data(Path(str(p)), kind="profile")
            out[Path(p.name).stem] = LimitPresets.model_validate(data)
    return out


def preset_limits(ref: str) -> dict[str, Any]:
    """The account keys of preset ``ref`` (``PROVIDER/TIER[/CLASS]``) with its source and date; raises
    UnknownPreset(message, hint) for a reference that names no preset."""
    parts = ref.split("/")
    known = bundled_presets()
    if len(parts) not in (2, 3) or not all(parts):
        raise UnknownPreset(f"'{ref}' is not a preset reference", _example(known))
    provider = known.get(parts[0])
    if provider is None:
        raise UnknownPreset(f"no rate-limit presets for provider '{parts[0]}'", _choices("providers", parts[0], known))
    tier = provider.tiers.get(parts[1])
    if tier is None:
        raise UnknownPreset(f"{parts[0]} has no tier '{parts[1]}'", _choices("tiers", parts[1], provider.tiers))
    if len(parts) == 2:
        if len(tier.classes) != 1:
            refs = ", ".join(f"{parts[0]}/{parts[1]}/{c}" for c in tier.classes)
            raise UnknownPreset(
                f"{parts[0]} sets its limits per model class: name the class of the account's models",
                f"one of {refs}",
            )
        cls_name = next(iter(tier.classes))
    else:
        cls_name = parts[2]
    limits = tier.classes.get(cls_name)
    if limits is None:
        raise UnknownPreset(
            f"{parts[0]}/{parts[1]} has no model class '{cls_name}'", _choices("classes", cls_name, tier.classes)
        )
    out: dict[str, Any] = {"policy": provider.policy, "count_cache_reads": provider.count_cache_reads}
    out.update(limits.model_dump(exclude_none=True))
    return out


def _choices(what: str, got: str, options) -> str:
    return suggest(got, list(options)) or f"{what}: " + ", ".join(options)


def _example(known: dict[str, LimitPresets]) -> str:
    refs = [f"{p}/{t}/{c}" for p, f in known.items() for t, tier in f.tiers.items() for c in tier.classes]
    return "write PROVIDER/TIER/CLASS, e.g. " + ", ".join(refs[:3]) + " (docs/limits.md lists them)"


def apply_limit_presets(data: dict, file: str, lines: dict) -> dict:
    """Fill each ``limits.NAME`` account from its ``preset:`` (the account's own keys win); the preset's
    name stays in the data (the account's ``preset`` key). Returns new data."""
    accounts = data.get("limits")
    if not isinstance(accounts, dict):
        return data
    out = {}
    items = []
    for name, acc in accounts.items():
        if not isinstance(acc, dict) or "preset" not in acc:
            out[name] = acc
            continue
        ref = acc["preset"]
        where = ("limits", name, "preset")
        if not isinstance(ref, str):
            items.append(
                ErrorItem(file, line_of(lines, where), where, "preset takes a name such as anthropic/tier-2/opus-4")
            )
            out[name] = acc
            continue
        try:
            filled = preset_limits(ref)
        except UnknownPreset as exc:
            items.append(ErrorItem(file, line_of(lines, where), where, exc.args[0], exc.args[1]))
            out[name] = acc
            continue
        out[name] = {**filled, **acc}
    if items:
        raise ScenarioError(items)
    return {**data, "limits": out}


def presets_table() -> list[dict[str, Any]]:
    """Every bundled preset as a row: reference, its limits, the provider's source and date."""
    rows = []
    for provider, f in bundled_presets().items():
        for tier_name, tier in f.tiers.items():
            for cls, lim in tier.classes.items():
                rows.append({"preset": f"{provider}/{tier_name}/{cls}", **lim.model_dump(), "policy": f.policy,
                             "tier": tier.description, "as_of": f.as_of, "source": f.source})  # fmt: skip
    return rows

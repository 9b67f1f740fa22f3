"""Replay settings: the config file, ``--variant`` values, and each model's speed and prices.

A replay config (YAML, JSON or TOML) says, all keys optional::

    prices_as_of: 2026-11-01          # price every call as of this date (default: the call's own date)
    value_of_time: {usd_per_hour: 120} # for the "pays off" verdict
    split: ttft-first                  # or proportional (see agentsim.replay.retime)
    models:                            # keyed by a recorded model id, a catalog provider/model, or '*'
      claude-opus-4-8:
        profile: ./opus-measured.yaml  # speed profile: bundled name or file (relative to this file)
        price: {catalog: anthropic/claude-opus-4-8}   # or an explicit table (default: the catalog)
        speeds:
          fast: {output_tps_x: 2.5, ttft_x: 1}       # speed effect of a tier (price: from the catalog)
          turbo: {output_tps_x: 4, price_x: 3}       # a tier the catalog does not know
    variants:
      fast: {speed: fast}                            # every call at its model's fast tier
      fast-opus: {speed: {claude-opus-4-8: fast}}    # only the calls of this recorded model
      sonnet: {model: anthropic/claude-sonnet-4-5}   # every call on another model (same tokens)
      negotiated: {price: {claude-opus-4-8: {catalog: anthropic/claude-opus-4-8, input_mtok: 4}}}

The same words as a scenario's ``variants:`` (``speed:``, ``model:``), keyed by recorded
model instead of step names. On the command line, ``--variant`` takes a variant name
from the config, ``fast``, ``standard``, ``identity`` (no change: a self-check), or
``speed=TIER`` / ``model=PROVIDER/MODEL`` (comma-separated to combine).

A model's **speed** comes from its profile (:mod:`agentsim.model.profiles`): the config's,
else a bundled profile named like the model, else :data:`DEFAULT_PROFILE`. A tier's
speed effect comes from the config, else the profile's ``speeds:``, else
:data:`DEFAULT_TIER_EFFECTS`. A model's **price** is the config's table, else the
genai-prices catalog; a tier's price is the config's ``price``/``price_x``, else the
catalog's price variant whose condition names the tier (``{speed: fast}``,
``{service_tier: priority}``), as of the call's date.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field, PrivateAttr, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from agentsim.model.loading import ErrorItem, ScenarioError, errors_from_validation, load_data
from agentsim.model.profiles import Profile, bundled_profiles, load_profile
from agentsim.model.scenario import PosNum, PriceSpec, StrictModel, ValueOfTime, suggest
from agentsim.pricing.rates import PriceError, Rates, catalog_price_fields, compile_price, find_catalog_model

__all__ = [
    "DEFAULT_PROFILE",
    "DEFAULT_TIER_EFFECTS",
    "ReplayConfig",
    "ReplayModelSpec",
    "ReplayTierSpec",
    "ReplayVariantSpec",
    "Resolver",
    "SpeedModel",
    "Target",
    "config_files",
    "load_replay_config",
    "mapped",
    "parse_variant",
    "speed_model",
    "variant_target",
]

DEFAULT_PROFILE = Profile(
    profile="default-assumption",
    kind="assumption",
    source="agentsim replay default (no profile for this model)",
    date=dt.date(2026, 11, 1),
    ttft=2.0,
    output_tps=60.0,
    notes="Used for models without a bundled or given profile: TTFT 2 s, 60 output tokens/s, no prefill term.",
)
DEFAULT_TIER_EFFECTS = {"standard": (1.0, 1.0), "fast": (2.5, 1.0)}  # tier -> (output_tps_x, ttft_x)
PLAIN_VARIANTS = ("identity", "recorded")

# --------------------------------------------------------------------------- the replay config file


class ReplayTierSpec(StrictModel):
    """A speed tier of a model in replay: its speed effect and, optionally, its price."""

    output_tps_x: PosNum | None = Field(
        None, description="Multiplies output speed (default: profile, else 2.5 for fast, 1 otherwise)."
    )
    ttft_x: PosNum | None = Field(None, description="Multiplies the TTFT (not the prefill term).")
    price: PriceSpec | None = Field(None, description="This tier's price (default: the catalog's price context).")
    price_x: PosNum | None = Field(None, description="Or: the model's standard price times this.")

    @model_validator(mode="after")
    def _one_price(self) -> ReplayTierSpec:
        if self.price is not None and self.price_x is not None:
            raise PydanticCustomError("tier_price", "give price or price_x, not both", {})
        return self


class ReplayModelSpec(StrictModel):
    """Settings for a model, keyed by its id (recorded, catalog ``provider/model``, or '*' for every model)."""

    profile: str | None = Field(None, description="Speed profile: bundled name or file (relative to this file).")
    price: PriceSpec | None = Field(None, description="Price table (default: the genai-prices catalog).")
    speeds: dict[str, ReplayTierSpec] = Field(default_factory=dict)


class ReplayVariantSpec(StrictModel):
    """What to change: speed tier and/or model, for every call (a string) or per recorded model (a mapping)."""

    speed: str | dict[str, str] | None = Field(None, description="Tier for every call, or recorded model -> tier.")
    model: str | dict[str, str] | None = Field(None, description="Model for every call, or recorded -> model.")
    price: dict[str, PriceSpec] = Field(default_factory=dict, description="Model -> price table in this variant.")
    description: str | None = None


class ReplayConfig(StrictModel):
    prices_as_of: dt.date | None = Field(None, description="Price every call as of this date (default: its own).")
    value_of_time: ValueOfTime | None = None
    split: Literal["ttft-first", "proportional"] = "ttft-first"
    models: dict[str, ReplayModelSpec] = Field(default_factory=dict)
    variants: dict[str, ReplayVariantSpec] = Field(default_factory=dict)
    baseline: str | None = Field(
        None, description="The variant savings are measured against (default: the recording itself)."
    )

    _base_dir: Path | None = PrivateAttr(None)
    _file: str = PrivateAttr("<replay config>")
    _lines: dict = PrivateAttr(default_factory=dict)
    _from_option: set = PrivateAttr(default_factory=set)  # model keys whose profile came from --speed-profile


def load_replay_config(path: str | Path) -> ReplayConfig:
    """Read a replay config file (YAML, JSON or TOML); bad input raises ScenarioError with file:line."""
    data, lines = load_data(path, kind="replay config")
    try:
        cfg = ReplayConfig.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(errors_from_validation(exc, data, lines, str(path))) from None
    cfg._base_dir = Path(path).parent
    cfg._file = str(path)
    cfg._lines = lines
    return cfg


def config_files(config: ReplayConfig) -> tuple[Path, ...]:
    """Every file read to make ``config``: its file and the files it ``extends:``, and the profile files its
    models name (``--speed-profile`` ones included), resolved. A name that is no profile is left out (it is
    reported where the profiles are loaded)."""
    read = [*getattr(config._lines, "read", ())]
    for spec in config.models.values():
        if spec.profile is not None:
            try:
                read.append(Path(os.path.realpath(load_profile(spec.profile, config._base_dir)[1])))
            except (LookupError, ScenarioError):
                continue
    return tuple(dict.fromkeys(read))


def parse_variant(text: str, config: ReplayConfig | None = None) -> tuple[str, ReplayVariantSpec]:
    """A ``--variant`` value: a name from the config, ``fast``, ``standard``, ``identity``, or
    ``speed=TIER`` / ``model=PROVIDER/MODEL`` (comma-separated to combine)."""
    config = config or ReplayConfig()
    text = text.strip()
    if text in config.variants:
        return text, config.variants[text]
    if text in PLAIN_VARIANTS:
        return text, ReplayVariantSpec()
    if text in ("fast", "standard"):
        return text, ReplayVariantSpec(speed=text)
    if "=" not in text:
        known = [*config.variants, "fast", "standard", "identity"]
        raise ValueError(
            f"unknown variant '{text}' ({suggest(text, known) or 'known: ' + ', '.join(known)}; or write "
            "speed=TIER, model=PROVIDER/MODEL, or both separated by a comma)"
        )
    fields: dict[str, str] = {}
    for part in text.split(","):
        key, _, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if key not in ("speed", "model") or not value:
            raise ValueError(f"variant '{text}': '{part}' is not speed=TIER or model=PROVIDER/MODEL")
        if key in fields:
            raise ValueError(f"variant '{text}': {key} is given twice")
        fields[key] = value
    return text, ReplayVariantSpec(**fields)


# --------------------------------------------------------------------------- speed: profiles


@dataclass(frozen=True)
class SpeedModel:
    """Central speed figures of one model (profile medians) and its tiers' effects."""

    profile: str
    kind: str
    source: str
    ttft_s: float
    output_tps: float
    prefill_tps: float | None
    tiers: dict[str, tuple[float, float, str]]  # tier -> (output_tps_x, ttft_x, where it came from)
    context: dict = field(default_factory=dict, compare=False)  # tier ("" = the model's) -> ContextSpeed

    def tier(self, name: str) -> tuple[float, float]:
        x = self.tiers.get(name)
        if x is not None:
            return x[0], x[1]
        return DEFAULT_TIER_EFFECTS.get(name, (1.0, 1.0))

    def context_x(self, tier: str, context_tokens: int) -> tuple[float, float]:
        """(output speed, TTFT) factors of a call sending ``context_tokens`` (the profile's ``context_speed``,
        a tier's replacing the model's; 1 without one): :func:`agentsim.sim.rules.context_speeds`."""
        cs = self.context.get(tier, self.context.get(""))
        if cs is None:
            return 1.0, 1.0
        from agentsim.sim.rules import context_speeds

        ttft_x, tps_x = context_speeds(1.0, 1.0, float(context_tokens), cs)
        return tps_x, ttft_x

    def expected_ttft(self, tier: str, uncached_input: int, context_tokens: int = 0) -> float:
        e = self.ttft_s * self.tier(tier)[1] * self.context_x(tier, context_tokens)[1]
        if self.prefill_tps:
            e += max(uncached_input, 0) / self.prefill_tps
        return e

    def output_speed(self, tier: str, context_tokens: int = 0) -> float:
        """The central output speed of a call on ``tier`` sending ``context_tokens``."""
        return self.output_tps * self.tier(tier)[0] * self.context_x(tier, context_tokens)[0]

    def expected_decode(self, tier: str, output: int, context_tokens: int = 0) -> float:
        return output / self.output_speed(tier, context_tokens)

    def to_json(self) -> dict:
        return {
            "profile": self.profile,
            "kind": self.kind,
            "source": self.source,
            "ttft_s": self.ttft_s,
            "output_tps": self.output_tps,
            "prefill_tps": self.prefill_tps,
            "tiers": {t: {"output_tps_x": x, "ttft_x": y, "from": src} for t, (x, y, src) in self.tiers.items()},
        }


def _median(dist) -> float:
    from agentsim.plan.distributions import sampler

    return float(sampler(dist).ppf(np.array([0.5]))[0])


MIN_RECORDED = 20  # calls with a recorded TTFT a model needs before its recorded speeds are used


def recorded_profile(model: str, ttfts: list[float], speeds: list[float]) -> Profile | None:
    """A model's speeds as the replayed sessions recorded them (median TTFT, median output speed of the calls
    that record their TTFT), or None with fewer than :data:`MIN_RECORDED` calls: what splits a call without a
    recorded TTFT when no bundled or given profile knows the model."""
    if len(ttfts) < MIN_RECORDED or len(speeds) < MIN_RECORDED:
        return None
    return Profile(
        profile=f"recorded-{model}",
        kind="measured",
        source=f"the replayed sessions: {len(ttfts):,} calls of {model} with a recorded TTFT",
        date=dt.date(1970, 1, 1),  # not shown: a replay's speed models carry no date
        ttft=float(np.median(ttfts)),
        output_tps=float(np.median(speeds)),
        notes="Median TTFT and median output speed (output tokens / (duration - TTFT)) of the recorded calls.",
    )


def speed_model(profile: Profile, tier_specs: dict[str, ReplayTierSpec]) -> SpeedModel:
    tiers: dict[str, tuple[float, float, str]] = {}
    for name in {*DEFAULT_TIER_EFFECTS, *profile.speeds, *tier_specs}:
        x, y, src = (*DEFAULT_TIER_EFFECTS.get(name, (1.0, 1.0)), "default")
        if name in profile.speeds:
            x, y, src = profile.speeds[name].output_tps_x, profile.speeds[name].ttft_x, f"profile {profile.profile}"
        spec = tier_specs.get(name)
        if spec is not None and (spec.output_tps_x is not None or spec.ttft_x is not None):
            x = spec.output_tps_x if spec.output_tps_x is not None else x
            y = spec.ttft_x if spec.ttft_x is not None else y
            src = "replay config"
        if name == "standard" and src == "default":
            continue
        tiers[name] = (float(x), float(y), src)
    from agentsim.plan.context_speed import compile_context_speed

    context = {"": compile_context_speed(profile.context_speed)}
    for name, sp in profile.speeds.items():
        if sp.context_speed is not None:
            context[name] = compile_context_speed(sp.context_speed)
    return SpeedModel(
        profile.profile,
        profile.kind,
        profile.source,
        _median(profile.ttft),
        _median(profile.output_tps),
        profile.prefill_tps,
        dict(sorted(tiers.items())),
        context,
    )


# --------------------------------------------------------------------------- models, profiles and prices


@dataclass(frozen=True)
class Target:
    """A model as replay uses it: its name in tables, its catalog entry, its config entry."""

    label: str  # what tables show
    catalog: str | None  # provider/model in genai-prices
    spec: ReplayModelSpec | None = field(default=None, compare=False)


class Resolver:
    """Model names to catalog entries, config entries, speed models and price tables (all cached)."""

    def __init__(self, config: ReplayConfig, recorded: dict[str, Profile] | None = None):
        self.config = config
        self.recorded = recorded or {}  # model label -> speeds measured in the replayed sessions themselves
        self._catalog: dict[tuple, str | None] = {}
        self._speed: dict[str, SpeedModel] = {}
        self._rates: dict[tuple, tuple[Rates | None, str]] = {}
        self.bundled = bundled_profiles()
        self.profiles = self._load_profiles()

    def catalog_ref(self, provider: str | None, model: str) -> str | None:
        key = (provider, model)
        if key not in self._catalog:
            ref = None
            for cand in ([f"{provider}/{model}"] if provider else []) + [model]:
                try:
                    p, m = find_catalog_model(cand)
                except PriceError:
                    continue
                ref = f"{p.id}/{m.id}"
                break
            self._catalog[key] = ref
        return self._catalog[key]

    def spec_for(self, *names: str | None) -> ReplayModelSpec | None:
        for name in names:
            if name and name in self.config.models:
                return self.config.models[name]
        return None

    def target(self, provider: str | None, model: str) -> Target:
        ref = self.catalog_ref(provider, model)
        names = (model, ref, ref.split("/", 1)[1] if ref else None, f"{provider}/{model}" if provider else None)
        return Target(model, ref, self.spec_for(*names))

    def _load_profiles(self) -> dict[str, Profile]:
        """Every profile the config names, loaded up front so that a bad one is reported at its place."""
        out = {}
        for key, spec in self.config.models.items():
            if spec.profile is None or spec.profile in out:
                continue
            where = ("models", key, "profile")
            file = "--speed-profile" if key in self.config._from_option else self.config._file
            try:
                out[spec.profile], _ = load_profile(spec.profile, self.config._base_dir)
            except LookupError as exc:
                msg = f"'{spec.profile}' is neither a bundled profile nor a profile file"
                raise ScenarioError([ErrorItem.at(file, self.config._lines, where, msg, exc.args[1])]) from None
        return out

    def speed(self, t: Target) -> SpeedModel:
        if t.label in self._speed:
            return self._speed[t.label]
        star = self.config.models.get("*")
        ref = (t.spec.profile if t.spec and t.spec.profile else None) or (star.profile if star else None)
        if ref is not None:
            prof = self.profiles[ref]
        else:
            prof = self.recorded.get(t.label)  # what these sessions measured comes first
            catalog_id = t.catalog.split("/", 1)[1] if t.catalog else None
            for name in (t.label, catalog_id, _undated(t.label)) if prof is None else ():
                if name and name in self.bundled:
                    prof, _ = load_profile(name)
                    break
            prof = prof or DEFAULT_PROFILE
        tier_specs = {**(star.speeds if star else {}), **(t.spec.speeds if t.spec else {})}
        sm = speed_model(prof, tier_specs)
        self._speed[t.label] = sm
        return sm

    def rates(self, t: Target, tier: str, day: dt.date) -> tuple[Rates | None, str]:
        """The price table of ``t`` at ``tier`` on ``day``, or (None, why not)."""
        key = (t, tier, day)
        if key not in self._rates:
            self._rates[key] = self._compile(t, tier, day)
        return self._rates[key]

    def _compile(self, t: Target, tier: str, day: dt.date) -> tuple[Rates | None, str]:
        spec = t.spec
        try:
            if spec is not None and spec.price is not None:
                base = compile_price(spec.price, day)
            elif t.catalog is not None:
                fields, src = catalog_price_fields(t.catalog, None, day)
                base = _rates_from(fields, src, day)
            else:
                return None, f"{t.label} is not in the genai-prices catalog (give models.{t.label}.price in a config)"
            if tier == "standard":
                return base, base.source
            tspec = spec.speeds.get(tier) if spec is not None else None
            if tspec is not None and tspec.price is not None:
                r = compile_price(tspec.price, day)
                return r, r.source
            if tspec is not None and tspec.price_x is not None:
                return base.scaled(tspec.price_x, f"{base.source} x{tspec.price_x:g}"), base.source
            if t.catalog is None:
                return None, f"{t.label} has no price for tier {tier}"
            context = _tier_context(t.catalog, tier, day)
            if context is None:
                return None, f"{t.catalog} has no {tier} tier in the genai-prices catalog on {day}"
            fields, src = catalog_price_fields(t.catalog, context, day)
            return _rates_from(fields, src, day), src
        except PriceError as exc:
            return None, f"{t.label}: {exc.message}"


def _rates_from(fields: dict, source: str, day: dt.date) -> Rates:
    from agentsim.pricing.rates import rates_from_fields

    return rates_from_fields(fields, source, day)


def _undated(model: str) -> str:
    """``claude-opus-4-8-20261001`` -> ``claude-opus-4-8``."""
    head, _, tail = model.rpartition("-")
    return head if tail.isdigit() and len(tail) == 8 else model


def _tier_context(ref: str, tier: str, day: dt.date) -> dict | None:
    """The catalog price context of a speed tier: the price variant whose condition names it (speed first)."""
    _, model = find_catalog_model(ref)
    when_t = dt.datetime.combine(day, dt.time(12, 0), tzinfo=dt.UTC)
    found = []
    for v in model.price_variants or ():
        if v.constraint is not None and not v.constraint.active(when_t):
            continue
        if tier in (str(x) for x in v.when.values()):
            found.append(dict(v.when))
    found.sort(key=lambda w: (0 if w.get("speed") == tier else 1, sorted(w)))
    return found[0] if found else None


def mapped(value: str | dict[str, str] | None, names: tuple) -> tuple[str | None, bool]:
    """The value a variant gives a call's model: (value, whether a mapping named the model explicitly)."""
    if value is None:
        return None, False
    if isinstance(value, str):
        return value, False
    for n in names:
        if n and n in value:
            return value[n], True
    return value.get("*"), False


def variant_target(res: Resolver, model: str, variant: str) -> Target:
    spec = res.spec_for(model)
    provider, _, bare = model.rpartition("/")
    ref = res.catalog_ref(provider or None, bare)
    if ref is None and (spec is None or spec.price is None):
        try:
            find_catalog_model(model)
        except PriceError as exc:
            raise ValueError(f"variant '{variant}': model '{model}': {exc.message} ({exc.hint})") from None
    if spec is None and ref is not None:
        spec = res.spec_for(ref, ref.split("/", 1)[1])
    return Target(model, ref, spec)

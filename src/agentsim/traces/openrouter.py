"""OpenRouter endpoint statistics (``GET /api/v1/models/{author}/{slug}/endpoints``) as speed snapshots.

The response body, saved by the user (agentsim fetches nothing); an excerpt of a real listing::

    {"data": {"id": "z-ai/glm-5.3-flash", "name": "...", "endpoints": [
        {"provider_name": "Z.AI", "tag": "z-ai/fp8", "quantization": "fp8", "context_length": 1048576,
         "pricing": {"prompt": "0.00000015", "completion": "0.0000005"},      # USD per token, as strings
         "latency_last_30m": {"p50": 3446, "p75": 5534, "p90": 7986, "p99": 21556},   # time to first token, ms
         "throughput_last_30m": {"p50": 28, "p75": 44, "p90": 68, "p99": 101},        # output tokens/s
         "uptime_last_30m": 99.7}, ...]}}

* **Latency** is the time to first token over the last 30 minutes of requests through OpenRouter.
  The API reference (its schema ``PercentileStats``) says milliseconds, and real listings read so
  (medians of 373 to 10,792); its own endpoint example reads 0.25-0.85, seconds. The unit is
  therefore decided per file by plausibility (:func:`latency_unit`): a median first token between
  :data:`TTFT_S_RANGE` seconds. Values that fit only one reading decide it (and a note says which);
  a file whose values fit both (medians between 50 and 120) or neither is refused unless
  ``--latency-unit s|ms`` says which, and a value implausible in the unit given is refused too.
* **Throughput** is output tokens per second. Its percentiles are ordinary percentiles, as the API
  reference documents them (``PercentileStats``: "p99: 99th percentile") and as real listings read
  (25/40/54/78 and 28/44/68/101 tokens/s): ``p90`` is the speed 90% of requests stay at or below, so
  ``pK`` enters the fit at probability ``K/100`` and the values rise from p50 to p99. The reference's
  endpoint *example* (45.2/38.5/28.3/15.1) falls, contradicting its own schema; a file in that shape is
  refused, naming both (:data:`THROUGHPUT_DOC`).
* Figures are ``null`` when the listing was fetched without an API key, and may be 0 for an endpoint
  without traffic: such endpoints are reported and not imported. Prices are recorded in the
  profile's ``figures`` only (a profile never sets prices; ``-1`` means a variable price).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentsim.traces.provider_snapshots import Snapshot, SnapshotFileError, figure, number, read_json_file, slug

__all__ = ["LATENCY_UNITS", "TTFT_S_RANGE", "latency_unit", "read_openrouter"]

SOURCE = "openrouter"
PERCENTILES = ("p50", "p75", "p90", "p99")
TTFT_S_RANGE = (0.05, 120.0)  # a plausible median time to first token, in seconds
TTFT_MAX_S = 3600.0  # no percentile of a first token is above an hour
MIN_TPS = 0.01  # tokens/s: slower is not a served model
MAX_TPS = 100_000.0  # tokens/s: ~6x the fastest hardware published (Taalas HC1, ~17,000)
MAX_USD_PER_TOKEN = 1.0  # $1,000,000 per million tokens
LATENCY_UNITS = ("auto", "s", "ms")
WINDOW = "percentiles over the 30 minutes of requests before the download"
THROUGHPUT_DOC = (
    "OpenRouter documents throughput_last_30m as ordinary percentiles (API schema PercentileStats: "
    "'p50: Median (50th percentile)' ... 'p99: 99th percentile'), so they rise from p50 to p99, as real "
    "listings do (e.g. 28, 44, 68, 101 tokens/s)"
)
WORKLOAD = "OpenRouter's real traffic to this endpoint (every prompt size; TTFT includes prefill and routing)"


def _percentiles(raw, file: str, place: str, *, high: float, what: str, low: float = 0.0) -> dict[str, float] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise SnapshotFileError(f"{file}: {place}: expected an object of percentiles (p50, p75, p90, p99)")
    out = {}
    for k in PERCENTILES:
        v = number(raw.get(k), file, f"{place}.{k}", low=low, high=high, what=what)
        if v is not None:
            out[k] = v
    return out or None


def _monotone(values: dict[str, float], file: str, place: str, fix: str) -> None:
    """Refuse percentiles that fall from p50 to p99 (every OpenRouter percentile rises)."""
    seq = [values[k] for k in PERCENTILES if k in values]
    ok = all(a <= b for a, b in itertools.pairwise(seq))
    if not ok:
        raise SnapshotFileError(f"{file}: {place}: {values} {fix}")


def latency_unit(medians: list[tuple[str, float]], file: str, unit: str = "auto") -> tuple[float, str | None]:
    """The factor turning this file's latency numbers into seconds, and a note on how it was decided.

    ``medians`` are (place, median latency as published) of every endpoint with a latency."""
    lo, hi = TTFT_S_RANGE
    fits = {"s": all(lo <= v <= hi for _, v in medians), "ms": all(lo <= v / 1000 <= hi for _, v in medians)}
    shown = ", ".join(f"{v:g}" for _, v in medians[:6]) + (" ..." if len(medians) > 6 else "")
    if unit != "auto":
        if not fits[unit]:
            bad = next(p for p, v in medians if not lo <= (v if unit == "s" else v / 1000) <= hi)
            raise SnapshotFileError(
                f"{file}: {bad}: a median time to first token of {dict(medians)[bad]:g} {unit} is not plausible "
                f"(expected {lo:g} to {hi:g} s); check --latency-unit"
            )
        return (1.0 if unit == "s" else 0.001), None
    if fits["s"] and fits["ms"]:
        raise SnapshotFileError(
            f"{file}: the latency medians ({shown}) are plausible both as seconds and as milliseconds; "
            "say which with --latency-unit s or --latency-unit ms"
        )
    if fits["s"]:
        return (
            1.0,
            f"latency read as seconds (medians {shown}; as milliseconds they would be too fast for a first token)",
        )
    if fits["ms"]:
        return 0.001, f"latency read as milliseconds, as documented (medians {shown})"
    raise SnapshotFileError(
        f"{file}: the latency medians ({shown}) are neither plausible seconds nor plausible milliseconds for a "
        f"first token ({lo:g} to {hi:g} s), or mix the two; check the file, or give --latency-unit"
    )


def _price_figures(ep: dict, file: str, place: str, model: str, published) -> tuple[list[dict], list[str]]:
    pricing = ep.get("pricing")
    if pricing is None:
        return [], []
    if not isinstance(pricing, dict):
        raise SnapshotFileError(f"{file}: {place}.pricing: expected an object with prompt and completion")
    figures, notes = [], []
    for key, label in (("prompt", "input price"), ("completion", "output price")):
        raw = pricing.get(key)
        if raw is None:
            continue
        try:
            value = float(raw) if isinstance(raw, str) else raw
        except ValueError:
            raise SnapshotFileError(
                f"{file}: {place}.pricing.{key}: {raw!r} is not a number of USD per token"
            ) from None
        if value == -1:
            notes.append(f"{label}: variable (OpenRouter publishes -1)")
            continue
        usd = number(value, file, f"{place}.pricing.{key}", low=0.0, high=MAX_USD_PER_TOKEN, what="USD per token")
        if usd is not None:
            figures.append(
                _figure(f"{label} (recorded only; a profile sets no price)", usd * 1e6, "USD/Mtok", model, published)
            )
    return figures, notes


def _figure(quantity: str, value: float, unit: str, model: str, published) -> dict:
    return figure(
        quantity,
        value,
        unit,
        f"OpenRouter endpoint statistics of {model}",
        published,
        f"https://openrouter.ai/{model}/providers",
    )


def _endpoints(doc, file: str) -> tuple[str, list]:
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, dict) or not isinstance(data.get("endpoints"), list):
        raise SnapshotFileError(
            f'{file}: not an OpenRouter endpoints listing (expected {{"data": {{"id": ..., "endpoints": [...]}}}}, '
            "the body of GET /api/v1/models/AUTHOR/SLUG/endpoints)"
        )
    model = data.get("id")
    if not isinstance(model, str) or not model:
        raise SnapshotFileError(f"{file}: data.id (the model, e.g. openai/gpt-4) is missing or not a string")
    return model, data["endpoints"]


def read_openrouter(
    path: Path, taken_at, hour_known: bool, latency_units: str = "auto"
) -> tuple[list[Snapshot], list[str], list[str]]:
    """Snapshots of every endpoint in one saved listing, endpoints skipped (and why), and notes."""
    file = str(path)
    model, endpoints = _endpoints(read_json_file(path), file)
    raw = [_endpoint(ep, f"data.endpoints[{i}]", file) for i, ep in enumerate(endpoints)]
    medians = [(f"{e.place}.latency_last_30m", min(e.lat.values())) for e in raw if e.lat]
    factor, unit_note = latency_unit(medians, file, latency_units) if medians else (1.0, None)
    snaps, skipped = [], []
    for e in raw:
        snap = _snapshot(model, e, factor, file, taken_at, hour_known)
        if snap.ttft_s is None or snap.tps is None:
            gone = [q for q, v in (("latency_last_30m", snap.ttft_s), ("throughput_last_30m", snap.tps)) if v is None]
            skipped.append(
                f"{file}: {e.place} ({snap.provider}): {' and '.join(gone)} null or 0 (not measured; the listing "
                "needs an API key for these figures); not imported"
            )
            continue
        snaps.append(snap)
    return snaps, skipped, [f"{file}: {unit_note}"] if unit_note else []


@dataclass(frozen=True)
class _Endpoint:
    """One endpoint of a listing at ``place``: its object and its checked latency and throughput percentiles
    (``{"p50": ..., ...}``, latency in the listing's unit; None where not given)."""

    place: str
    ep: dict
    lat: dict | None
    thr: dict | None


def _endpoint(ep: Any, place: str, file: str) -> _Endpoint:
    """An endpoint object with its percentiles read and checked (in range, not falling from p50 to p99)."""
    if not isinstance(ep, dict):
        raise SnapshotFileError(f"{file}: {place}: expected an endpoint object")
    lat = _percentiles(
        ep.get("latency_last_30m"),
        file,
        f"{place}.latency_last_30m",
        high=TTFT_MAX_S * 1000,
        what="time to first token",
    )
    thr = _percentiles(
        ep.get("throughput_last_30m"),
        file,
        f"{place}.throughput_last_30m",
        high=MAX_TPS,
        what="output speed in tokens/s",
        low=MIN_TPS,
    )
    if lat:
        _monotone(lat, file, f"{place}.latency_last_30m", "falls from p50 to p99: not percentiles of a time")
    if thr:
        _monotone(
            thr,
            file,
            f"{place}.throughput_last_30m",
            f"falls from p50 to p99, but {THROUGHPUT_DOC}: this file contradicts that (the falling shape of "
            "the reference's own endpoint example is not a downloaded listing); re-download the listing",
        )
    return _Endpoint(place, ep, lat, thr)


def _snapshot(model: str, e: _Endpoint, factor: float, file: str, taken_at, hour_known: bool) -> Snapshot:
    """An endpoint's snapshot; ``factor`` turns its latencies into seconds."""
    place, ep, lat, thr = e.place, e.ep, e.lat, e.thr
    provider = ep.get("provider_name") if isinstance(ep.get("provider_name"), str) else None
    tag = ep.get("tag") if isinstance(ep.get("tag"), str) else None
    if provider is None and tag is None:
        raise SnapshotFileError(f"{file}: {place}: no provider_name or tag says who serves this endpoint")
    published = taken_at.date()
    figures, notes = _price_figures(ep, file, place, model, published)
    ttft = {int(k[1:]) / 100: v * factor for k, v in lat.items()} if lat else None
    tps = {int(k[1:]) / 100: v for k, v in thr.items()} if thr else None
    for k, v in (lat or {}).items():
        figures.append(_figure(f"time to first token {k} (last 30 min)", v * factor, "s", model, published))
    for k, v in (thr or {}).items():
        figures.append(_figure(f"output speed {k} (last 30 min)", v, "tokens/s", model, published))
    up = number(ep.get("uptime_last_30m"), file, f"{place}.uptime_last_30m", low=0.0, high=100.0, what="uptime %")
    if up is not None:
        figures.append(_figure("uptime (last 30 min)", up, "%", model, published))
    quant = ep.get("quantization")
    ctx = ep.get("context_length")
    if isinstance(quant, str) and quant:
        notes.append(f"quantization {quant}")
    if isinstance(ctx, int) and not isinstance(ctx, bool) and ctx > 0:
        notes.append(f"context length {ctx:,} tokens")
    notes.append(f"workload: {WORKLOAD}")
    return Snapshot(
        source=SOURCE,
        model=model,
        provider=provider or tag or "",
        provider_slug=slug(tag or provider or ""),
        taken_at=taken_at,
        hour_known=hour_known,
        window=WINDOW,
        workload="real OpenRouter traffic",
        ttft_s=ttft,
        tps=tps,
        file=file,
        place=place,
        figures=figures,
        notes=notes,
    )

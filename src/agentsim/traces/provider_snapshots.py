"""Provider speed snapshots (published percentiles or medians) as dated speed profiles.

OpenRouter and Artificial Analysis publish, per model and provider, how long the first token takes
and how fast the rest streams: OpenRouter as percentiles over the last 30 minutes of real traffic,
Artificial Analysis as medians over 72 hours of its own benchmark requests. The importers
(:mod:`agentsim.traces.openrouter`, :mod:`agentsim.traces.artificial_analysis`) read a file the
user downloaded into :class:`Snapshot` records; this module turns the snapshots of one endpoint into
a profile document in the format of :mod:`agentsim.model.profiles`.

**The fit.** A profile's TTFT and output speed are lognormal. Given published quantiles
``q_i`` at probabilities ``p_i``, the lognormal's ``(mu, sigma)`` minimise the squared error of
the log-quantiles::

    log q_i  ~  mu + sigma * z_i,     z_i = Phi^-1(p_i)

with ``mu`` pinned at the published median (``mu = log q_50``: the best-measured figure, which a
free fit would move to suit the far tail) and ``sigma`` the least-squares slope through the others,
``sigma = sum z_i (log q_i - mu) / sum z_i^2`` (:func:`fit_lognormal`; without a published median,
both by ordinary least squares). The profile writes ``{lognormal: {median: e^mu, p90: e^(mu +
1.2816 sigma)}}``. Published percentiles are ordinary ones, for the output speed too: OpenRouter's
``throughput_last_30m.p90`` is the speed 90% of requests stay at or below, so it enters the fit at
``p = 0.90`` (its API schema says so, and real listings rise from p50 to p99). The largest gap between a published
and a fitted log-quantile is kept in the profile's ``fit`` section.

**Medians only** (Artificial Analysis, or OpenRouter endpoints with only ``p50``): the spread is
a documented default, :data:`DEFAULT_TTFT_SIGMA` (the p90 is twice the median) and
:data:`DEFAULT_TPS_SIGMA` (the p90 is 1.3 times the median, and the p10 the median / 1.3), and the
profile says so (``fit.ttft.default_spread: true``, and its notes).

**Several snapshots of one endpoint** taken at different hours of the day (UTC) become a
time-of-day profile: each hour with snapshots gets the mean of their ``mu``; the profile's median
is ``e^(mean over those hours)``; the hourly factors ``conditions.time_of_day.{ttft_x,
output_tps_x}`` are ``e^(mu_hour - mu_base)``, hours without a snapshot interpolated in ``log``
between their measured neighbours around the clock (``curve: linear``: the factor of hour ``h``
holds at ``hh:30``, the middle of a snapshot window ending at ``(h+1):00``). ``sigma`` is the mean
of the snapshots'. Snapshots of one endpoint all within one hour are pooled the same way, without
factors.

Numbers are checked where they are read (:func:`number`): NaN, infinities, negative and absurd
values and non-numbers make the file unusable (:class:`SnapshotFileError`, naming the file and
the place); ``null`` and ``0`` mean "not measured" and are reported, never imported as speeds.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentsim.model.input_files import input_problem

__all__ = [
    "DEFAULT_TPS_SIGMA",
    "DEFAULT_TTFT_SIGMA",
    "ImportResult",
    "Snapshot",
    "SnapshotFileError",
    "figure",
    "fit_lognormal",
    "number",
    "parse_taken_at",
    "profile_documents",
    "read_json_file",
    "slug",
    "taken_at_of",
]

Z90 = 1.2815515655446004  # Phi^-1(0.9)
DEFAULT_TTFT_SIGMA = math.log(2.0) / Z90  # p90 = 2 x median
DEFAULT_TPS_SIGMA = math.log(1.3) / Z90  # p90 = 1.3 x median, p10 = median / 1.3


class SnapshotFileError(ValueError):
    """A snapshot file that cannot be imported: the message names the file, the place and the fix."""


@dataclass
class Snapshot:
    """What one endpoint's published figures say at one moment."""

    source: str  # openrouter | artificial-analysis
    model: str  # the source's model id, e.g. openai/gpt-4 or o3-mini
    provider: str  # who serves it, e.g. OpenAI (provider_name) or the model's creator
    provider_slug: str  # for the profile's name, e.g. openai
    taken_at: dt.datetime  # UTC, when the file was downloaded
    hour_known: bool  # whether taken_at has a time of day
    window: str  # what the figures cover, e.g. "30 minutes of requests before the download"
    workload: str  # what was measured
    ttft_s: dict[float, float] | None  # probability -> seconds
    tps: dict[float, float] | None  # probability -> tokens/s
    file: str
    place: str  # where in the file, e.g. data.endpoints[2]
    figures: list[dict] = field(default_factory=list)  # published numbers behind the profile (Figure dicts)
    notes: list[str] = field(default_factory=list)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.source, self.model, self.provider_slug)


@dataclass
class ImportResult:
    """Profiles made from snapshot files, and what was left out and why."""

    profiles: dict[str, dict] = field(default_factory=dict)  # name -> profile document
    skipped: list[str] = field(default_factory=list)  # "file: place: why" for each endpoint not imported
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"profiles": self.profiles, "skipped": self.skipped, "notes": self.notes}


# --------------------------------------------------------------------------- reading numbers


def figure(quantity: str, value: float, unit: str, source: str, published, url: str) -> dict:
    """A published number behind a profile (the ``figures`` entries of :mod:`agentsim.model.profiles`)."""
    return {
        "quantity": quantity,
        "value": float(f"{value:.6g}"),
        "unit": unit,
        "kind": "measured",
        "source": source,
        "published": published.isoformat(),
        "url": url,
    }


def number(v: Any, file: str, place: str, *, low: float, high: float, what: str) -> float | None:
    """A published figure: ``None`` for null or 0 (not measured); a float in ``(0, high]`` (and at
    least ``low``); raises :class:`SnapshotFileError` naming the place for anything else."""
    # each figure's plausible range (low, high) is narrower than its kind's in agentsim.model.domain
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise SnapshotFileError(
            f"{file}: {place}: {v!r} is not a number ({what}); the file is not in the published shape"
        )
    x = float(v)
    if not math.isfinite(x):
        raise SnapshotFileError(f"{file}: {place}: {v!r} is not a finite number ({what}); fix or re-download the file")
    if x == 0:
        return None
    if x < 0:
        raise SnapshotFileError(f"{file}: {place}: {x:g} is negative ({what}); fix or re-download the file")
    if x < low or x > high:
        raise SnapshotFileError(
            f"{file}: {place}: {x:g} is not a plausible {what} (expected {low:g} to {high:g}); "
            "fix or re-download the file"
        )
    return x


def read_json_file(path: Path) -> Any:
    """The JSON document of a downloaded file; :class:`SnapshotFileError` for a missing, huge or broken one."""
    import json

    file = str(path)
    if not path.is_file():
        raise SnapshotFileError(f"{file}: no such file (give the file you downloaded)")
    bad = input_problem(path, "provider listing")
    if bad is not None:
        raise SnapshotFileError(f"{file}: {bad[0]} ({bad[1]})")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SnapshotFileError(f"{file}: cannot be read as UTF-8 text ({exc})") from None
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise SnapshotFileError(f"{file}: not JSON ({exc}); save the API's response body as it came") from None


# --------------------------------------------------------------------------- when a snapshot was taken

_NAME_TIME = re.compile(
    r"(?P<y>20\d\d)-?(?P<m>[01]\d)-?(?P<d>[0-3]\d)(?:[T_ ]?(?P<H>[0-2]\d)[:\-h]?(?P<M>[0-5]\d)(?:[:\-]?[0-5]\d)?Z?)?"
)


def parse_taken_at(text: str) -> tuple[dt.datetime, bool]:
    """An ISO date or date-time (UTC unless it says otherwise): (the moment, whether it has a time of day)."""
    t = text.strip()
    try:
        if len(t) == 10:
            d = dt.date.fromisoformat(t)
            return dt.datetime(d.year, d.month, d.day, tzinfo=dt.UTC), False
        moment = dt.datetime.fromisoformat(t.replace("Z", "+00:00") if t.endswith("Z") else t)
    except ValueError:
        raise ValueError(f"'{text}' is not a date or date-time (write 2026-05-06 or 2026-05-06T14:00Z)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment.astimezone(dt.UTC), True


def taken_at_of(path: Path, taken_at: str | None) -> tuple[dt.datetime, bool, str]:
    """When ``path`` was downloaded: ``--taken-at`` (a date-time, or ``mtime``), else a date-time in its name.

    Returns (moment in UTC, whether the time of day is known, how it was found)."""
    if taken_at == "mtime":
        moment = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC)
        return moment, True, "the file's modification time"
    if taken_at is not None:
        try:
            moment, has_time = parse_taken_at(taken_at)
        except ValueError as exc:
            raise SnapshotFileError(f"--taken-at {exc}") from None
        return moment, has_time, "--taken-at"
    m = _NAME_TIME.search(path.name)
    if m is None:
        raise SnapshotFileError(
            f"{path}: says nowhere when it was downloaded: put the date and time in its name "
            "(e.g. endpoints-2026-05-06T14-00Z.json), or give --taken-at 2026-05-06T14:00Z (or --taken-at mtime)"
        )
    try:
        moment = dt.datetime(int(m["y"]), int(m["m"]), int(m["d"]), int(m["H"] or 0), int(m["M"] or 0), tzinfo=dt.UTC)
    except ValueError:
        raise SnapshotFileError(f"{path}: '{m[0]}' in its name is not a real date and time; rename the file") from None
    return moment, m["H"] is not None, "the file name (UTC)"


# --------------------------------------------------------------------------- fitting


def fit_lognormal(points: dict[float, float], default_sigma: float) -> tuple[float, float, float | None]:
    """``(mu, sigma, largest |log error|)`` of a lognormal through published quantiles (probability -> value).

    With a median among them, ``mu`` is its log and ``sigma`` the least-squares slope of ``log q - mu``
    on ``Phi^-1(p)`` through the others; without one, both by ordinary least squares. One quantile
    alone gets ``default_sigma`` (the error is then None). Raises ValueError when the quantiles fall
    as the probability rises (no lognormal has them)."""
    from scipy.special import ndtri

    ps = sorted(points)
    zs = [float(ndtri(p)) for p in ps]
    ys = [math.log(points[p]) for p in ps]
    if len(ps) == 1:
        return ys[0] - default_sigma * zs[0], default_sigma, None
    if 0.5 in points:
        mu = math.log(points[0.5])
        sigma = sum(z * (y - mu) for z, y in zip(zs, ys, strict=True)) / sum(z * z for z in zs)
    else:
        zbar, ybar = sum(zs) / len(zs), sum(ys) / len(ys)
        sigma = sum((z - zbar) * (y - ybar) for z, y in zip(zs, ys, strict=True)) / sum((z - zbar) ** 2 for z in zs)
        mu = ybar - sigma * zbar
    if sigma < 0:
        raise ValueError("the published percentiles fall as the percentile rises")
    err = max(abs(y - (mu + sigma * z)) for z, y in zip(zs, ys, strict=True))
    return mu, sigma, err


def _sig(x: float, digits: int = 4) -> float:
    return float(f"{x:.{digits}g}")


def _dist(mu: float, sigma: float) -> dict | float:
    if sigma <= 1e-9:
        return _sig(math.exp(mu))
    return {"lognormal": {"median": _sig(math.exp(mu)), "p90": _sig(math.exp(mu + Z90 * sigma))}}


@dataclass
class _Fit:
    mu: float
    sigma: float
    err: float | None
    default_spread: bool
    points: dict[float, float]


def _fit(points: dict[float, float] | None, default_sigma: float) -> _Fit | None:
    if not points:
        return None
    mu, sigma, err = fit_lognormal(points, default_sigma)
    return _Fit(mu, sigma, err, len(points) == 1, points)


# --------------------------------------------------------------------------- profiles


def slug(text: str) -> str:
    """A name part: lower case letters, digits and dots, other runs of characters as one hyphen."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-.") or "model"


def profile_name(s: Snapshot) -> str:
    model = slug(s.model.split("/")[-1])
    prefix = "openrouter" if s.source == "openrouter" else "aa"
    return f"{prefix}-{model}-{s.provider_slug}" if s.source == "openrouter" else f"{prefix}-{model}"


def _hourly(mus_by_hour: dict[int, float], base: float) -> list[float]:
    """24 factors e^(mu_h - base); hours without a snapshot interpolated in log around the clock."""
    hours = sorted(mus_by_hour)
    out = []
    for h in range(24):
        if h in mus_by_hour:
            out.append(_sig(math.exp(mus_by_hour[h] - base)))
            continue
        before = max((x for x in hours if x < h), default=hours[-1] - 24)
        after = min((x for x in hours if x > h), default=hours[0] + 24)
        w = (h - before) / (after - before)
        y = mus_by_hour[before % 24] * (1 - w) + mus_by_hour[after % 24] * w
        out.append(_sig(math.exp(y - base)))
    return out


def _combine(fits: list[tuple[Snapshot, _Fit]]) -> tuple[float, float, dict[int, float] | None]:
    """(base mu, mean sigma, hour -> mu when two or more hours have snapshots)."""
    by_hour: dict[int, list[float]] = defaultdict(list)
    undated: list[float] = []
    for s, f in fits:
        if s.hour_known:
            mid = s.taken_at - dt.timedelta(minutes=15) if s.source == "openrouter" else s.taken_at
            by_hour[mid.hour].append(f.mu)
        else:
            undated.append(f.mu)
    hour_mu = {h: sum(v) / len(v) for h, v in by_hour.items()}
    sigma = sum(f.sigma for _, f in fits) / len(fits)
    if len(hour_mu) >= 2 and fits[0][0].source == "openrouter":
        base = sum(hour_mu.values()) / len(hour_mu)
        return base, sigma, hour_mu
    mus = [*hour_mu.values(), *undated]
    return sum(mus) / len(mus), sigma, None


def _when(s: Snapshot) -> str:
    return s.taken_at.isoformat().replace("+00:00", "Z") if s.hour_known else s.taken_at.date().isoformat()


def _fit_record(fits: list[tuple[Snapshot, _Fit]], quantity: str) -> dict:
    f0 = fits[0][1]
    rec: dict[str, Any] = {
        "method": "median + default spread"
        if all(f.default_spread for _, f in fits)
        else "lognormal, least squares on log-quantiles",
        "default_spread": any(f.default_spread for _, f in fits),
        "snapshots": [
            {
                "taken_at": _when(s),
                "published": {f"p{round(p * 100):02d}": v for p, v in sorted(f.points.items())},
                "median": _sig(math.exp(f.mu)),
                "sigma": _sig(f.sigma),
                **({"largest_log_error": _sig(f.err)} if f.err is not None else {}),
            }
            for s, f in fits
        ],
    }
    if f0.default_spread:
        rec["default_sigma"] = _sig(f0.sigma)
    if quantity == "output_tps":
        rec["percentiles"] = "ordinary: a published pK is the speed K% of requests stay at or below (probability K/100)"
    return rec


def _endpoint_profile(name: str, snaps: list[Snapshot]) -> dict:
    snaps = sorted(snaps, key=lambda s: s.taken_at)
    last = snaps[-1]
    ttft_fits = [(s, f) for s in snaps if (f := _fit(s.ttft_s, DEFAULT_TTFT_SIGMA)) is not None]
    tps_fits = [(s, f) for s in snaps if (f := _fit(s.tps, DEFAULT_TPS_SIGMA)) is not None]
    t_mu, t_sigma, t_hours = _combine(ttft_fits)
    r_mu, r_sigma, r_hours = _combine(tps_fits)
    taken = ", ".join(s.taken_at.strftime("%Y-%m-%d %H:%MZ" if s.hour_known else "%Y-%m-%d") for s in snaps)
    doc: dict[str, Any] = {
        "profile": name,
        "description": f"{last.model} served by {last.provider}: {last.source} snapshot"
        + ("s" if len(snaps) > 1 else ""),
        "kind": "measured",
        "source": f"{_SOURCE_NAMES[last.source]}, {last.model} ({last.provider}): {last.window}; "
        f"workload: {last.workload}; snapshots taken {taken}; files: "
        + ", ".join(dict.fromkeys(s.file for s in snaps)),
        "date": last.taken_at.date().isoformat(),
        "ttft": _dist(t_mu, t_sigma),
        "output_tps": _dist(r_mu, r_sigma),
    }
    tod: dict[str, Any] = {}
    if t_hours:
        tod["ttft_x"] = {"hourly": _hourly(t_hours, t_mu), "curve": "linear"}
    if r_hours:
        tod["output_tps_x"] = {"hourly": _hourly(r_hours, r_mu), "curve": "linear"}
    if tod:
        doc["conditions"] = {"time_of_day": tod}
    notes = list(dict.fromkeys(n for s in snaps for n in s.notes))
    if any(f.default_spread for _, f in ttft_fits + tps_fits):
        notes.append(
            "DEFAULT SPREAD: the source publishes medians only here; the TTFT p90 is set to 2 x its median and the "
            "output speed's p90 to 1.3 x its median (agentsim's documented default, not a measurement)"
        )
    if tod:
        hours = sorted(set(t_hours or {}) | set(r_hours or {}))
        notes.append(
            "time of day (UTC) from snapshots at hours "
            + ", ".join(f"{h:02d}:00-{h + 1:02d}:00" for h in hours)
            + "; other hours interpolated; conditions.time_of_day needs workload.start in the scenario"
        )
    doc["notes"] = "; ".join(n.rstrip(".") for n in notes) + "."
    doc["fit"] = {"ttft": _fit_record(ttft_fits, "ttft"), "output_tps": _fit_record(tps_fits, "output_tps")}
    doc["figures"] = [f for s in snaps for f in s.figures]
    return doc


_SOURCE_NAMES = {
    "openrouter": "OpenRouter endpoint statistics (GET /api/v1/models/{author}/{slug}/endpoints)",
    "artificial-analysis": "Artificial Analysis models listing (GET /api/v2/data/llms/models)",
}


def profile_documents(snapshots: list[Snapshot], result: ImportResult) -> None:
    """Group snapshots by endpoint, keep those with both a TTFT and an output speed, and add one profile
    document per endpoint to ``result`` (validated against the profile format); the others go to
    ``result.skipped`` with the reason."""
    from agentsim.model.profiles import Profile

    groups: dict[tuple, list[Snapshot]] = defaultdict(list)
    for s in snapshots:
        groups[s.key].append(s)
    names: dict[str, tuple] = {}
    for key, snaps in groups.items():
        missing = [
            q
            for q, attr in (("time to first token", "ttft_s"), ("output speed", "tps"))
            if not any(getattr(s, attr) for s in snaps)
        ]
        if missing:
            s = snaps[-1]
            result.skipped.append(
                f"{s.file}: {s.place} ({s.model}, {s.provider}): no {' and no '.join(missing)} published "
                "(null or 0: not measured); not imported"
            )
            continue
        name = profile_name(snaps[0])
        if name in names:
            name = f"{name}-{slug(snaps[0].model.split('/')[0])}"
        names[name] = key
        doc = _endpoint_profile(name, snaps)
        Profile.model_validate(doc)  # the format of the bundled profiles, or a bug here
        result.profiles[name] = doc

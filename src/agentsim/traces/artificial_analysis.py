"""Artificial Analysis' models listing (``GET /api/v2/data/llms/models``) as speed snapshots.

The response body, saved by the user (agentsim fetches nothing)::

    {"status": 200, "prompt_options": {"parallel_queries": 1, "prompt_length": "medium"},
     "data": [{"id": "2dad8957-...", "name": "o3-mini", "slug": "o3-mini",
               "model_creator": {"id": "...", "name": "OpenAI", "slug": "openai"},
               "pricing": {"price_1m_blended_3_to_1": 1.925, "price_1m_input_tokens": 1.1,
                           "price_1m_output_tokens": 4.4},
               "median_output_tokens_per_second": 153.8,
               "median_time_to_first_token_seconds": 14.9,
               "median_time_to_first_answer_token": 14.9}, ...]}

The figures are **medians** (P50) over the 72 hours before the download, of Artificial Analysis'
own benchmark requests: by default one request at a time of ~1,000 input and ~1,000 output tokens
(``prompt_length: medium``; :data:`WORKLOADS` lists the others). A median gives no spread, so the
profile gets the documented default spread of :mod:`agentsim.traces.provider_snapshots` and says so.
``0`` (and ``null``) means not measured: such a figure is reported and not imported.

The time to first token is ``median_time_to_first_token_seconds`` (for a reasoning model, its first
*reasoning* token); ``median_time_to_first_answer_token`` is kept as a figure, and the gap between the
two (thinking time) is said in the profile's notes: in a scenario, give such a model's calls
``reasoning:`` tokens. The listing is per model: its provider is recorded as the model's creator
(Artificial Analysis' reference endpoint for the model).
"""

from __future__ import annotations

from pathlib import Path

from agentsim.traces.provider_snapshots import Snapshot, SnapshotFileError, figure, number, read_json_file, slug

__all__ = ["WORKLOADS", "read_artificial_analysis"]

SOURCE = "artificial-analysis"
WINDOW = "medians (P50) over the 72 hours before the download"
WORKLOADS = {
    "short": "~100 input and ~300 output tokens",
    "medium": "~1,000 input and ~1,000 output tokens",
    "long": "~10,000 input and ~1,500 output tokens",
    "100k": "~100,000 input and ~2,000 output tokens",
}
MAX_TTFT_S = 3600.0
MIN_TPS, MAX_TPS = 0.01, 100_000.0
MAX_USD_PER_MTOK = 1_000_000.0


def _workload(doc: dict, file: str) -> tuple[str, list[str]]:
    opts = doc.get("prompt_options")
    if opts is None:
        return WORKLOADS["medium"] + " (the site's default; the file has no prompt_options)", []
    if not isinstance(opts, dict):
        raise SnapshotFileError(f"{file}: prompt_options: expected an object")
    length = opts.get("prompt_length", "medium")
    parallel = opts.get("parallel_queries", 1)
    if length not in WORKLOADS:
        raise SnapshotFileError(f"{file}: prompt_options.prompt_length {length!r} is not one of {', '.join(WORKLOADS)}")
    if isinstance(parallel, bool) or not isinstance(parallel, int) or not 1 <= parallel <= 1000:
        raise SnapshotFileError(f"{file}: prompt_options.parallel_queries {parallel!r} is not a count of requests")
    text = f"{WORKLOADS[length]}, {parallel} request{'s' if parallel > 1 else ''} at a time"
    return text, ([f"measured with {parallel} requests in flight"] if parallel > 1 else [])


def _models(doc, file: str) -> list:
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        raise SnapshotFileError(
            f'{file}: not an Artificial Analysis models listing (expected {{"status": 200, "data": [...]}}, the '
            "body of GET /api/v2/data/llms/models)"
        )
    status = doc.get("status", 200)
    if status != 200:
        raise SnapshotFileError(f"{file}: status {status!r}: the saved response is an error, not the listing")
    return doc["data"]


def _figure(quantity: str, value: float, unit: str, name: str, published) -> dict:
    return figure(quantity, value, unit, f"Artificial Analysis, {name}", published, "https://artificialanalysis.ai/")


def read_artificial_analysis(path: Path, taken_at, hour_known: bool) -> tuple[list[Snapshot], list[str], list[str]]:
    """Snapshots of every model in one saved listing, models skipped (and why), and notes."""
    file = str(path)
    doc = read_json_file(path)
    models = _models(doc, file)
    workload, extra = _workload(doc, file)
    snaps, skipped = [], []
    for i, m in enumerate(models):
        place = f"data[{i}]"
        if not isinstance(m, dict):
            raise SnapshotFileError(f"{file}: {place}: expected a model object")
        snap = _snapshot(m, place, file, taken_at, hour_known, workload)
        snap.notes += extra
        if snap.ttft_s is None or snap.tps is None:
            gone = [
                q
                for q, v in (
                    ("median_time_to_first_token_seconds", snap.ttft_s),
                    ("median_output_tokens_per_second", snap.tps),
                )
                if v is None
            ]
            skipped.append(
                f"{file}: {place} ({snap.model}): {' and '.join(gone)} 0 or null (not measured); not imported"
            )
            continue
        snaps.append(snap)
    return snaps, skipped, []


def _text(m: dict, key: str, file: str, place: str) -> str | None:
    v = m.get(key)
    if v is not None and not isinstance(v, str):
        raise SnapshotFileError(f"{file}: {place}.{key}: expected a string")
    return v or None


def _snapshot(m: dict, place: str, file: str, taken_at, hour_known: bool, workload: str) -> Snapshot:
    model = _text(m, "slug", file, place) or _text(m, "id", file, place)
    if model is None:
        raise SnapshotFileError(f"{file}: {place}: no slug or id names the model")
    name = _text(m, "name", file, place) or model
    creator = m.get("model_creator") if isinstance(m.get("model_creator"), dict) else {}
    provider = creator.get("name") if isinstance(creator.get("name"), str) else "its creator"
    published = taken_at.date()
    ttft, answer, tps = _medians(m, file, place)
    figures, notes = _speed_figures(ttft, answer, tps, name, published)
    notes.insert(0, f"workload: {workload}; the TTFT includes the prefill of that prompt")
    figures += _prices(m, file, place, name, published)
    return Snapshot(
        source=SOURCE,
        model=model,
        provider=f"{provider} (Artificial Analysis' reference endpoint)",
        provider_slug=slug(creator.get("slug") if isinstance(creator.get("slug"), str) else provider),
        taken_at=taken_at,
        hour_known=hour_known,
        window=WINDOW,
        workload=workload,
        ttft_s={0.5: ttft} if ttft is not None else None,
        tps={0.5: tps} if tps is not None else None,
        file=file,
        place=place,
        figures=figures,
        notes=notes,
    )


# the measured medians read: (key, lowest, highest, what it is)
_MEDIANS = (
    ("median_time_to_first_token_seconds", 0.0, MAX_TTFT_S, "time to first token in seconds"),
    ("median_time_to_first_answer_token", 0.0, MAX_TTFT_S, "time to first answer token in seconds"),
    ("median_output_tokens_per_second", MIN_TPS, MAX_TPS, "output speed in tokens/s"),
)


def _medians(m: dict, file: str, place: str) -> tuple[float | None, ...]:
    """The model's median time to first token, to first answer token (s) and output speed (tokens/s)."""
    return tuple(
        number(m.get(key), file, f"{place}.{key}", low=low, high=high, what=what) for key, low, high, what in _MEDIANS
    )


def _speed_figures(ttft, answer, tps, name: str, published) -> tuple[list[dict], list[str]]:
    """The measured medians as figures, and a note when the first answer token comes well after the first."""
    figures, notes = [], []
    if ttft is not None:
        figures.append(_figure("time to first token (median, 72 h)", ttft, "s", name, published))
    if answer is not None:
        figures.append(_figure("time to first answer token (median, 72 h)", answer, "s", name, published))
        if ttft is not None and answer > ttft * 1.05:
            notes.append(
                f"first answer token {answer - ttft:.3g} s after the first token (thinking): give this model's calls "
                "reasoning: tokens in a scenario"
            )
    if tps is not None:
        figures.append(_figure("output speed (median, 72 h)", tps, "tokens/s", name, published))
    return figures, notes


def _prices(m: dict, file: str, place: str, name: str, published) -> list[dict]:
    pricing = m.get("pricing")
    if pricing is None:
        return []
    if not isinstance(pricing, dict):
        raise SnapshotFileError(f"{file}: {place}.pricing: expected an object")
    out = []
    for key, label in (("price_1m_input_tokens", "input price"), ("price_1m_output_tokens", "output price")):
        v = number(
            pricing.get(key), file, f"{place}.pricing.{key}", low=0.0, high=MAX_USD_PER_MTOK, what="USD per Mtok"
        )
        if v is not None:
            out.append(_figure(f"{label} (recorded only; a profile sets no price)", v, "USD/Mtok", name, published))
    return out

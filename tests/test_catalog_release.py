"""The catalog a price was looked up in, and its release date: read from the installed package and the
project's lock file (checked here against the lock file read independently with tomllib), never written down."""

from __future__ import annotations

import datetime as dt
import tomllib
from importlib.metadata import version
from pathlib import Path

from agentsim.pricing.catalog_release import CatalogRelease, catalog_release, locked_release_date
from agentsim.pricing.provenance import price_sources
from conftest import SCENARIOS

ROOT = Path(__file__).resolve().parents[1]


def _lock_entry() -> dict:
    lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    return next(p for p in lock["package"] if p["name"] == "genai-prices")


def test_release_is_the_locked_upload_day():
    entry = _lock_entry()
    assert entry["version"] == version("genai-prices")  # `make` installs what the lock pins
    files = [*entry.get("wheels", []), *([entry["sdist"]] if "sdist" in entry else [])]
    first = min(dt.datetime.fromisoformat(f["upload-time"].replace("Z", "+00:00")) for f in files)
    rel = catalog_release()
    assert rel == CatalogRelease(entry["version"], first.date())
    assert rel.text() == f"genai-prices {entry['version']}, released {first.date().isoformat()}"


def test_another_version_or_no_upload_time_is_unknown():
    lock = (ROOT / "uv.lock").read_text(encoding="utf-8")
    assert locked_release_date(lock, "0.0.0-not-a-release") is None
    bare = '[[package]]\nname = "genai-prices"\nversion = "9.9"\nsource = { registry = "x" }\n'
    assert locked_release_date(bare, "9.9") is None
    assert CatalogRelease("9.9").text() == "genai-prices 9.9, release date unknown"
    assert CatalogRelease(None).text() == "genai-prices (version unknown)"


def test_earliest_upload_of_that_version_only():
    lock = (
        '[[package]]\nname = "genai-prices"\nversion = "0.1"\nsdist = { upload-time = "2020-01-01T00:00:00Z" }\n'
        '[[package]]\nname = "genai-prices"\nversion = "0.2"\n'
        'sdist = { url = "u", upload-time = "2026-11-10T21:51:42Z" }\n'
        'wheels = [\n    { url = "w", upload-time = "2026-11-09T23:59:59Z" },\n]\n'
    )
    assert locked_release_date(lock, "0.2") == dt.date(2026, 11, 9)
    assert locked_release_date(lock, "0.1") == dt.date(2020, 1, 1)
    assert locked_release_date(lock.replace("\n", "\r\n"), "0.2") == dt.date(2026, 11, 9)  # a lock saved on Windows


def test_price_lines_name_the_model_and_catalog():
    import agentsim

    sc = agentsim.load(SCENARIOS / "coding-agent.yaml")
    src = price_sources(sc)
    rel = catalog_release().text()
    assert src["opus"] == f"catalog anthropic/claude-opus-5-5 as of 2026-12-01 (Claude Opus 5.5 in {rel})"
    assert src["opus/fast-now"] == (
        f"catalog anthropic/claude-opus-5-5 as of 2026-12-01 (speed=fast; Claude Opus 5.5 in {rel})"
    )
    assert src["opus/fast"] == "6 × the opus price"

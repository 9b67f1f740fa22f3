"""Which genai-prices catalog priced a run, and when it was released.

A catalog price is looked up *as of* a date (``prices_as_of``), but the catalog can only know the prices
announced before it was released: a page that says "catalog as of 2026-12-01" must also say which catalog
that was and of when, or a reader takes a three-week-old list for today's. The version comes from the
installed package's metadata. The package carries no release date of its own (neither its metadata nor its
data has one), so the date is read from the lock file of the project agentsim runs from (``uv.lock``, the
upload time of that very version's files on the package index) when there is one and it pins the installed
version; otherwise the date is unknown and the text says so. Nothing here is written down by hand.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CatalogRelease", "catalog_release", "locked_release_date"]

PACKAGE = "genai-prices"
_UPLOAD = re.compile(r'upload-time\s*=\s*"(\d{4}-\d{2}-\d{2})T')


@dataclass(frozen=True)
class CatalogRelease:
    """The installed catalog: its version (None when not installed) and release date (None when unknown)."""

    version: str | None
    released: dt.date | None = None

    def text(self) -> str:
        """``genai-prices 0.2.3, released 2026-11-10`` (or ``…, release date unknown``)."""
        if self.version is None:
            return f"{PACKAGE} (version unknown)"
        when = f"released {self.released.isoformat()}" if self.released else "release date unknown"
        return f"{PACKAGE} {self.version}, {when}"


def locked_release_date(lock_text: str, version: str) -> dt.date | None:
    """The earliest upload date of ``genai-prices`` ``version``'s files in a ``uv.lock`` text (None when the
    lock pins another version or records no upload time)."""
    head = f'[[package]]\nname = "{PACKAGE}"\nversion = "{version}"\n'
    text = lock_text.replace("\r\n", "\n")
    start = text.find(head)
    if start < 0:
        return None
    block = text[start + len(head) :].split("[[package]]", 1)[0]
    days = sorted(_UPLOAD.findall(block))
    return dt.date.fromisoformat(days[0]) if days else None


def _project_dirs() -> list[Path]:
    """Where agentsim's own project may be: the folder an editable install points to, and the folders
    above this package's source (a checkout run in place)."""
    import json
    from importlib.metadata import PackageNotFoundError, distribution
    from urllib.parse import unquote, urlparse

    dirs: list[Path] = []
    try:
        raw = distribution("agentsim").read_text("direct_url.json")
        url = urlparse(json.loads(raw)["url"]) if raw else None
        if url is not None and url.scheme == "file":
            dirs.append(Path(unquote(url.path)))
    except (PackageNotFoundError, ValueError, KeyError, TypeError):
        pass
    dirs += list(Path(__file__).resolve().parents[2:4])  # src/agentsim/pricing -> src, the checkout
    return list(dict.fromkeys(dirs))


def _is_agentsim(pyproject: Path) -> bool:
    return pyproject.is_file() and bool(re.search(r'(?m)^name\s*=\s*"agentsim"', pyproject.read_text("utf-8")))


@functools.cache
def catalog_release() -> CatalogRelease:
    """The installed genai-prices catalog's version and, where a lock file of agentsim's project pins that
    version, its release date (module docstring)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version(PACKAGE)
    except PackageNotFoundError:  # pragma: no cover - a dependency
        return CatalogRelease(None)
    for folder in _project_dirs():
        lock = folder / "uv.lock"
        try:
            if not lock.is_file() or not _is_agentsim(folder / "pyproject.toml"):
                continue
            released = locked_release_date(lock.read_text(encoding="utf-8"), installed)
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        if released is not None:
            return CatalogRelease(installed, released)
    return CatalogRelease(installed)

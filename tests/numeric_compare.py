"""Compare generated files with committed ones as parsed numbers, not bytes.

The last digit of a float printed from NumPy/SciPy/statsmodels output can change between library versions
(a different summation order, a different special-function kernel). A committed fixture or profile is
therefore checked structure for structure and number for number, with a relative tolerance of 1e-12:
tight enough that any real change to what the writer or the fit produces fails, loose enough that the
versions the lock file does not pin (or a new lock) do not.

``assert_same_numbers(actual, expected)`` reads both files by their suffix (``.json``, ``.jsonl``,
``.csv``, ``.yaml``/``.yml``); a string that reads as a number (CSV cells, OTLP's nanosecond strings) is
compared as a number. Everything else (keys, list lengths, strings, booleans, nulls) must be equal.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any

import yaml

RTOL = 1e-12
ATOL = 1e-15  # a value that is 0 in one version may be 1e-17 in another


def parse(text: str, suffix: str) -> Any:
    if suffix == ".json":
        return json.loads(text)
    if suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if suffix == ".csv":
        return list(csv.reader(io.StringIO(text)))
    if suffix in (".yaml", ".yml"):
        return yaml.safe_load(text)
    raise ValueError(f"no parser for {suffix!r} files")


def _as_number(x: Any) -> float | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int | float):
        return float(x)
    if isinstance(x, str):
        try:
            return float(x)
        except ValueError:
            return None
    return None


def differences(a: Any, b: Any, where: str = "$", rtol: float = RTOL, atol: float = ATOL) -> list[str]:
    """Every place where ``a`` and ``b`` differ beyond ``rtol`` (or ``atol``, for values near 0; empty when they
    agree)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return [f"{where}: keys {list(a)} != {list(b)}"]
        return [d for k in a for d in differences(a[k], b[k], f"{where}.{k}", rtol, atol)]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items != {len(b)}"]
        return [
            d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{where}[{i}]", rtol, atol)
        ]
    na, nb = _as_number(a), _as_number(b)
    if na is not None and nb is not None and type(a) is type(b):
        if math.isnan(na) and math.isnan(nb):
            return []
        return [] if math.isclose(na, nb, rel_tol=rtol, abs_tol=atol) else [f"{where}: {a!r} != {b!r}"]
    return [] if type(a) is type(b) and a == b else [f"{where}: {a!r} != {b!r}"]


def assert_same_numbers(actual: Path, expected: Path, rtol: float = RTOL, text: str | None = None) -> None:
    """``actual`` (or its ``text``) holds what ``expected`` holds, numbers equal to ``rtol``."""
    suffix = expected.suffix
    got = parse(actual.read_text(encoding="utf-8") if text is None else text, suffix)
    want = parse(expected.read_text(encoding="utf-8"), suffix)
    diff = differences(got, want, rtol=rtol)
    assert not diff, f"{expected.name} differs from what is generated now: " + "; ".join(diff[:5])

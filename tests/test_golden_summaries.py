"""Each bundled scenario's summary.json is byte-identical to the copy stored before a refactoring.

The copies in tests/golden/summaries were made (``--runs RUNS``) before the package was re-laid out in
layers. A change that is *meant* to change results re-generates them (and says so in its commit).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "summaries"
RUNS = 300


def scenario_of(golden: Path) -> Path:
    return ROOT / "scenarios" / (golden.stem.replace("__", "/") + ".yaml")


@pytest.mark.slow
@pytest.mark.parametrize("golden", sorted(GOLDEN.glob("*.json")), ids=lambda p: p.stem)
def test_summary_is_byte_identical_to_the_stored_copy(golden):
    cmd = [sys.executable, "-m", "agentsim", "run", str(scenario_of(golden)), "--json", "--runs", str(RUNS)]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr
    assert r.stdout == golden.read_text(encoding="utf-8")

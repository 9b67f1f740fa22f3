"""Each bundled scenario's summary.json holds what the copy stored before a refactoring holds, on any CPU.

The copies in tests/golden/summaries were made (``--runs RUNS``) before the package was re-laid out in
layers. A change that is *meant* to change results re-generates them (and says so in its commit).

**Portable, not byte for byte.** NumPy picks its SIMD kernels (``exp``, ``log``, ``expm1``...) by the CPU it
runs on, so the last bit of a draw differs between a machine with AVX-512 and one without (an AMD EPYC with
AVX2 and FMA: NumPy's ``X86_V3`` found, ``X86_V4`` not found). The stored copy is therefore compared number
for number to a relative tolerance of :data:`RTOL` (and :data:`ATOL` seconds or dollars for a value near
zero, such as a difference of two means), everything else (keys and their order, list lengths, strings,
booleans, nulls, integer counts) exactly (tests/numeric_compare.py). The largest difference seen between
this machine's kernels and the baseline ones is 1e-14 relative (a queue wait found by subtraction); a real
change moves a 300-run mean by far more than 1e-9 (one draw of one run changes it by about 1e-3 relative,
and :func:`test_a_real_change_is_caught` checks that another seed is caught). Byte-identity stays the rule
on one machine: tests/test_engines_agree.py, tests/test_summary_only.py, test_handcomputed.py's
determinism test and the worker tests compare two runs of the same process environment byte for byte.

**Every SIMD level of this machine.** Each scenario is run three ways: with NumPy's own choice of kernels,
with the highest level it found turned off (``NPY_DISABLE_CPU_FEATURES``; on an AVX-512 machine this is
the AVX2 machine of the report above), and with every dispatched level off (the baseline kernels, what the
oldest CPU of the build runs). So CI, whatever its CPU, runs the comparison on kernels of other machines
too, and a test that holds only on the machine that wrote its file fails there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from numeric_compare import differences

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = ROOT / "tests" / "golden" / "summaries"
RUNS = 300
RTOL = 1e-9  # relative, for every float (see the module docstring)
ATOL = 1e-9  # seconds or dollars: for a value near zero (a difference of two means)


def scenario_of(golden: Path) -> Path:
    return ROOT / "scenarios" / (golden.stem.replace("__", "/") + ".yaml")


def simd_levels() -> dict[str, str | None]:
    """``name -> NPY_DISABLE_CPU_FEATURES`` value: NumPy's own choice (None), the highest level found turned
    off, every dispatched level off (only the build's baseline). Levels that come to the same are left out."""
    found = list(np.show_config(mode="dicts").get("SIMD Extensions", {}).get("found") or [])  # (none: no key)
    levels: dict[str, str | None] = {"native": None}
    if len(found) > 1:
        levels[f"without-{found[-1]}"] = found[-1]
    if found:
        levels["baseline"] = " ".join(found)
    return levels


LEVELS = simd_levels()


def summary(scenario: Path, level: str | None, *extra: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "NPY_DISABLE_CPU_FEATURES"}
    if level is not None:
        env["NPY_DISABLE_CPU_FEATURES"] = level
    cmd = [sys.executable, "-m", "agentsim", "run", str(scenario), "--json", "--runs", str(RUNS), *extra]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.mark.slow
@pytest.mark.parametrize("level", list(LEVELS), ids=str)
@pytest.mark.parametrize("golden", sorted(GOLDEN.glob("*.json")), ids=lambda p: p.stem)
def test_summary_holds_the_stored_numbers(golden, level):
    got = summary(scenario_of(golden), LEVELS[level])
    diff = differences(json.loads(got), json.loads(golden.read_text(encoding="utf-8")), rtol=RTOL, atol=ATOL)
    assert not diff, f"{golden.name} ({level} SIMD kernels): " + "; ".join(diff[:5])


@pytest.mark.slow
def test_a_real_change_is_caught():
    """Another seed (every draw changes) is far outside the tolerance: it is no wider than it must be."""
    golden = GOLDEN / "chat-turn.json"
    got = json.loads(summary(scenario_of(golden), None, "--seed", "7"))
    want = json.loads(golden.read_text(encoding="utf-8"))
    assert got["seed"] != want["seed"]
    got["seed"] = want["seed"]
    diff = differences(got, want, rtol=RTOL, atol=ATOL)
    assert len(diff) > 20, diff  # nearly every figure moves, not one or two

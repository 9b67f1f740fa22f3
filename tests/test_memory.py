"""agentsim.plan.memory: the process-wide memory settings (they change speed, never a result).

Each check runs in a fresh interpreter, because the settings are made once per process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")

# Prints whether NumPy still asks for huge pages after tune_malloc(): the setter returns the previous value.
PROBE = """
import numpy as np
from agentsim.plan.memory import tune_malloc
tune_malloc()
core = getattr(np, "_core", None) or np.core
print(core.multiarray._set_madvise_hugepage(True))
"""


def _probe(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k not in ("NUMPY_MADVISE_HUGEPAGE", "AGENTSIM_NO_MALLOPT")}
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env={**clean, "PYTHONPATH": SRC, **env}, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the settings are made on Linux only")
def test_huge_pages_off_by_default():
    assert _probe() == "False"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the settings are made on Linux only")
def test_user_choices_are_left_alone():
    assert _probe(NUMPY_MADVISE_HUGEPAGE="1") == "True"  # the user's own NumPy setting wins
    assert _probe(AGENTSIM_NO_MALLOPT="1") == "True"  # memory left alone entirely

"""The documentation site builds with ``mkdocs build --strict``: every page in the navigation exists and
every link and anchor between pages resolves (a broken one is a warning, and --strict makes it fail)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from conftest import ROOT


def test_mkdocs_build_strict(tmp_path):
    mkdocs = shutil.which("mkdocs", path=str(ROOT / ".venv" / "bin")) or shutil.which("mkdocs")
    cmd = [mkdocs] if mkdocs else [sys.executable, "-m", "mkdocs"]
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # mkdocs-material's banner about its successor
    result = subprocess.run(
        [*cmd, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    pages = (
        "index.html",
        "concepts/index.html",
        "scenarios/index.html",
        "cli/index.html",
        "limits/index.html",
    )
    for page in pages:
        assert (tmp_path / "site" / page).exists(), page

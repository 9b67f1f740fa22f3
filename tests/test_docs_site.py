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
    # the notebooks (stored without outputs) are executed at build time and shown with their outputs
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks
    for nb in notebooks:
        page = (tmp_path / "site" / "notebooks" / nb.stem / "index.html").read_text(encoding="utf-8")
        assert "data:image/png;base64," in page, f"{nb.name}: no figure on its page"
    frontier = (tmp_path / "site" / "notebooks" / "03-speed-frontier" / "index.html").read_text(encoding="utf-8")
    assert "For this coding agent, going from 36 to 218 tokens/s saves " in frontier
    assert "{(wall_at(36)" in frontier  # the source is shown too, and its printed answer (above) beside it


def test_make_notebooks_installs_jupyterlab_from_the_lock_and_opens_the_notebooks():
    """``make notebooks`` (dry run: nothing installed here): the ``notebooks`` extra synced from uv.lock into .venv
    without removing anything, then JupyterLab on notebooks/; the extra is in pyproject.toml and the lock."""
    import tomllib

    make = shutil.which("make")
    if make is None:  # pragma: no cover - every machine of this project has make (the set-up uses it)
        import pytest

        pytest.skip("no make")
    out = subprocess.run([make, "-n", "-B", "notebooks"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    sync = next(line for line in lines if " sync " in line and "--extra notebooks" in line)
    assert "--locked" in sync and "--inexact" in sync
    assert any(line.startswith(".venv/bin/jupyter lab notebooks/") for line in lines)
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert any(req.startswith("jupyterlab") for req in extra["notebooks"])
    lock = (ROOT / "uv.lock").read_text(encoding="utf-8")
    assert 'name = "jupyterlab"' in lock and '"notebooks"' in lock

"""The layers import only downward (import-linter's contract in pyproject.toml), and a reversed arrow is caught."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = str(Path(sys.executable).with_name("lint-imports"))


def lint(root: Path, src: Path) -> subprocess.CompletedProcess:
    env = {"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin", "HOME": str(root)}
    return subprocess.run(
        [LINT, "--no-cache", "--config", str(root / "pyproject.toml")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_layers_contract_holds():
    r = lint(ROOT, ROOT / "src")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 kept, 0 broken" in r.stdout


def test_an_upward_import_is_caught(tmp_path):
    """On a copy of the package, the model layer imports a figure module: lint-imports must fail and say where."""
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "src" / "agentsim", tmp_path / "src" / "agentsim", ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    scenario = tmp_path / "src" / "agentsim" / "model" / "scenario.py"
    scenario.write_text(scenario.read_text(encoding="utf-8") + "\nfrom agentsim.viz import plots  # noqa: E402, F401\n")
    r = lint(tmp_path, tmp_path / "src")
    assert r.returncode != 0, r.stdout
    assert "0 kept, 1 broken" in r.stdout
    assert "agentsim.model.scenario -> agentsim.viz.plots" in r.stdout

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


def _layer_of(module: str, layers: list[list[str]]) -> int | None:
    """The index of ``module``'s layer (0: the top), or None outside the layers (the package root)."""
    for i, names in enumerate(layers):
        if any(module == n or module.startswith(n + ".") for n in names):
            return i
    return None


def _string_imports(src: Path) -> list[tuple[str, str]]:
    """(importer, imported) of every import by string (``import_module("agentsim...")``, ``__import__``) in the
    package: import-linter does not see them, so this test does."""
    import ast
    import importlib.util

    out = []
    for path in (src / "agentsim").rglob("*.py"):
        parts = path.relative_to(src).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
                name = ast.unparse(node.func).split(".")[-1]
                target = node.args[0].value
                if name in ("import_module", "__import__") and isinstance(target, str):
                    package = module if parts[-1] == "__init__" else module.rsplit(".", 1)[0]
                    out.append((module, importlib.util.resolve_name(target, package)))
    return out


def test_no_import_by_string_crosses_a_layer_upward():
    """sim/results.py once loaded agentsim.viz.figure_methods by string: an upward arrow neither checker saw."""
    import tomllib

    layers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]["layers"]
    layers = [[n.strip() for n in entry.split("|")] for entry in layers]
    found = _string_imports(ROOT / "src")
    upward = []
    for importer, target in found:
        a, b = _layer_of(importer, layers), _layer_of(target, layers)
        if a is not None and b is not None and b < a:
            upward.append(f"{importer} -> {target}")
    assert upward == []


def test_a_result_made_through_a_submodule_still_has_its_figure_methods():
    """The figures are functions of the viz layer; the package root (outside the layers) gives results their
    ``plot_*`` methods, also for a result made without touching ``agentsim.simulate``."""
    code = """
import sys
from agentsim.plan.validation import parse
from agentsim.sim.simulation import simulate
doc = {"name": "s", "runs": 20, "seed": 1,
       "models": {"m": {"price": {"input_mtok": 1, "output_mtok": 2}, "ttft": 0.5, "output_tps": 50}},
       "agent": {"steps": [{"call": {"output": 10}}]}}
res = simulate(parse(doc))
assert "agentsim.viz.figures" not in sys.modules  # nothing below viz loaded it
fig = res.plot_tradeoff()
from agentsim.viz import plot_tradeoff
fig2 = plot_tradeoff(res)
print(type(fig).__name__, type(fig2).__name__, fig.axes[0].get_title() == fig2.axes[0].get_title())
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["Figure", "Figure", "True"]

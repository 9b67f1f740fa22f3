"""Start-up stays light: ``agentsim --help`` and the command registry import no heavy library.

Each command imports what it uses when it runs (issue 15); this test runs the command line in a fresh
interpreter and lists the heavy top-level packages left in ``sys.modules``, so a module-level import
added to a command module fails here instead of quietly costing every command a second.
The speed itself is measured by ``benchmarks/startup.py``, never asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("numpy", "pandas", "pydantic", "scipy", "matplotlib", "simpy", "statsmodels", "httpx", "pyarrow", "rich")

_PROBE = """
import contextlib, io, json, sys
from agentsim.cli.main import app
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        app(ARGS)
    except SystemExit as exc:
        code = exc.code
heavy = sorted({name.split(".")[0] for name in sys.modules} & set(HEAVY))
print(json.dumps({"code": code, "heavy": heavy, "help": out.getvalue()}))
"""


def _probe(args: list[str]) -> dict:
    code = _PROBE.replace("ARGS", repr(args)).replace("HEAVY", repr(HEAVY))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_help_imports_no_heavy_package():
    got = _probe(["--help"])
    assert got["code"] == 0
    assert "validate" in got["help"] and "run" in got["help"]  # the commands were registered
    assert got["heavy"] == []


def test_command_help_imports_no_heavy_package():
    # a command's own --help renders its options from the signature alone; typer itself (0.2x) builds
    # pydantic adapters for a command's parameters, so pydantic is allowed here, nothing else
    for command in ("run", "validate", "sweep", "prices", "replay", "calibrate"):
        got = _probe([command, "--help"])
        assert got["code"] == 0, command
        assert set(got["heavy"]) <= {"pydantic"}, command


def test_import_time_log_agrees():
    # a second, independent look: -X importtime lists every module the import of the CLI loads
    err = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import agentsim.cli.main"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    ).stderr
    loaded = {
        line.rsplit("|", 1)[1].strip().split(".")[0] for line in err.splitlines() if line.startswith("import time:")
    }
    assert "typer" in loaded  # the log was read
    assert not loaded & set(HEAVY)


NUMERIC = {"numpy", "scipy", "pandas", "matplotlib", "statsmodels", "pyarrow"}


def test_validate_imports_no_numpy():
    # validating (and compiling, to report the compiler's problems) needs the scenario model (pydantic): NumPy
    # and SciPy (draws), pandas (tables) and matplotlib (figures) wait for a simulation. (A choose step, a
    # choice or gamma distribution or time-of-day factors bring NumPy with them; these scenarios have none.)
    # (team-of-agents.yaml is a workload: validate runs run's size guard on it, whose estimate of the runs a
    # workload starts takes distribution means, with NumPy)
    for name in ("coding-agent.yaml", "chat-turn.yaml", "voice-agent.yaml"):
        got = _probe(["validate", str(ROOT / "scenarios" / name)])
        assert got["code"] == 0, name
        assert "pydantic" in got["heavy"], name  # it did validate
        assert not set(got["heavy"]) & NUMERIC, name
    assert set(_probe(["validate", str(ROOT / "scenarios" / "coding-agent.yaml")])["heavy"]) <= {"pydantic", "rich"}


def test_validate_of_a_bad_file_imports_no_numpy(tmp_path):
    # the compiler's own problems (here: a tool latency that can exceed ten years) are found without NumPy too
    bad = tmp_path / "bad.yaml"
    text = (ROOT / "scenarios" / "coding-agent.yaml").read_text()
    bad.write_text(
        text.replace(
            "{lognormal: {median: 0.3, p90: 13.6, max: 600}}", "{lognormal: {median: 100000000, p90: 900000000}}"
        )
    )
    got = _probe(["validate", str(bad)])
    assert got["code"] == 2
    assert not set(got["heavy"]) & NUMERIC

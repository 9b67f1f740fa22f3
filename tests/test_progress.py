"""Progress bars: a long command shows one on a terminal, with its stage, done/total and a percentage;
``-q`` and a stderr that is not a terminal (a pipe) show none.

The terminal is a pseudo-terminal (Python's ``pty``) holding the command's stderr; stdout goes elsewhere,
so what is read is only what the command draws for a person watching. The bar is transient (erased at
the end), but its frames pass through the terminal, and the last one, drawn as the work completes,
shows 100%: the check needs no timing.
"""

from __future__ import annotations

import errno
import os
import pty
import subprocess
import sys

import pytest
import yaml

from conftest import model, scenario

BAR = "━"  # rich's bar glyph


@pytest.fixture(scope="module")
def long_file(tmp_path_factory):
    """A scenario of many blocks of runs (12 of 4,096), so the bar moves block by block."""
    doc = scenario(
        [{"repeat": {"times": 20, "steps": [{"call": {"model": "m", "output": 100}}]}}],
        models={"m": model(ttft={"lognormal": {"median": 1, "p90": 2}})},
        variants={"base": {}, "other": {}},
        runs=12 * 4096,
    )
    path = tmp_path_factory.mktemp("progress") / "long.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("TERM", "COLUMNS", "LINES", "NO_COLOR", "TTY_INTERACTIVE")}
    return {**env, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}


def _stderr_on_a_terminal(*args: str) -> str:
    """Run ``agentsim ARGS`` with its stderr on a pseudo-terminal; return everything drawn there."""
    master, slave = pty.openpty()
    cmd = [sys.executable, "-m", "agentsim", *args]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave, env=_env())
    os.close(slave)
    chunks = []
    try:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError as exc:  # EIO: the command ended and closed the terminal
                if exc.errno != errno.EIO:
                    raise
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
        assert proc.wait(timeout=600) == 0
    return b"".join(chunks).decode("utf-8", "replace")


def test_a_long_run_shows_a_bar_with_its_stage_and_a_percentage_on_a_terminal(long_file):
    drawn = _stderr_on_a_terminal("run", str(long_file))
    assert BAR in drawn and "simulating" in drawn
    assert "100%" in drawn and f"{12 * 4096}/{12 * 4096}" in drawn


@pytest.mark.parametrize("command", ["run", "size"])
def test_quiet_shows_no_bar_on_a_terminal(long_file, command):
    extra = ["--runs-per-month", "1000"] if command == "size" else []
    drawn = _stderr_on_a_terminal(command, str(long_file), "-q", *extra)
    assert BAR not in drawn and "%" not in drawn and "simulating" not in drawn


def test_size_shows_the_bar_too(long_file):
    drawn = _stderr_on_a_terminal("size", str(long_file), "--runs-per-month", "1000")
    assert BAR in drawn and "100%" in drawn


def test_a_pipe_sees_no_bar(long_file):
    r = subprocess.run(
        [sys.executable, "-m", "agentsim", "run", str(long_file)], capture_output=True, text=True, env=_env()
    )
    assert r.returncode == 0, r.stderr
    assert BAR not in r.stderr and "%" not in r.stderr and "simulating" not in r.stderr


# --------------------------------------------------------------------------- the library's callbacks


def test_simulate_reports_the_runs_done_block_by_block_and_changes_nothing(long_file):
    import agentsim

    seen = []
    with_bar = agentsim.simulate(long_file, runs=9000, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(4096, 9000), (8192, 9000), (9000, 9000)]
    assert with_bar.to_json() == agentsim.simulate(long_file, runs=9000).to_json()


def test_a_workload_reports_its_simulated_clock_and_changes_nothing():
    import agentsim
    from conftest import make

    doc = scenario(
        [{"call": {"model": "m", "output": 100}}, {"tool": {"latency": 2.0}}],
        models={"m": model(ttft={"lognormal": {"median": 1, "p90": 2}})},
        variants={"a": {}, "b": {}},
        workload={"concurrent": 3, "duration": {"hours": 1}},
    )
    seen = []
    with_bar = agentsim.simulate(make(doc), progress=lambda d, t: seen.append((d, t)))
    done = [d for d, _ in seen]
    assert {t for _, t in seen} == {2 * 3600.0}  # two variants' windows of an hour
    assert done == sorted(done) and done[-1] > 3600 and len(seen) <= 2 * 201
    assert with_bar.to_json() == agentsim.simulate(make(doc)).to_json()

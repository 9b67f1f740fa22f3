"""Result folders (``--out``): checked before the run, written whole, replaced whole, cleaned up on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentsim.cli.main import app
from agentsim.viz.outdir import MARKER, OutputError, check_folder, write_folder
from conftest import FIXTURES

runner = CliRunner()
GOOD = str(FIXTURES / "good.yaml")


def hidden(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".")]


def test_a_second_run_replaces_the_first_folder_whole(tmp_path):
    out = tmp_path / "res"
    r = runner.invoke(app, ["run", GOOD, "--runs", "3", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert (out / MARKER).is_file()
    # what an earlier run with limits left (limits.png, wait_cdf.png) and anything else in the folder
    (out / "limits.png").write_bytes(b"old")
    (out / "wait_cdf.png").write_bytes(b"old")
    r = runner.invoke(app, ["run", GOOD, "--runs", "3", "--out", str(out)])
    assert r.exit_code == 0, r.output
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(
        [MARKER, "calls.parquet", "runs.parquet", "summary.json", "scenario.resolved.yaml", "tradeoff.png"]
    )
    assert hidden(tmp_path) == []  # no temporary or old folder left beside it


def test_an_empty_folder_is_used(tmp_path):
    out = tmp_path / "empty"
    out.mkdir()
    r = runner.invoke(app, ["run", GOOD, "--runs", "2", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert (out / "summary.json").is_file() and (out / MARKER).is_file()


def test_a_foreign_non_empty_folder_is_refused_before_simulating(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    r = runner.invoke(app, ["run", GOOD, "--runs", "2", "--out", str(out)])
    assert r.exit_code == 2
    assert "thesis.tex" in r.output and MARKER in r.output and "new or empty folder" in r.output
    assert [p.name for p in out.iterdir()] == ["thesis.tex"]
    assert hidden(tmp_path) == []


@pytest.mark.parametrize("where", ["/", "~", "."])
def test_root_home_and_working_folder_are_refused(tmp_path, monkeypatch, where):
    monkeypatch.chdir(tmp_path)
    (tmp_path / MARKER).write_text("even with a marker")  # the working folder is refused anyway
    target = str(Path(where).expanduser())
    r = runner.invoke(app, ["run", GOOD, "--runs", "2", "--out", target])
    assert r.exit_code == 2, r.output
    assert "give a new folder name" in r.output
    with pytest.raises(OutputError):
        check_folder(target)


def test_a_path_that_is_a_file_fails_before_the_simulation(tmp_path, monkeypatch):
    import agentsim.sim.simulation

    def boom(*a, **k):  # the simulation must not even start
        raise AssertionError("simulated although --out is unusable")

    monkeypatch.setattr(agentsim.sim.simulation, "simulate", boom)
    target = tmp_path / "a-file"
    target.write_text("x")
    r = runner.invoke(app, ["run", GOOD, "--out", str(target)])
    assert r.exit_code == 2, r.output
    assert "is a file" in r.output
    r = runner.invoke(app, ["run", GOOD, "--out", str(target / "below")])
    assert r.exit_code == 2, r.output
    assert "is a file, not a folder" in r.output
    assert target.read_text() == "x"


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_an_unwritable_parent_fails_before_the_simulation(tmp_path, monkeypatch):
    import agentsim.sim.simulation

    monkeypatch.setattr(agentsim.sim.simulation, "simulate", lambda *a, **k: pytest.fail("simulated"))
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        r = runner.invoke(app, ["run", GOOD, "--out", str(ro / "res")])
        assert r.exit_code == 2, r.output
        assert "cannot create files in" in r.output
    finally:
        ro.chmod(0o755)


def test_calibrate_checks_both_targets_before_writing(tmp_path):
    """--plot into a path below a file: nothing (not even the profile) is written."""
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    prof = tmp_path / "p.yaml"
    meas = FIXTURES / "measurements" / "agentsim_measure.jsonl"
    r = runner.invoke(app, ["calibrate", str(meas), "-o", str(prof), "--plot", str(blocker / "fig.png")])
    assert r.exit_code == 2, r.output
    assert "--plot" in r.output and "is a file" in r.output
    assert not prof.exists()
    r = runner.invoke(app, ["calibrate", str(meas), "-o", str(blocker / "p.yaml"), "--plot", str(tmp_path / "f.png")])
    assert r.exit_code == 2, r.output
    assert not (tmp_path / "f.png").exists()


def test_report_checks_its_target_before_simulating(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    r = runner.invoke(app, ["report", GOOD, "--out", str(blocker / "r.html"), "--quiet"])
    assert r.exit_code == 2, r.output
    assert "is a file, not a folder" in r.output


def test_write_folder_leaves_nothing_when_a_writer_fails(tmp_path):
    out = tmp_path / "res"

    def bad(p):
        p.write_text("half")
        raise OSError(28, "No space left on device")

    with pytest.raises(OutputError, match="No space left"):
        write_folder(out, {"a.txt": lambda p: p.write_text("a"), "b.txt": bad})
    assert list(tmp_path.iterdir()) == []
    # an earlier result folder survives a failed rewrite untouched
    write_folder(out, {"a.txt": lambda p: p.write_text("first")})
    with pytest.raises(OutputError):
        write_folder(out, {"a.txt": bad})
    assert (out / "a.txt").read_text() == "first"
    assert hidden(tmp_path) == []


SCRIPT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from agentsim.viz.outdir import write_folder

    def slow(p):
        p.write_bytes(b"x" * 1_000_000)
        Path(sys.argv[2]).write_text("ready")
        time.sleep(60)

    try:
        write_folder(sys.argv[1], {"big.bin": slow})
    except KeyboardInterrupt:
        sys.exit(130)
    """
)


def test_sigterm_while_writing_removes_the_temporary_folder(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    ready = tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(work / "res"), str(ready)])
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None, "the writer ended early"
            assert time.monotonic() < deadline, "the writer never got going"
            time.sleep(0.05)
        assert hidden(work)  # the temporary folder exists while writing
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=30) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    assert list(work.iterdir()) == []


@pytest.mark.parametrize("keep", [True, False])
def test_calls_parquet_written_block_by_block_equals_the_calls_table(tmp_path, monkeypatch, keep):
    """Streamed (several blocks, variants interleaved while simulating) yet the same table as ``res.calls``,
    whether the blocks are kept in memory or simulated again for writing."""
    import pandas as pd

    import agentsim.sim.simulation
    from agentsim.plan.sampling import BLOCK_SIZE
    from agentsim.plan.validation import load
    from agentsim.viz.report import write_calls_parquet

    if not keep:
        monkeypatch.setattr(agentsim.sim.simulation, "KEEP_CALLS_LIMIT", 0)
    f = tmp_path / "two.yaml"
    f.write_text((FIXTURES / "good.yaml").read_text() + "variants:\n  standard: {}\n  fast: {speed: {opus: fast}}\n")
    res = agentsim.sim.simulation.simulate(load(f), runs=BLOCK_SIZE + 50, seed=3)
    f.unlink()
    parts = list(res.calls_parts())
    assert len(parts) == 2 * len(res.variants) and len(res.variants) >= 2  # really in parts
    path = tmp_path / "calls.parquet"
    write_calls_parquet(res, path)
    back = pd.read_parquet(path)
    pd.testing.assert_frame_equal(back, res.calls)
    assert list(tmp_path.iterdir()) == [path]  # the part files are gone


def test_measure_checks_its_output_before_sending_a_request(tmp_path, monkeypatch):
    import agentsim.measure.probe

    monkeypatch.setattr(agentsim.measure.probe, "write_measurements", lambda *a, **k: pytest.fail("measured"))
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    r = runner.invoke(
        app, ["measure", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "-o", str(blocker / "m.jsonl")]
    )
    assert r.exit_code == 2, r.output
    assert "-o" in r.output and "is a file, not a folder" in r.output

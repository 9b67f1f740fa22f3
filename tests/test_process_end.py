"""How the command-line process ends: at once after the command (no heap teardown), with the command's status,
its output flushed and its atexit functions run; and a closed output pipe is exit 2 with a message, not 1."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentsim.cli.process_end import exit_code

ROOT = Path(__file__).resolve().parents[1]
CODING = str(ROOT / "scenarios" / "coding-agent.yaml")


def _main_with_atexit(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    """``agentsim.cli.main.main`` (the console script's entry) in a child that registered an atexit function
    writing a file: whether it ran, and the command's status and output."""
    marker = tmp_path / "atexit-ran"
    code = textwrap.dedent(
        f"""
        import atexit, sys
        atexit.register(lambda: open({str(marker)!r}, "w").write("ran"))
        sys.argv = ["agentsim", *{list(args)!r}]
        from agentsim.cli.main import main
        main()
        print("not reached", file=sys.stderr)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    proc.atexit_ran = marker.exists()  # type: ignore[attr-defined]
    return proc


@pytest.mark.parametrize(
    "args, status, out",
    [
        (["validate", CODING], 0, "ok: "),
        (["validate", "no-such-file.yaml"], 2, ""),
        (["run", CODING, "--runs", "2", "--json"], 0, '"variants"'),
    ],
)
def test_the_process_ends_with_the_commands_status_its_output_and_its_atexit_functions(tmp_path, args, status, out):
    proc = _main_with_atexit(tmp_path, *args)
    assert proc.returncode == status, proc.stderr
    assert out in proc.stdout  # flushed before the process ended (stdout to a pipe is block-buffered)
    assert proc.atexit_ran  # coverage's data, logging's handlers, multiprocessing's clean-up are atexit functions
    assert "not reached" not in proc.stderr
    if status:
        assert "error:" in proc.stderr and "no-such-file.yaml" in proc.stderr


@pytest.mark.parametrize("code, status", [(None, 0), (0, 0), (2, 2), (130, 130), (256 + 3, 3), ("a message", 1)])
def test_exit_codes_are_read_as_python_reads_them(code, status, capsys):
    assert exit_code(SystemExit(code)) == status
    assert capsys.readouterr().err == ("a message\n" if isinstance(code, str) else "")


@pytest.mark.parametrize("args", [["run", CODING, "--runs", "2", "--json"], ["run", CODING, "--runs", "2"]])
def test_a_closed_output_pipe_is_exit_2_with_a_message(args):
    # the reader of stdout is gone before anything is written (as `agentsim ... | head -c 0`): the JSON document
    # (sys.stdout) and the table (rich) alike end the command with exit 2 and say why, not 1 and "please report"
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentsim", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT
    )
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 2, err
    assert "standard output was closed" in err and "please report" not in err

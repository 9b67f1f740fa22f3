"""Replacing a result folder, a set of files or one file: interrupted at every step, the target is wholly old
or wholly new.

A child process writes over an earlier target with every file-system step counted (``os.replace``,
``os.rename``, ``os.unlink``, ``os.rmdir``, ``os.mkdir`` and the one-step folder swap), and sends itself a
signal just before or just after step k, for every k:

* **SIGINT** (what Ctrl-C sends; SIGTERM is handled the same way): the target is the old one or the new
  one, and nothing hidden is left behind (the clean-ups ran);
* **SIGKILL** (no clean-up at all): the target is the old or the new one; or, for a set of files, a
  journal says a commit had begun (the files may be a mix), or, for the fallback folder swap (no
  ``renameat2``), the target is missing and the old folder lies beside it; :func:`recover` (what the next
  write does first) then makes it wholly new (the set) or wholly old (the folder).

The folder swap is tested both ways: with ``renameat2(RENAME_EXCHANGE)`` and with the fallback of two renames.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentsim.viz import atomic
from agentsim.viz.outdir import MARKER, recover, write_file, write_files, write_folder

CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    import agentsim.viz.atomic as atomic
    import agentsim.viz.outdir as outdir

    writer, k, when, sig, target = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], Path(sys.argv[5])
    SIG = {"INT": signal.SIGINT, "KILL": signal.SIGKILL, "TERM": signal.SIGTERM}[sig]
    count = [0]

    def counted(fn):
        def step(*args, **kwargs):
            count[0] += 1
            n = count[0]
            if n == k and when == "before":
                os.kill(os.getpid(), SIG)
            try:
                return fn(*args, **kwargs)
            finally:  # (also after a step that failed, e.g. a folder that exists already)
                if n == k and when == "after":
                    os.kill(os.getpid(), SIG)
        return step

    for name in ("replace", "rename", "unlink", "rmdir", "mkdir"):
        setattr(os, name, counted(getattr(os, name)))
    outdir.exchange = (lambda a, b: False) if writer == "folder-fallback" else counted(atomic.exchange)
    new = {"a.txt": "new", "c.txt": "new"}
    writers = {n: (lambda p, t=t: p.write_text(t)) for n, t in new.items()}
    try:
        if writer.startswith("folder"):
            outdir.write_folder(target, writers)
        elif writer == "files":
            outdir.write_files(target, writers)
        else:
            outdir.write_file(target, lambda p: p.write_text("new"))
    except KeyboardInterrupt:
        print(count[0])
        sys.exit(130)
    print(count[0])
    """
)

WRITERS = ("folder-exchange", "folder-fallback", "files", "file")
OLD = {"a.txt": "old", "b.txt": "old"}
NEW = {"a.txt": "new", "c.txt": "new"}


def _setup(tmp_path: Path, writer: str) -> Path:
    """The earlier target: a result folder, a folder with a set and a file of the user's, or one file."""
    if writer.startswith("folder"):
        target = tmp_path / "results"
        write_folder(target, {n: (lambda p, t=t: p.write_text(t)) for n, t in OLD.items()})
    elif writer == "files":
        target = tmp_path / "profiles"
        target.mkdir()
        (target / "mine.txt").write_text("the user's")
        write_files(target, {n: (lambda p, t=t: p.write_text(t)) for n, t in OLD.items()})
    else:
        target = tmp_path / "report.html"
        write_file(target, lambda p: p.write_text("old"))
    return target


def _state(target: Path, writer: str) -> str | None:
    """'old', 'new', 'missing', or None for anything else (a mix, a half-written file)."""
    if not os.path.lexists(target):
        return "missing"
    if writer == "file":
        text = target.read_text()
        return text if text in ("old", "new") else None
    files = {p.name: p.read_text() for p in target.iterdir() if p.is_file() and not p.name.startswith(".")}
    if writer == "files":  # a set written into a folder leaves the folder's other files alone (b.txt too)
        if files.pop("mine.txt", None) != "the user's":
            return None
        return "old" if files == OLD else "new" if files == {**OLD, **NEW} else None
    if not (target / MARKER).is_file():
        return None
    return "old" if files == OLD else "new" if files == NEW else None


def _hidden(tmp_path: Path, target: Path) -> list[str]:
    """Hidden leftovers: temporary siblings, staging folders and journals inside a set's folder."""
    out = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    if target.is_dir():
        out += [p.name for p in target.iterdir() if p.name.startswith(".") and p.name != MARKER]
    return out


def _child(tmp_path: Path, writer: str, k: int, when: str, sig: str, target: Path):
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    return subprocess.run(
        [sys.executable, str(script), writer, str(k), when, sig, str(target)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _steps(tmp_path: Path, writer: str) -> int:
    here = tmp_path / "count"
    here.mkdir()
    target = _setup(here, writer)
    r = _child(here, writer, 0, "before", "INT", target)
    assert r.returncode == 0, r.stderr
    assert _state(target, writer) == "new"
    return int(r.stdout.split()[-1])


@pytest.mark.parametrize("writer", WRITERS)
def test_sigint_at_every_step_leaves_old_or_new_and_nothing_hidden(tmp_path, writer):
    n = _steps(tmp_path, writer)
    assert n >= 3  # the steps are counted: writes, the commit, the clean-up
    seen = set()
    for k in range(1, n + 1):
        for when in ("before", "after"):
            here = tmp_path / f"{k}-{when}"
            here.mkdir()
            target = _setup(here, writer)
            r = _child(here, writer, k, when, "INT", target)
            assert r.returncode == 130, (k, when, r.stderr)
            state = _state(target, writer)
            assert state in ("old", "new"), (k, when, state, sorted(os.listdir(here)))
            assert not _hidden(here, target), (k, when, _hidden(here, target))
            seen.add(state)
    assert seen == {"old", "new"}  # early steps keep the old target, late ones the new


@pytest.mark.slow
@pytest.mark.parametrize("writer", WRITERS)
def test_sigkill_at_every_step_leaves_old_or_new_after_recovery(tmp_path, writer):
    n = _steps(tmp_path, writer)
    seen = set()
    for k in range(1, n + 1):
        for when in ("before", "after"):
            here = tmp_path / f"{k}-{when}"
            here.mkdir()
            target = _setup(here, writer)
            r = _child(here, writer, k, when, "KILL", target)
            assert r.returncode == -signal.SIGKILL, (k, when, r.stderr)
            state = _state(target, writer)
            journal = writer == "files" and any(p.name.endswith(".commit.json") for p in target.iterdir())
            aside = writer == "folder-fallback" and state == "missing"
            assert state in ("old", "new") or journal or aside, (k, when, state, sorted(os.listdir(here)))
            recover(target)
            after = _state(target, writer)
            assert after in ("old", "new"), (k, when, after)
            if journal:
                assert after == "new"  # a commit that had begun is finished
            if aside:
                assert after == "old"  # the folder set aside is moved back
            assert not _hidden(here, target), (k, when, _hidden(here, target))
            seen.add(after)
    assert seen == {"old", "new"}


def test_deferred_signals_deliver_after_the_block():
    got = []
    with pytest.raises(KeyboardInterrupt), atomic.deferred_signals():
        os.kill(os.getpid(), signal.SIGINT)
        got.append("the block went on")
    assert got == ["the block went on"]


def test_exchange_swaps_two_folders_in_one_step(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "x").write_text("a")
    (b / "x").write_text("b")
    if not atomic.exchange(a, b):
        pytest.skip("this system has no renameat2(RENAME_EXCHANGE): the fallback is tested above")
    assert (a / "x").read_text() == "b" and (b / "x").read_text() == "a"


def test_a_journal_cut_before_its_rename_is_no_commit(tmp_path):
    """A SIGKILL while the journal itself is written leaves a temporary file, not a journal: nothing moves."""
    out = tmp_path / "set"
    write_files(out, {"a.txt": lambda p: p.write_text("old")})
    staged = out / f"{atomic.STAGED}999999-x"
    staged.mkdir()
    (staged / "a.txt").write_text("new")
    (out / f"{staged.name}.partial").write_text('{"staged": ')  # the journal's temporary file, cut
    recover(out)
    assert (out / "a.txt").read_text() == "old"
    assert sorted(p.name for p in out.iterdir()) == ["a.txt"]


def test_a_journal_of_a_running_writer_is_left_alone(tmp_path):
    out = tmp_path / "set"
    write_files(out, {"a.txt": lambda p: p.write_text("old")})
    staged = out / f"{atomic.STAGED}{os.getppid()}-x"  # a process that runs (the test's parent)
    staged.mkdir()
    (staged / "a.txt").write_text("new")
    (out / f"{staged.name}.commit.json").write_text(json.dumps({"staged": staged.name, "names": ["a.txt"]}))
    recover(out)
    assert (out / "a.txt").read_text() == "old" and staged.is_dir()

"""Fuzzing the files a user hands agentsim besides scenarios: measurement files (``calibrate``) and
recorded sessions (``replay``).

Each example takes one of the committed example files (every measurement format in
``tests/fixtures/measurements``, every session format in ``tests/fixtures/sessions``) and corrupts it
with one to four mutations: truncation, lines deleted, duplicated or swapped, a number replaced by a
hostile one (``1e308``, ``NaN``, ``-1``, ``1e26``, a 30-digit integer, text, ``null``), a quoted word
swapped for another from the same file, raw or non-UTF-8 bytes inserted. The command then runs
in-process and must end within :data:`PER_EXAMPLE_S` seconds of CPU time with exit 0 or 2, no traceback and no
"please report" (exit 1).

In CI each test runs :data:`EXAMPLES` examples (40) with a derandomised (fixed) search. A long
run sets ``AGENTSIM_FUZZ_EXAMPLES`` (e.g. ``AGENTSIM_FUZZ_EXAMPLES=1000``; ``make fuzz`` does); it then
searches from a random seed, printed, that ``AGENTSIM_FUZZ_SEED=<seed>`` replays.
"""

from __future__ import annotations

import os
import random
import re
import signal
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from typer.testing import CliRunner

from agentsim.cli.main import app

FIX = Path(__file__).resolve().parent / "fixtures"
MEASUREMENTS = sorted((FIX / "measurements").iterdir())
SESSIONS = [
    *sorted(p for p in (FIX / "sessions").rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")),
    FIX / "kv-cache-tester" / "trace_0242.json",  # the small real traces (trace_0291.json is 160 kB)
    FIX / "kv-cache-tester" / "trace_0504.json",
]
LONG = "AGENTSIM_FUZZ_EXAMPLES" in os.environ
EXAMPLES = int(os.environ.get("AGENTSIM_FUZZ_EXAMPLES", "40"))
SEED = int(os.environ.get("AGENTSIM_FUZZ_SEED", random.SystemRandom().randrange(2**32)))
PER_EXAMPLE_S = 60
FORMAT_OF = {
    "agentsim_measure.jsonl": "measure",
    "aiperf_profile_export.jsonl": "aiperf",
    "guidellm_benchmarks.json": "guidellm",
    "llmperf_individual_responses.json": "llmperf",
    "measurements.csv": "csv",
    "otel_genai_spans.json": "otel",
    "vllm_bench_serve.json": "vllm",
}
HOSTILE = [
    b"1e308",
    b"-1e308",
    b"1e300",
    b"5e-324",  # a denormal
    b"9223372036854775808",  # 2^63
    b"-Infinity",
    b"NaN",
    b"Infinity",
    b"-1",
    b"0",
    b"1e26",
    b"123456789012345678901234567890",
    b"1.5",
    b'"12"',
    b"null",
    b"true",
    b"[]",
    b"{}",
    b'"\\ud800"',
]
runner = CliRunner()


def fuzz_settings(fn):
    """Bounded in CI (fixed search), long and seeded (the seed printed) when AGENTSIM_FUZZ_EXAMPLES is set."""
    fn = settings(
        max_examples=EXAMPLES,
        deadline=None,
        derandomize=not LONG,
        database=None,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
    )(fn)
    if LONG:
        print(f"fuzz seed {SEED} (replay with AGENTSIM_FUZZ_SEED={SEED})")
        fn = hypothesis_seed(SEED)(fn)
    return fn


class Blob(bytes):
    """File content that prints short in Hypothesis' failure reports (its size and first bytes)."""

    def __repr__(self) -> str:
        return f"<{len(self)} bytes: {bytes(self[:300])!r}...>"


@st.composite
def mutated(draw, data: bytes) -> bytes:
    """``data`` after one to four random corruptions."""
    for _ in range(draw(st.integers(1, 4))):
        lines = data.split(b"\n")
        kind = draw(st.sampled_from(["truncate", "drop", "dup", "swap", "number", "word", "bytes", "latin1", "blowup"]))
        if kind == "truncate" and data:
            data = data[: draw(st.integers(0, len(data) - 1))]
        elif kind == "drop" and len(lines) > 1:
            i = draw(st.integers(0, len(lines) - 1))
            data = b"\n".join(lines[:i] + lines[i + 1 :])
        elif kind == "dup" and lines:
            i = draw(st.integers(0, len(lines) - 1))
            data = b"\n".join(lines[: i + 1] + [lines[i]] * draw(st.integers(1, 3)) + lines[i + 1 :])
        elif kind == "swap" and len(lines) > 1:
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
            data = b"\n".join(lines)
        elif kind == "number":
            spots = [m.span() for m in re.finditer(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", data)]
            if spots:
                a, b = draw(st.sampled_from(spots))
                data = data[:a] + draw(st.sampled_from(HOSTILE)) + data[b:]
        elif kind == "word":
            words = [m.span() for m in re.finditer(rb'"[A-Za-z_][A-Za-z0-9_.]*"', data)]
            if len(words) > 1:
                (a, b), (c, d) = draw(st.sampled_from(words)), draw(st.sampled_from(words))
                data = data[:a] + data[c:d] + data[b:]
        elif kind == "bytes":
            at = draw(st.integers(0, len(data)))
            data = data[:at] + draw(st.binary(min_size=1, max_size=16)) + data[at:]
        elif kind == "latin1":
            at = draw(st.integers(0, len(data)))
            data = data[:at] + "é".encode("latin-1") + data[at:]
        elif kind == "blowup" and lines:  # one line repeated many times (a large, repetitive file)
            i = draw(st.integers(0, len(lines) - 1))
            data = b"\n".join(lines + [lines[i]] * 2000)
    return Blob(data)


@contextmanager
def time_limit(seconds: int, what: str):
    """Fail (instead of hanging the suite) when the body uses more than ``seconds`` of CPU time.

    CPU time, not wall time: on a loaded machine a healthy example may wait long for a core."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "ITIMER_PROF"):
        yield
        return

    def on_timer(signum, frame):
        raise TimeoutError(f"{what} used more than {seconds} s of CPU time")

    previous = signal.signal(signal.SIGPROF, on_timer)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def check(result, what: str) -> None:
    out = result.output
    assert "TimeoutError" not in out, f"{what}: too slow (seed {SEED}): {out[-500:]}"
    assert not isinstance(result.exception, TimeoutError), f"{what}: {result.exception} (seed {SEED})"
    assert result.exit_code in (0, 2), f"{what}: exit {result.exit_code} (seed {SEED}):\n{out[-3000:]}"
    assert result.exception is None or isinstance(result.exception, SystemExit), f"{what}: {result.exception!r}"
    assert "Traceback" not in out and "please report" not in out, f"{what}:\n{out[-3000:]}"


@fuzz_settings
@given(data=st.data())
def test_calibrate_on_corrupted_measurement_files(data):
    src = data.draw(st.sampled_from(MEASUREMENTS), label="file")
    content = data.draw(mutated(src.read_bytes()), label="content")
    fmt = data.draw(st.sampled_from(["auto", FORMAT_OF.get(src.name, "auto")]), label="format")
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / src.name
        f.write_bytes(content)
        with time_limit(PER_EXAMPLE_S, f"calibrate {src.name}"):
            r = runner.invoke(app, ["calibrate", str(f), "--format", fmt, "-o", str(Path(tmp) / "p.yaml")])
        check(r, f"calibrate of a corrupted {src.name}")
        if r.exit_code == 2:
            assert not (Path(tmp) / "p.yaml").exists()  # a refusal writes nothing


@fuzz_settings
@given(data=st.data())
def test_replay_on_corrupted_session_files(data):
    src = data.draw(st.sampled_from(SESSIONS), label="file")
    content = data.draw(mutated(src.read_bytes()), label="content")
    copies = data.draw(st.integers(1, 2), label="copies")  # the same file twice in the folder
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "sessions" / src.parent.name
        folder.mkdir(parents=True)
        for k in range(copies):
            (folder / (src.name if k == 0 else f"copy-{src.name}")).write_bytes(content)
        with time_limit(PER_EXAMPLE_S, f"replay {src.name}"):
            r = runner.invoke(app, ["replay", str(Path(tmp) / "sessions"), "--json"])
        check(r, f"replay of a corrupted {src.name}")


@pytest.mark.parametrize("src", MEASUREMENTS, ids=lambda p: p.name)
def test_uncorrupted_measurement_files_calibrate(src, tmp_path):
    """The corpus itself is valid, so the fuzzing starts from files that work."""
    r = runner.invoke(app, ["calibrate", str(src), "-o", str(tmp_path / "p.yaml")])
    check(r, src.name)

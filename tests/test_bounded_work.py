"""Every command ends in bounded time and memory (issue 38, third round): ``stream`` passes the size guard as
``run`` does; a reduction never walks a constant's broadcast view; an exhaustive search past its bound is refused
before it starts; ``report`` checks the ``sweeps:`` grid as ``sweep`` does, before it simulates; a Ctrl-C
(SIGINT) ends a command that runs tasks in worker processes without waiting for the tasks queued; running out of
memory past the guard is exit 2, never a traceback or exit 1.

Each case runs in a child process capped at 1 GiB of address space and a timeout: a case that hangs or eats
memory fails here instead of taking the machine.
"""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.connection import wait
from pathlib import Path

import numpy as np
import pytest

from agentsim.analysis.optimize import optimize
from agentsim.plan.sampling import constant_view, sample_block
from agentsim.plan.validation import parse
from agentsim.sim.executors import process_pool, stop_pool
from conftest import compile_plan, make, model, scenario

MODEL = "  m: {price: {input_mtok: 1, output_mtok: 2}, ttft: 0.5, output_tps: 50}\n"
HEAD = "name: t\nruns: 20\nmodels:\n" + MODEL + "agent:\n  steps:\n"
# 10^6 x 10^6 x 10^3 nested iterations of a call read by a person: 10^15 calls a run
NESTED = HEAD + (
    "    - repeat:\n        times: 1000000\n        steps:\n"
    "          - repeat:\n              times: 1000000\n              steps:\n"
    "                - repeat:\n                    times: 1000\n                    steps:\n"
    "                      - call: {model: m, output: 10, consumer: {reader: {tokens_per_s: 5}}}\n"
)


def _cli(args: list[str], timeout: float = 120, limit: int = 1 << 30) -> subprocess.CompletedProcess:
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run(
        [sys.executable, "-m", "agentsim", *args], capture_output=True, text=True, timeout=timeout, preexec_fn=cap
    )


@pytest.mark.parametrize("command", ["stream", "run", "report", "size", "sweep"])
def test_every_command_refuses_the_nested_scenario(tmp_path: Path, command):
    f = tmp_path / "nested.yaml"
    text = NESTED if command != "sweep" else NESTED + "sweeps:\n  - {set: runs, values: [20, 21]}\n"
    f.write_text(text)
    args = {
        "stream": ["stream", str(f), "-o", str(tmp_path / "s.html")],
        "run": ["run", str(f)],
        "report": ["report", str(f), "-o", str(tmp_path / "r.html")],
        "size": ["size", str(f), "--runs-per-month", "1000"],
        "sweep": ["sweep", str(f), "--json"],
    }[command]
    r = _cli(args)
    assert r.returncode == 2, r.stderr
    assert "too large" in r.stderr and "--max-calls" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "s.html").exists() and not (tmp_path / "r.html").exists()


def test_past_the_guard_out_of_memory_is_exit_2(tmp_path: Path):
    f = tmp_path / "nested.yaml"
    f.write_text(NESTED)
    r = _cli(["run", str(f), "--no-size-limit"])
    assert r.returncode == 2, r.stderr
    assert "out of memory" in r.stderr and "--no-size-limit" in r.stderr and "please report" not in r.stderr


def test_a_constant_count_is_read_without_walking_its_view():
    # a repeat of 10^6 inside a repeat of 10^6: the inner count is a constant view of 4 x 10^6 x ... elements; the
    # block's axis is the constant itself (a reduction over 10^13 elements would take hours, deaf to Ctrl-C)
    inner = {"repeat": {"times": 1000000, "steps": [{"wait": {"latency": 1}}]}}
    steps = [{"repeat": {"times": 1000000, "steps": [inner]}}]
    sc = make(scenario(steps, runs=4))
    plan = compile_plan(sc)
    inner = [n for n in plan.nodes if n.kind == "repeat"][1]
    started = time.process_time()
    block = sample_block(plan, 1, 0, 0, 4)
    assert block.dims[inner.id] == 1000000
    assert time.process_time() - started < 60  # a walk of the view would take hours
    assert constant_view(np.array(7), (3, 2)).shape == (3, 2)


def _units_doc(n: int) -> dict:
    m = model(price={"input_mtok": 1, "output_mtok": 2}, ttft=0.5, tps=50.0,
              speeds={"fast": {"output_tps_x": 2, "price_x": 2}})  # fmt: skip
    return scenario([{"call": {"name": f"s{i}", "output": 10}} for i in range(n)], models={"m": m}, runs=50)


@pytest.mark.parametrize("units,count", [(13, "8,192"), (20, "1,048,576"), (60, "1.15e+18")])
def test_an_exhaustive_search_past_its_bound_is_refused_before_it_starts(units, count):
    # two options (standard, fast) for each unit: 2^13, 2^20, 2^60 assignments, past the bound of 4,096
    sc = parse(_units_doc(units))
    started = time.process_time()
    with pytest.raises(ValueError, match="exhaustive search would simulate") as err:
        optimize(sc, budget_usd_per_run=1.0, method="exhaustive")
    assert time.process_time() - started < 30  # nothing simulated (2^20 candidates would take hours)
    assert f"{count} assignments" in str(err.value) and "--method greedy" in str(err.value)
    assert "4,096" in str(err.value)


def test_an_exhaustive_search_at_its_bound_runs():
    # 2^3 = 8 assignments within a bound of 8: simulated, every one
    opt = optimize(parse(_units_doc(3)), budget_usd_per_run=1.0, method="exhaustive", exhaustive_max=8, runs=20)
    assert opt.method == "exhaustive" and opt.evaluated == 8


def test_optimize_command_refuses_with_exit_2(tmp_path: Path):
    import yaml

    f = tmp_path / "o.yaml"
    f.write_text(yaml.safe_dump(_units_doc(20)))
    r = _cli(["optimize", str(f), "--method", "exhaustive", "--budget-usd-per-run", "1"], timeout=60)
    assert r.returncode == 2 and "--method greedy" in r.stderr and "Traceback" not in r.stderr


GRID = (
    HEAD
    + "    - call: {name: a, model: m, output: 10}\n"
    + (
        "sweeps:\n"
        "  - {set: 'agent.steps[0].call.output', range: {start: 1, stop: 1000, step: 1}}\n"
        "  - {set: 'agent.steps[0].call.input', range: {start: 1, stop: 1000, step: 1}}\n"
    )
)


@pytest.mark.parametrize("command", ["validate", "report", "sweep"])
def test_report_checks_the_grid_as_sweep_does(tmp_path: Path, command):
    # 1,000 x 1,000 = 10^6 points, past 100,000: the same message, exit 2, before anything is simulated
    f = tmp_path / "g.yaml"
    f.write_text(GRID)
    args = [command, str(f)] + (["-o", str(tmp_path / "r.html")] if command == "report" else [])
    r = _cli(args + (["--json"] if command == "sweep" else []), timeout=60)
    assert r.returncode == 2, r.stderr
    assert f"{f}:8: sweeps: the grid has 1,000,000 points (more than 100,000); use fewer values" in r.stderr
    assert "please report" not in r.stderr and not (tmp_path / "r.html").exists()


def test_a_zipped_grid_counts_its_group_once(tmp_path: Path):
    # two places varied together, 1,000 values each: 1,000 points (validate once multiplied them: 10^6)
    f = tmp_path / "z.yaml"
    f.write_text(
        HEAD
        + "    - call: {name: a, model: m, output: 10}\n"
        + "sweeps:\n  - together:\n"
        + "    - {set: 'agent.steps[0].call.output', range: {start: 1, stop: 1000, step: 1}}\n"
        + "    - {set: 'agent.steps[0].call.input', range: {start: 1, stop: 1000, step: 1}}\n"
    )
    r = _cli(["validate", str(f)], timeout=60)
    assert r.returncode == 0, r.stderr


# --------------------------------------------------------------------------- Ctrl-C with worker processes

SLOW = HEAD.replace("runs: 20", "runs: 400") + (
    "    - repeat:\n        times: 2000\n        steps:\n"
    "          - call: {name: a, model: m, output: 10}\n"
    "          - parallel: [{call: {model: m, output: 5}}, {wait: {latency: 1}}]\n"
    "sweeps:\n  - {set: runs, range: {start: 400, stop: 479, step: 1}}\n"
)


def test_ctrl_c_ends_a_sweep_without_waiting_for_its_queued_points(tmp_path: Path):
    # 80 points of about two seconds of work each on 2 worker processes: over a minute of work queued. SIGINT to
    # the command alone (not its workers) ends it with exit 130 in seconds: the queued points are cancelled and
    # the workers ended (before, the pool waited for every point, then the command went on as if not interrupted)
    f = tmp_path / "slow.yaml"
    f.write_text(SLOW)
    p = subprocess.Popen(
        [sys.executable, "-m", "agentsim", "sweep", str(f), "--workers", "2", "--json"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(4)
    assert p.poll() is None  # still working
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=30)  # the whole sweep takes far longer
    finally:
        p.kill()
    assert p.returncode == 130 and "interrupted" in err


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_a_pool_ended_by_an_exception_stops_its_workers():
    # process_pool ends its processes when its block raises; _processes is what Python 3.11-3.13 keep them in
    with pytest.raises(KeyboardInterrupt), process_pool(2) as pool:
        futures = [pool.submit(_sleep, 30) for _ in range(6)]
        time.sleep(0.5)
        workers = list(pool._processes.values())
        assert len(workers) == 2 and all(w.is_alive() for w in workers)
        raise KeyboardInterrupt
    # each worker has exited: its sentinel (closed by the process's end) is ready. Not is_alive(): when the
    # pool's own manager thread reaps a worker first, is_alive() on that Process can still read True
    assert len(wait([w.sentinel for w in workers], timeout=10)) == len(workers)
    assert all(f.cancelled() or f.done() for f in futures)
    with process_pool(2) as pool:  # a block that ends normally waits for its tasks
        assert list(pool.map(_sleep, [0.01, 0.02])) == [0.01, 0.02]
    stop_pool(ProcessPoolExecutor(1))  # a pool that never started a process

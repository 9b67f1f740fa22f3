"""One simulation's blocks on a Dask cluster give the same summary.json bytes as one process.

Blocks are seeded independently (seed, block index) and reassembled in order, so where they ran
must not show in any figure: the one-process run is the independent computation each Dask run is
compared with, byte for byte. A scheduler that cannot be reached is a one-paragraph error, exit 2,
in bounded time (the subprocess has a timeout), never a traceback.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agentsim.sim.executors import ExecutorError, ordered_map, unordered_map
from agentsim.sim.simulation import simulate
from conftest import model, scenario

distributed = pytest.importorskip("distributed")

ROOT = Path(__file__).resolve().parents[1]


def _small(tmp_path: Path, runs: int = 9000) -> Path:
    """Three blocks (4096 runs each) of a small scenario with a repeat and two models."""
    doc = scenario(
        [
            {"call": {"name": "plan", "model": "m", "output": 60}},
            {
                "repeat": {
                    "times": {"uniform": {"low": 1, "high": 4}},
                    "steps": [{"call": {"model": "m", "output": 80}}],
                }
            },
        ],
        models={"m": model(ttft={"exponential": {"mean": 1}}), "q": model(tps=400)},
        variants={"slow": {}, "quick": {"model": {"m": "q"}}},
        runs=runs,
    )
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None, silence_logs=logging.ERROR
    )
    c = distributed.Client(cluster, set_as_default=False)
    yield c
    c.close()
    cluster.close()


def test_two_dask_workers_give_the_bytes_of_one_process(tmp_path, client):
    path = _small(tmp_path)
    one = simulate(path).to_json()
    on_dask = simulate(path, executor=client)
    assert on_dask.to_json() == one
    assert len(client.nthreads()) == 2  # the blocks did go to a two-worker cluster
    # the per-run table too (summary.json is built from it)
    assert on_dask.runs.equals(simulate(path).runs)


def test_the_des_on_dask_gives_the_same_bytes(tmp_path, client):
    path = _small(tmp_path, runs=4500)  # two blocks
    assert simulate(path, engine="des", executor=client).to_json() == simulate(path, engine="des").to_json()


def test_ordered_map_keeps_the_order_of_the_items(client):
    # more items than the in-flight window (4 per worker thread): order kept while results stream
    items = list(range(40))
    assert list(ordered_map(pow, 2, items, executor=client)) == [pow(2, i) for i in items]
    assert sorted(unordered_map(abs, [-3, 1, -2], executor=client)) == [1, 2, 3]


def _sampled(monkeypatch, share: int, least: int) -> None:
    # per-call statistics over the first runs only (agentsim.sim.results.per_call_runs), scaled down
    import agentsim.sim.results

    monkeypatch.setattr(agentsim.sim.results, "PER_CALL_SHARE", share)
    monkeypatch.setattr(agentsim.sim.results, "PER_CALL_MIN", least)


def test_blocks_past_the_sampled_runs_send_no_samples_and_change_nothing(tmp_path, client, monkeypatch):
    # ~3.5 calls a run, 12 blocks, two variants: the statistics read the first 12 x 4096 / 8 = 6,144 runs
    # (into the 2nd block); the blocks after it neither compute nor send samples
    _sampled(monkeypatch, 8, 100)
    path = _small(tmp_path, runs=12 * 4096)
    one = simulate(path)
    on_dask = simulate(path, executor=client)
    assert on_dask.to_json() == one.to_json()
    assert on_dask.runs.equals(one.runs)


def test_calls_not_made_do_not_move_the_sampled_runs(tmp_path, client, monkeypatch):
    # a choose of 6 one-call options: the estimate counts 6 calls a run, 1 is made; the sampled runs are
    # a number of runs, so every block agrees on them whatever the calls made
    _sampled(monkeypatch, 1, 30_000 * 6)
    options = [
        {"p": p, "steps": [{"call": {"model": "m", "output": 50 * (i + 1)}}]} for i, p in enumerate([0.5] + [0.1] * 5)
    ]
    doc = scenario(
        [{"choose": {"options": options}}],
        models={"m": model(ttft={"exponential": {"mean": 1}}, tps={"lognormal": {"median": 80, "p90": 110}})},
        runs=12 * 4096,
    )
    path = tmp_path / "choose.yaml"
    path.write_text(yaml.safe_dump(doc))
    one = simulate(path)
    assert simulate(path, executor=client).to_json() == one.to_json()


def test_executor_mistakes_are_refused_before_any_work(tmp_path, client):
    path = _small(tmp_path, runs=10)
    with pytest.raises(ExecutorError, match="unknown executor 'spark'"):
        simulate(path, executor="spark")
    with pytest.raises(ExecutorError, match="needs the dask executor"):
        simulate(path, scheduler="tcp://127.0.0.1:8786")
    with pytest.raises(ExecutorError, match="not both"):
        simulate(path, executor=client, scheduler="tcp://127.0.0.1:8786")


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once the socket is closed


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="3s", COLUMNS="200")
    return subprocess.run(
        [sys.executable, "-m", "agentsim", *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )


@pytest.mark.parametrize(
    "address, says",
    [
        ("tcp://127.0.0.1:{closed_port}", "refused"),  # the port is found when the test runs (xdist-stable ids)
        ("not an address", "missing port number"),
    ],
)
def test_an_unreachable_scheduler_is_a_clear_error(tmp_path, address, says):
    address = address.format(closed_port=_closed_port())
    path = _small(tmp_path, runs=10)
    out = _cli("run", str(path), "--executor", "dask", "--scheduler", address)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and "Exception ignored" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot use the Dask scheduler at")
    assert address in lines[0] and says in lines[0] and "check the address" in lines[0].lower()


def test_scheduler_without_dask_is_an_option_error(tmp_path):
    out = _cli("run", str(_small(tmp_path, runs=10)), "--scheduler", "tcp://127.0.0.1:8786")
    assert out.returncode == 2 and out.stderr.strip() == "error: --scheduler needs --executor dask"


@pytest.mark.slow
def test_cli_run_on_a_local_dask_cluster_prints_the_same_summary(tmp_path):
    # --executor dask without --scheduler starts a LocalCluster of --workers processes
    path = _small(tmp_path)
    one = _cli("run", str(path), "--json")
    two = _cli("run", str(path), "--json", "--executor", "dask", "--workers", "2")
    assert one.returncode == 0 and two.returncode == 0, two.stderr
    assert two.stdout == one.stdout


def test_without_dask_installed_the_error_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # import dask.distributed raises ImportError
    with pytest.raises(ExecutorError, match=r"pip install 'agentsim\[dask\]'"):
        simulate(_small(tmp_path, runs=10), executor="dask")


def _profiler_on() -> bool:
    import dask

    return dask.config.get("distributed.worker.profile.enabled")


def test_the_local_cluster_started_here_runs_its_workers_without_the_profiler(tmp_path):
    # no dashboard reads it; the workers are other processes, so the setting has to travel to them.
    # Its client fetches results straight from the worker: the same bytes as one process
    from agentsim.sim.executors import dask_client

    path = _small(tmp_path)
    with dask_client(1) as client:
        assert list(client.run(_profiler_on).values()) == [False]
        assert simulate(path, executor=client).to_json() == simulate(path).to_json()
    assert _profiler_on()  # this process's own configuration is left as it was

"""The size guard counts every step instance, not only calls (issue 24): tools, waits, listens, the copies
of a fan-out's body, and what control steps hold in memory (counts, picks).

Refused before any work starts with exit 2 and a way out, in a subprocess capped at 1 GiB: a fan-out of a
billion waits inside a choose (``make fuzz`` seed 1018239909 ran out of memory on it while passing
``--max-calls 20000``), a repeat of 10^8 tool runs. The estimates are checked by hand.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from agentsim.plan.compiler import compile_plan
from agentsim.plan.sizeguard import BYTES_PER_CALL, BYTES_PER_RUN, BYTES_PER_STEP, estimate
from conftest import make, model, scenario

MODEL = "  m: {price: {input_mtok: 1, output_mtok: 2}, ttft: 0.5, output_tps: 50}\n"
BASE = "name: t\nruns: 20\nmodels:\n" + MODEL + "agent:\n  steps:\n    - call: {output: 10}\n"
CASES = {
    "fanout of waits in a choose": "    - choose: {options: [{p: 0.5, steps: [{fanout: {n: 1000000000, "
    "steps: [{wait: {latency: 1}}]}}]}, {p: 0.5, steps: []}]}\n",
    "repeat of tools": "    - repeat: {times: 100000000, steps: [{tool: {latency: 0.1, output: 1}}]}\n",
    "listens in a fanout": "    - fanout: {n: 1000000000, steps: [{listen: {stt: 0.2}}]}\n",
}


def _limit(nbytes: int):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))

    return apply


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("limit", [["--max-calls", "20000"], []], ids=["max-calls", "default"])
def test_huge_step_counts_are_refused_before_work_starts(tmp_path: Path, case, limit):
    f = tmp_path / "s.yaml"
    f.write_text(BASE + CASES[case])
    r = subprocess.run(
        [sys.executable, "-m", "agentsim", "run", str(f), *limit],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limit(1 << 30),
    )
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr
    assert "other step instances" in r.stderr and ("--max-calls" in r.stderr or "--no-size-limit" in r.stderr)


def test_the_estimate_counts_steps_by_hand():
    # 10 runs; per run: 1 call, a repeat of 3 (each: a tool and a fan-out of 2 waits), a listen
    steps = [
        {"call": {"output": 10}},
        {
            "repeat": {
                "times": 3,
                "steps": [{"tool": {"latency": 1}}, {"fanout": {"n": 2, "steps": [{"wait": {"latency": 1}}]}}],
            }
        },
        {"listen": {"stt": 0.3}},
    ]
    plan = compile_plan(make(scenario(steps, models={"m": model()})))
    est = estimate(plan, 10)
    assert est.calls == 10 * 1
    # leaves that are not calls: 3 tools + 3 x 2 waits + 1 listen = 10 per run
    assert est.steps == 10 * 10
    # held per run: the leaves, plus the repeat (1), its fan-outs (3); one call
    assert est.max_steps_per_run == 10 + 1 + 3 and est.max_calls_per_run == 1
    assert est.bytes == 10 * BYTES_PER_RUN + 10 * (1 * BYTES_PER_CALL + 14 * BYTES_PER_STEP)


def test_a_repeat_with_continue_p_and_no_max_is_sized():
    # the geometric count: mean 1 / (1 - p), and its 1 - 1e-9 quantile bounds the instances held
    plan = compile_plan(make(scenario([{"repeat": {"continue_p": 0.5, "steps": [{"call": {"output": 10}}]}}])))
    est = estimate(plan, 100)
    assert est.calls == pytest.approx(100 * 2.0)
    assert est.max_calls_per_run == 30  # 1 + floor(log(1e-9) / log(0.5))

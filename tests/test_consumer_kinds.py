"""One rule per consumer: the stream page's per-token timeline and ``summary.json``'s metrics agree.

For every bundled scenario with streaming consumers, the timeline the stream page plays
(:func:`agentsim.analysis.stream_timeline.token_timelines`) is checked against the per-call metrics the
summary is made of (:func:`agentsim.sim.stream_metrics.block_metrics`) for the same call in the same run, and
those against the summary itself: times from the ask, a reader's last ``read_s`` is its
``reader_done_from_ask_s``, a speaker's last ``spoken_s`` its ``speech_done_from_ask_s``, the first delivery
the ``first_word_s`` (and, less the send, the ``ttft_s``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import agentsim
from agentsim.analysis.stream_timeline import token_timelines
from agentsim.plan.compiler import compile_plan
from agentsim.plan.sampling import block_spans
from agentsim.sim.simulation import choose_engine, simulate_block
from agentsim.sim.stream_metrics import block_metrics

ROOT = Path(__file__).resolve().parents[1]
RUNS = 200


def _streaming_scenarios() -> list[Path]:
    paths = sorted((ROOT / "scenarios").glob("**/*.yaml")) + sorted((ROOT / "tests" / "scenarios").glob("*.yaml"))
    out = []
    for p in paths:
        if "profiles" in p.parts or "replay" in p.parts:  # profiles and replay configs, not scenarios
            continue
        plan = compile_plan(agentsim.load(p))
        if plan.has_streaming and plan.workload is None:
            out.append(p)
    return out


@pytest.mark.parametrize("path", _streaming_scenarios(), ids=lambda p: p.stem)
def test_the_page_timeline_and_the_summary_read_one_rule(path):
    sc = agentsim.load(path)
    plan = compile_plan(sc)
    runs = min(sc.runs, RUNS)
    _, results = simulate_block(plan, sc.seed, block_spans(runs)[0], choose_engine(plan))
    summary = agentsim.simulate(sc, runs=runs).summary_dict()
    names = [c.name for c in plan.calls if c.consumer is not None]
    checked = 0
    for name in dict.fromkeys(names):
        nodes = [c for c in plan.calls if c.name == name]
        if len(nodes) > 1:
            continue  # the summary pools calls of one name: compare calls named once
        node = nodes[0]
        frame = token_timelines(sc, name, runs=runs)
        for v, variant in enumerate(plan.variants):
            page = frame[frame["variant"] == variant]
            run = int(page["run"].iloc[0])
            values = block_metrics(plan, results[v])[node.id]
            at = int(np.argmax(values["_run"] == run))  # the run's first instance (the one the page shows)
            assert values["_run"][at] == run
            # the page counts from the ask, as the *_from_ask_s twins do (to the bit: the same operation order)
            assert page["delivered_s"].iloc[0] == values["first_word_s"][at]
            assert page["delivered_s"].iloc[0] - page["send_s"].iloc[0] == pytest.approx(values["ttft_s"][at])
            # the person's interruption (if any) stops reading and speech: done then, or at the last token consumed
            stop = page["interrupt_s"].iloc[0]
            for column, metric in (("read_s", "reader_done_from_ask_s"), ("spoken_s", "speech_done_from_ask_s")):
                if metric not in values or np.isnan(values[metric][at]):
                    continue
                last = np.nanmax(page[column].to_numpy())
                if values["interrupted_share"][at]:
                    assert last <= values[metric][at] + 1e-12
                    assert values[metric][at] <= stop + 1e-12
                else:
                    assert last == values[metric][at]
            stats = summary["variants"][variant]["streaming"]["calls"][name]
            for metric, st in stats.items():
                x = values[metric][np.isfinite(values[metric])]
                assert st["mean"] == (float(np.mean(x)) if x.size else None), (name, variant, metric)
            checked += 1
    assert checked

"""``context.compact`` (an agent's automatic compaction): by hand, on both engines, and its refusals."""

from __future__ import annotations

import pytest

import agentsim
from agentsim.model.loading import ScenarioError

SCENARIO = """
name: compact
runs: 3
models:
  m: {price: {input_mtok: 1, output_mtok: 5, cache_read_mtok: 0.1, cache_write_mtok: 1.25}, ttft: 1, output_tps: 100}
agent:
  context: {system: 1000, grows: true, cache: true, compact: {above: 3000, to: 500}}
  steps:
    - repeat:
        times: 4
        steps:
          - call: {name: c, model: m, input: 500, output: 100}
          - tool: {name: t, latency: 1, output: 400}
"""


@pytest.mark.parametrize("engine", ["fastpath", "des"])
def test_a_context_past_its_limit_is_compacted_and_written_again(tmp_path, engine):
    p = tmp_path / "s.yaml"
    p.write_text(SCENARIO)
    calls = agentsim.simulate(p, engine=engine).calls
    one = calls[calls["run"] == 0].sort_values("t_start")
    # context 1000. 1: input 1500, all written; +600 +400 -> 2000. 2: 2500, reads 1500; -> 3000 (not past 3000).
    # 3: 3500, reads 2500; +600 -> 3600 > 3000: compacted to 500, nothing cached; +400 -> 900.
    # 4: 1400, reads nothing, writes 1400.
    assert one["input_tokens"].tolist() == [1500, 2500, 3500, 1400]
    assert one["cache_read_tokens"].tolist() == [0, 1500, 2500, 0]
    assert one["cache_write_tokens"].tolist() == [1500, 1000, 1000, 1400]


@pytest.mark.parametrize(
    ("context", "message"),
    [
        ("{system: 10, grows: true, compact: {above: 100, to: 100}}", "must be below"),
        ("{system: 10, compact: {above: 100, to: 10}}", "grows: true"),
        ("{system: 10, grows: true, compact: {above: 0, to: 0}}", "above zero"),
    ],
)
def test_compaction_that_cannot_work_is_refused(tmp_path, context, message):
    p = tmp_path / "s.yaml"
    p.write_text(SCENARIO.replace("{system: 1000, grows: true, cache: true, compact: {above: 3000, to: 500}}", context))
    with pytest.raises(ScenarioError, match=message):
        agentsim.load(p)

"""``Node.children()``: the one walk of the plan tree that the engines, the optimizer and the timeline use.

Walking from the root through ``children()`` must reach every step node of the plan exactly once,
for every bundled scenario and for a plan with every node type (a node type whose ``children()``
forgot its body would leave its steps unreached).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentsim import load
from agentsim.plan.compiler import SeqNode, compile_plan
from agentsim.plan.validation import parse
from agentsim.steps.call import CallNode
from agentsim.steps.choose import ChooseNode
from agentsim.steps.fail import FailNode
from agentsim.steps.fanout import FanoutNode
from agentsim.steps.parallel import ParNode
from agentsim.steps.pipeline import PipelineNode
from agentsim.steps.repeat import RepeatNode
from agentsim.steps.subagent import SubagentNode
from agentsim.steps.tool import ToolNode
from agentsim.steps.wait import WaitNode

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted(p for p in (ROOT / "scenarios").glob("**/*.yaml") if not {"profiles", "replay"} & set(p.parts))
STEP_KINDS = (CallNode, ToolNode, WaitNode, SeqNode, ParNode, FanoutNode, RepeatNode, ChooseNode)
STEP_KINDS += (PipelineNode, FailNode, SubagentNode)

EVERY_KIND = {
    "name": "every-node-kind",
    "models": {"m": {"price": {"input_mtok": 1, "output_mtok": 2}, "ttft": 0.5, "output_tps": 50}},
    "workflows": {"helper": {"steps": [{"call": {"output": 40}}]}},
    "agent": {
        "steps": [
            {"call": {"name": "first", "output": 100, "consumer": {"reader": {"tokens_per_s": 5}}}},
            {"pipeline": {"after": {"tokens": 10}, "steps": [{"tool": {"name": "speak", "latency": 0.1}}]}},
            {"parallel": {"branches": [[{"call": {"output": 10}}], [{"wait": {"latency": 1}}]]}},
            {"fanout": {"n": 3, "steps": [{"call": {"output": 20}}]}},
            {"repeat": {"times": 2, "steps": [{"call": {"output": 30}}]}},
            {"choose": {"options": [{"p": 0.5, "steps": [{"call": {"output": 5}}]}, {"p": 0.5, "steps": []}]}},
            {"subagent": {"workflow": "helper"}},
            {"fail": {"p": 0.1}},
        ]
    },
}


def _walk(plan) -> list[int]:
    seen, stack = [], [plan.root]
    while stack:
        node = stack.pop()
        seen.append(node.id)
        stack.extend(node.children())
    return seen


def _check(plan) -> None:
    seen = _walk(plan)
    assert len(seen) == len(set(seen)), "a node is reached twice"
    steps = {n.id for n in plan.nodes if isinstance(n, STEP_KINDS)}
    assert steps <= set(seen), f"unreached: {sorted(steps - set(seen))}"


def test_a_plan_with_every_node_kind_is_walked_whole():
    plan = compile_plan(parse(EVERY_KIND))
    kinds = {type(n) for n in plan.nodes}
    assert set(STEP_KINDS) <= kinds, f"the fixture lacks {set(STEP_KINDS) - kinds}"
    _check(plan)


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_bundled_scenarios_are_walked_whole(path):
    _check(compile_plan(load(path)))

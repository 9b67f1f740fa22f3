"""The fitted scenario: recorded steps as the scenario vocabulary (DESIGN.md §3).

Sessions are grouped by their main thread's model (:mod:`agentsim.fit.population`): a group is a
kind of session (Claude Code on Opus, Codex on GPT-5...). Each group's agent is its first step, then
the others (their number: the recorded counts less one, empirical), each after the person's idle
time when the sessions have some (a session never ends on idle time)::

    - call: {name: step, model: M, input: {empirical: GROUP.input}, output: {empirical: GROUP.output},
             reasoning: {empirical: GROUP.reasoning}}
    - parallel:                        # what the call asked for, all at once
        - fanout: {n: {choice: tools per step}, steps: [tool: {name: tool, latency: {empirical: GROUP.tool_s}}]}
        - fanout: {n: {choice: subagents per step}, steps: [subagent: {workflow: sub.GROUP}]}
        - fanout: {n: {choice: side calls per step}, steps: [subagent: {workflow: side.GROUP}]}
    - wait: {name: overhead, latency: {empirical: GROUP.lag_s}}
    - repeat:
        times: {empirical: {file: NAME.samples.csv, column: GROUP.more_steps}}
        steps:
          - choose: [{p: share of later steps after idle time, steps: [wait: {name: human, ...}]}, {p: rest}]
          - ... the call, what it asked for and the overhead, as above

with ``context: {system: S, grows: true, cache: ...}``: each call re-sends the context, which grows
by the call's visible output and the next call's ``input`` (the recorded growth: tool results,
prompts, subagent answers), so input tokens, cache reads and cache writes come out of the same
prefix-cache rule as every scenario's (DESIGN.md §4). ``S`` is chosen so that the first call's mean
input is the recorded one (``S = mean(first input) - mean(growth)``, at least 0).

**Why empirical distributions.** Tool time is dominated by its tail (in the published TraceLab
measurements, calls over a minute are 5% of the calls and ~90% of the tool time), and a parametric
family misplaces it: a lognormal's mean is ``median * e^(sigma^2 / 2)``, and at the sigma such a tail
needs (~3) a 10% error in sigma moves the mean by ~60%. The recorded values reproduce the body, the
tail and the mean exactly; they cannot extrapolate beyond the largest recorded value (say so when a
population is small). The values go into one CSV file beside the scenario (``empirical: {file,
column}``), so the scenario stays readable. Counts per step (tools, subagents, side calls) are
``choice`` distributions with the recorded frequencies.

Several groups become a top-level ``choose`` with the groups' session shares, each running its own
workflow (and context). Subagents are one workflow per group, fitted from every subagent thread of
the group the same way (its model: the subagents' most common model; inside a subagent, containers
count as tools). Side calls (calls of another model on the main level) run in their own context,
uncached. Human time can be left out (``idle="exclude"``): the waits are dropped, and the
comparison is then with the recorded wall time minus human time.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from agentsim.fit.population import SessionShape, Step, Thread

__all__ = ["Built", "build_scenario", "model_key"]


def model_key(model: str) -> str:
    """A scenario key for a recorded model id."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", model).strip("-") or "model"


@dataclass
class Built:
    """A scenario document and the sample columns its empirical distributions read."""

    scenario: dict
    columns: dict[str, list[float]] = field(default_factory=dict)
    models: set[str] = field(default_factory=set)  # recorded model ids the scenario uses
    notes: list[str] = field(default_factory=list)


class _Builder:
    def __init__(self, samples_file: str, idle: str):
        self.file, self.idle = samples_file, idle
        self.built = Built({})
        self.workflows: dict[str, dict] = {}

    def empirical(self, column: str, values: list[float]) -> dict | float:
        """An empirical distribution over ``values`` (a constant when they are all equal)."""
        vals = [float(v) for v in values]
        if not vals:
            return 0.0
        if min(vals) == max(vals):
            return vals[0]
        self.built.columns[column] = vals
        return {"empirical": {"file": self.file, "column": column}}

    @staticmethod
    def counts(values: list[int]) -> dict | int:
        """A choice over the recorded counts, with their frequencies."""
        freq = Counter(values)
        if len(freq) == 1:
            return next(iter(freq))
        vals = sorted(freq)
        ps = [freq[v] / len(values) for v in vals]
        ps[-1] = 1.0 - math.fsum(ps[:-1])
        return {"choice": {"values": vals, "p": ps}}

    def model(self, model: str) -> str:
        self.built.models.add(model)
        return model_key(model)


def _context(threads: list[Thread], growth: list[float]) -> dict:
    calls = [s.call for t in threads for s in t.steps]
    first = [t.steps[0].call.input_tokens for t in threads if t.steps]
    system = max(0, round(float(np.mean(first)) - (float(np.mean(growth)) if growth else 0.0))) if first else 0
    reads = sum(c.cache_read_tokens for c in calls)
    w5 = sum(c.cache_write_5m_tokens for c in calls)
    w1 = sum(c.cache_write_1h_tokens for c in calls)
    cache: bool | dict = False
    if reads or w5 or w1:
        cache = {"ttl": "1h" if w1 > w5 else "5m"}
    out: dict = {"system": system, "grows": True, "cache": cache}
    compact = _compaction(threads, growth)
    if compact is not None:
        out["compact"] = compact
    return out


SEED = 1  # the fitted scenario's seed (change it in the written file; `agentsim run --seed` overrides it)
COMPACTED = 0.7  # a call whose input is below this share of the context before it: the context was compacted
MIN_COMPACTIONS = 3  # compactions recorded before a fitted context compacts


def _compaction(threads: list[Thread], growth: list[float]) -> dict | None:
    """``compact: {above, to}`` from the recorded compactions (a call sending under 70% of the context the call
    before it left); None with fewer than :data:`MIN_COMPACTIONS`. ``above``: the median context before one, or,
    when higher, the 90th percentile of the largest context of the sessions that never compacted (a group that
    mixes context windows: its larger contexts are not cut); ``to``: the median input after one less the mean
    growth (what the call itself added)."""
    pre, post, peaks = [], [], []
    for t in threads:
        compacted = False
        for a, b in zip(t.steps, t.steps[1:], strict=False):
            before = a.call.input_tokens + a.call.output_tokens - a.call.reasoning_tokens
            if b.call.input_tokens < COMPACTED * before:
                pre.append(before)
                post.append(b.call.input_tokens)
                compacted = True
        if not compacted and t.steps:
            peaks.append(max(s.call.input_tokens for s in t.steps))
    if len(pre) < MIN_COMPACTIONS:
        return None
    above = int(max(np.median(pre), np.percentile(peaks, 90) if peaks else 0.0))
    to = int(np.median(post) - (float(np.mean(growth)) if growth else 0.0))
    return {"above": above, "to": min(max(to, 0), above - 1)}


def _asks(b: _Builder, group: str, steps: list[Step], names: dict[str, str], sub: str | None) -> list:
    """What each call asked for, run in parallel: tools, subagents, side calls (those recorded)."""
    branches = []
    tools = [d for s in steps for d in s.tools]
    if tools:
        tool = {"tool": {"name": names["tool"], "latency": b.empirical(f"{group}.tool_s", tools)}}
        branches.append(
            {"fanout": {"name": names["tools"], "n": b.counts([len(s.tools) for s in steps]), "steps": [tool]}}
        )
    if sub is not None:
        branches.append(
            {
                "fanout": {
                    "name": names["subagents"],
                    "n": b.counts([len(s.subagents) for s in steps]),
                    "steps": [{"subagent": {"name": names["subagent"], "workflow": sub}}],
                }
            }
        )
    side = _side_workflow(b, group, steps)
    if side is not None:
        branches.append(
            {
                "fanout": {
                    "name": names["sides"],
                    "n": b.counts([len(s.sides) for s in steps]),
                    "steps": [{"subagent": {"name": names["side"], "workflow": side}}],
                }
            }
        )
    if len(branches) > 1:
        return [{"parallel": {"name": names["asks"], "branches": branches}}]
    return branches


def _steps_body(
    b: _Builder, group: str, threads: list[Thread], names: dict[str, str], sub: str | None, model: str
) -> tuple[list, list[float]]:
    """A group's steps: the first, then a repeat of the others (each after the human's idle time, when
    recorded: a session never ends on idle time); and the growth values it was fitted to."""
    steps: list[Step] = [s for t in threads for s in t.steps]
    growth = [max(s.growth, 0) for s in steps if s.growth is not None]
    call: dict = {
        "name": names["step"],
        "model": b.model(model),
        "input": b.empirical(f"{group}.input", growth) if growth else 0,
        "output": b.empirical(f"{group}.output", [s.call.output_tokens - s.call.reasoning_tokens for s in steps]),
    }
    reasoning = [s.call.reasoning_tokens for s in steps]
    if any(reasoning):
        call["reasoning"] = b.empirical(f"{group}.reasoning", reasoning)
    one = [{"call": call}, *_asks(b, group, steps, names, sub)]
    lags = [s.lag for s in steps]
    if any(lag > 0 for lag in lags):
        one.append({"wait": {"name": names["overhead"], "latency": b.empirical(f"{group}.lag_s", lags)}})
    idle = [s.idle for s in steps if s.idle > 0]
    if idle and b.idle == "include":  # a conversation: the person's turns, their pauses between
        return _conversation(b, group, threads, one, names, idle), growth
    later = sum(len(t.steps) - 1 for t in threads)  # steps after a first: those idle time may precede
    before: list = []
    if idle and b.idle == "include" and later:
        p = min(len(idle) / later, 1.0)
        wait = {"wait": {"name": names["human"], "latency": b.empirical(f"{group}.idle_s", idle)}}
        before = [wait if p >= 1 else {"choose": {"options": [{"p": p, "steps": [wait]}, {"p": 1 - p, "steps": []}]}}]
    more = b.empirical(f"{group}.more_steps", [len(t.steps) - 1 for t in threads])
    body = list(one)
    if more != 0:
        body.append({"repeat": {"name": names["steps"], "times": more, "steps": before + one}})
    return body, growth


def _conversation(b: _Builder, group: str, threads: list[Thread], one: list, names: dict, idle: list[float]) -> list:
    """Sessions with the person's pauses as a ``turns`` step (contract v1.3): turns per session, the pauses,
    and in a turn its first step, then the others (steps per turn less one), as recorded."""
    turns = [turn for t in threads for turn in t.turns()]
    more = b.empirical(f"{group}.more_steps", [len(turn) - 1 for turn in turns])
    body = list(one)
    if more != 0:
        body.append({"repeat": {"name": names["steps"], "times": more, "steps": list(one)}})
    spec = {
        "name": names["turns"],
        "n": b.empirical(f"{group}.turns", [len(t.turns()) for t in threads]),
        "think": b.empirical(f"{group}.idle_s", idle),
        "steps": body,
    }
    return [{"turns": spec}]


def _side_workflow(b: _Builder, group: str, steps: list[Step]) -> str | None:
    sides = [c for s in steps for c, _ in s.sides]
    if not sides:
        return None
    models = Counter(c.model for c in sides)
    name = f"side.{group}"
    options = []
    for m in sorted(models):
        of_m = [c for c in sides if c.model == m]
        col = f"{name}.{model_key(m)}"
        options.append(
            {
                "p": models[m] / len(sides),
                "steps": [
                    {
                        "call": {
                            "name": f"side:{model_key(m)}",
                            "model": b.model(m),
                            "input": b.empirical(f"{col}.input", [c.input_tokens for c in of_m]),
                            "output": b.empirical(
                                f"{col}.output", [c.output_tokens - c.reasoning_tokens for c in of_m]
                            ),
                            **(
                                {"reasoning": b.empirical(f"{col}.reasoning", [c.reasoning_tokens for c in of_m])}
                                if any(c.reasoning_tokens for c in of_m)
                                else {}
                            ),
                        }
                    }
                ],
            }
        )
    options[-1]["p"] = 1.0 - math.fsum(o["p"] for o in options[:-1])
    steps_ = options[0]["steps"] if len(options) == 1 else [{"choose": {"options": options}}]
    b.workflows[name] = {"context": {"system": 0, "grows": False, "cache": False}, "steps": steps_}
    return name


NAMES = (
    "step",
    "tools",
    "tool",
    "subagents",
    "subagent",
    "sides",
    "side",
    "asks",
    "human",
    "overhead",
    "steps",
    "turns",
)


def _names(prefix: str, suffix: str) -> dict[str, str]:
    return {k: f"{prefix}{k}{suffix}" for k in NAMES}


def _subagent_workflow(b: _Builder, group: str, shapes: list[SessionShape], suffix: str) -> str | None:
    subs = [t for s in shapes for st in s.main.steps for t in st.subagents if t.steps]
    if not subs:
        return None
    counts = Counter(t.model for t in subs)
    model = min(counts, key=lambda m: (-counts[m], m))
    name = f"sub.{group}"
    steps, growth = _steps_body(b, name, subs, _names("sub-", suffix), None, model)
    b.workflows[name] = {"context": _context(subs, growth), "steps": steps}
    return name


def build_scenario(
    shapes: list[SessionShape],
    name: str,
    samples_file: str,
    profile_files: dict[str, str],
    prices: dict[str, dict],
    *,
    idle: str = "include",
    runs: int = 2000,
    prices_as_of: str | None = None,
) -> Built:
    """The scenario of ``shapes`` (profile file and price spec per recorded model id), seeded with :data:`SEED`."""
    b = _Builder(samples_file, idle)
    groups: dict[str, list[SessionShape]] = {}
    for s in shapes:
        if s.main.steps:
            groups.setdefault(model_key(s.main.model), []).append(s)
    several = len(groups) > 1
    options = []
    agent_steps: list = []
    agent_context: dict = {}
    for group, members in sorted(groups.items()):
        suffix = f":{group}" if several else ""
        sub = _subagent_workflow(b, group, members, suffix)
        steps, growth = _steps_body(b, group, [s.main for s in members], _names("", suffix), sub, members[0].main.model)
        context = _context([s.main for s in members], growth)
        if several:
            b.workflows[f"agent.{group}"] = {"context": context, "steps": steps}
            options.append(
                {
                    "p": len(members) / len(shapes),
                    "name": group,
                    "steps": [{"subagent": {"name": f"agent:{group}", "workflow": f"agent.{group}"}}],
                }
            )
        else:
            agent_steps, agent_context = steps, context
    if several:
        options[-1]["p"] = 1.0 - math.fsum(o["p"] for o in options[:-1])
        agent_steps = [{"choose": {"name": "kind of session", "options": options}}]
        agent_context = {"system": 0}
    models = {model_key(m): {"profile": profile_files[m], "price": prices[m]} for m in sorted(b.built.models)}
    doc = {
        "name": name,
        "description": f"Fitted by agentsim fit from {len(shapes)} recorded sessions",
        "seed": SEED,
        "runs": runs,
        **({"prices_as_of": prices_as_of} if prices_as_of else {}),
        "models": models,
        "agent": {"context": agent_context, "steps": agent_steps},
        **({"workflows": dict(sorted(b.workflows.items()))} if b.workflows else {}),
    }
    b.built.scenario = doc
    return b.built

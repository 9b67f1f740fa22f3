"""Recorded sessions as threads of steps: what ``agentsim fit`` fits a scenario to.

A recorded session (any format of :mod:`agentsim.traces`) is a tree of timed nodes. Its **main
thread** is the first level of the tree that holds calls: levels holding only containers (an OTel
``invoke_agent`` span around a turn, a LangSmith chain) are unwrapped, turn after turn. On that
level the model of most calls is the thread's **model**; each of its calls starts a **step**, and
every other node belongs to the step of the latest call that started at or before it:

* a plain **tool** run (its duration);
* a **subagent**: a container (an agent span, Claude Code's ``Task`` tool, a Codex subagent branch),
  itself a thread of steps (inside a subagent, containers count as tools: one level of subagents);
* a **side call**: a call of another model on the same level (a small helper request; it is not part
  of the main context);
* **human** time (the gap until the person's next prompt).

A step's **tool phase** runs from its call's end to the end of the last of its tools, subagents and
side calls (they run in parallel); its **idle** time is its human time; its **lag** is the rest of
the gap to the next step's call (client overhead, retries: never negative; the time before the
first call is added to the first step's lag). So a thread's steps add up to its length:
``sum(call + tool phase + idle + lag)``, exactly when nothing overlaps.

The **growth** of a step is what the next call's input adds beyond this call's input and visible
output (``input[k+1] - input[k] - (output[k] - reasoning[k])``): tool results, prompts, subagent
answers. A negative growth (the context was compacted, or thinking was dropped) is kept as recorded
and counted by the fit (:attr:`Thread.shrinks`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from agentsim.replay.retime import turns_of
from agentsim.traces.sessions import Call, Node, Session

__all__ = ["SessionShape", "Step", "Thread", "session_shape"]


@dataclass
class Step:
    model: str
    call: Call
    duration: float
    tools: list[float] = field(default_factory=list)  # plain tool durations
    subagents: list[Thread] = field(default_factory=list)
    sides: list[tuple[Call, float]] = field(default_factory=list)  # calls of other models, with their durations
    tool_phase: float = 0.0
    idle: float = 0.0
    lag: float = 0.0
    growth: int | None = None  # None for the last step of a thread
    overlapped: bool = False  # the next call started before this one ended


@dataclass
class Thread:
    steps: list[Step]
    length: float  # seconds from the thread's start to its end

    @property
    def model(self) -> str | None:
        return self.steps[0].model if self.steps else None

    def turns(self) -> list[list[Step]]:
        """The steps by the person's turns: a turn ends with a step after which the person paused (idle time)."""
        out: list[list[Step]] = [[]]
        for step in self.steps:
            out[-1].append(step)
            if step.idle > 0:
                out.append([])
        return [t for t in out if t]

    @property
    def shrinks(self) -> int:
        return sum(1 for s in self.steps if s.growth is not None and s.growth < 0)


@dataclass
class SessionShape:
    id: str
    source: str
    start: float
    wall_time_s: float
    human_s: float
    main: Thread
    turn_s: list[float] = field(default_factory=list)  # the person's turns, from each message to the answer


def _main_level(level: list[Node], kids: dict[str | None, list[Node]]) -> list[Node]:
    """The first level holding a call, unwrapping levels of containers (turn after turn)."""
    while not any(n.kind == "call" for n in level):
        containers = [n for n in level if n.id in kids]
        if not containers:
            return level
        level = [n for n in level if n.id not in kids] + [c for n in containers for c in kids[n.id]]
        level.sort(key=lambda n: (n.start, n.end, n.order))
    return level


def _main_model(level: list[Node]) -> str | None:
    counts = Counter(n.call.model for n in level if n.kind == "call" and n.call is not None)
    if not counts:
        return None
    return min(counts, key=lambda m: (-counts[m], m))  # most calls; ties by name


def _thread(level: list[Node], kids: dict[str | None, list[Node]], depth: int) -> Thread:
    model = _main_model(level)
    if model is None:
        return Thread([], 0.0)
    begin = min(n.start for n in level)
    finish = max(n.end for n in level)
    mains = [n for n in level if n.kind == "call" and n.call is not None and n.call.model == model]
    steps = [Step(model, n.call, n.duration) for n in mains]
    ends = [n.end for n in mains]
    last_end: list[float] = list(ends)  # end of each step's last tool, subagent or side call
    k = 0
    for n in level:
        if n.kind == "call" and n.call is not None and n.call.model == model:
            continue
        while k + 1 < len(mains) and mains[k + 1].start <= n.start:
            k += 1
        step = steps[k]
        if n.kind == "human":
            step.idle += n.duration
            continue
        if n.kind == "call" and n.call is not None:
            step.sides.append((n.call, n.duration))
        elif n.id in kids and depth == 0:
            step.subagents.append(_thread(_main_level(kids[n.id], kids), kids, depth + 1))
        elif n.kind in ("tool", "agent"):
            step.tools.append(n.duration)
        else:
            continue
        last_end[k] = max(last_end[k], n.end)
    for i, (node, step) in enumerate(zip(mains, steps, strict=True)):
        step.tool_phase = max(last_end[i] - node.end, 0.0)
        nxt = mains[i + 1].start if i + 1 < len(mains) else finish
        step.overlapped = nxt < node.end
        step.lag = max(nxt - node.end - step.tool_phase - step.idle, 0.0)
        if i + 1 < len(mains):
            nc = mains[i + 1].call
            step.growth = (
                nc.input_tokens - node.call.input_tokens - (node.call.output_tokens - node.call.reasoning_tokens)
            )
    steps[0].lag += max(mains[0].start - begin, 0.0)
    return Thread(steps, finish - begin)


def session_shape(session: Session) -> SessionShape:
    """The session as a main thread of steps (see the module docstring)."""
    kids: dict[str | None, list[Node]] = defaultdict(list)
    for n in session.nodes:
        kids[n.parent].append(n)
    for group in kids.values():
        group.sort(key=lambda n: (n.start, n.end, n.order))
    top = kids.pop(None, [])
    main = _thread(_main_level(top, kids), kids, 0)
    human = sum(n.duration for n in session.nodes if n.kind == "human")
    turns = [b - a for a, b in turns_of(top, {n.id: n.start for n in top}, {n.id: n.end for n in top})]
    return SessionShape(session.id, session.source, session.start, session.wall_time_s, human, main, turns)

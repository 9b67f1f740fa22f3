"""kv-cache-tester traces as recorded sessions: a conversation of the person's turns and agent loops.

The files (:mod:`agentsim.traces.kv_trace_records` reads them) hold, per session, the requests of the
main agent and of its subagents, with their times in seconds from the session's start. What the
corpus shows (docs/replay.md, "The kv-cache-tester corpus", has the figures):

* **One thread is one chain.** A request is sent ``think_time`` after the previous one *ended*:
  ``t[i] = t[i-1] + api_time[i-1] + think_time[i]`` holds within a second (``t`` and ``think_time``
  are rounded to whole seconds, ``api_time`` to 10 ms). So each request waits for the one before it;
  a request runs from its ``t`` for its ``api_time`` (the server's time).
* **The gap before a request** is the person's when the request brings a person's message (``"text"``
  among its ``input_types``) and the agent had stopped (the previous request did not stop for
  ``tool_use``, or the new input holds no ``tool_result``): the person read, thought and typed. Any
  other gap is a tool run (tool execution, permission prompts) and belongs to the agent's loop.
* **A turn** runs from the person's message (the request after a person's gap, or the session's first)
  to the end of the last request before the next person's gap: that is what the person waits for.
* **A subagent marker's ``t`` is when it ended**: it started ``duration_ms`` earlier (about half a
  second after the request that asked for it ended), its own requests' ``t`` count from that start,
  and the parent sends nothing until it has ended. It becomes an ``agent`` node inside a ``Task`` tool
  run of its own (subagents started together run side by side; the parent's next request waits for all).
  A marker with ``status: async_launched`` has no duration: a background agent, started at its ``t``
  beside the main thread.
* **Streaming requests of older captures carry no ``api_time``** (``type: s``; their ``stop`` is
  empty and they are a turn's last, the answer the person reads), and the next request's
  ``think_time`` then counts from the request before them. Their duration is estimated from the
  recorded TTFT and output speed of the same model in the files read (:class:`Speeds`), the
  person's gap after them shortened by as much; every file with such requests says how many.
* **Cache reads** are not recorded; they come from the prompts' block hashes (``hash_ids``, one per
  ``block_size`` tokens): :class:`~agentsim.traces.kv_trace_records.PromptCache` with the provider's
  5-minute lifetime (or another, ``ttl``), so a long pause of the person makes the next turn write its
  prompt again. All input not read is a cache write, of that lifetime.

Sessions carry no date (times count from each session's start): they are priced at the replay's
``--prices-as-of`` date, else today's.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from agentsim.traces.kv_trace_records import (
    CACHE_TTL_S,
    FORMAT,
    Request,
    Subagent,
    TraceFile,
    looks_like,
    read_trace,
)
from agentsim.traces.sessions import Call, FileReport, Node, Session

__all__ = ["CACHE_TTL_S", "FORMAT", "Speeds", "looks_like", "read_kv_traces"]

ONE_HOUR = 3600.0
SPAWN_LEAD_S = 60.0  # a subagent that starts later than this after its parent's last request: the spawn is missing
MIN_SAMPLES = 5  # recorded requests needed to estimate a model's TTFT and speed


@dataclass
class Speeds:
    """TTFT and output speed per model, from the requests that record ``ttft`` beside ``api_time``: what
    estimates the duration of a request recorded without one (``ttft + out / tps``, medians)."""

    ttft: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    tps: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    api: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))

    def add(self, r: Request) -> None:
        if r.api_time is None:
            return
        self.api[r.model].append(r.api_time)
        if r.ttft is not None:
            self.ttft[r.model].append(r.ttft)
            decode = r.api_time - r.ttft
            if r.output_tokens >= 100 and decode > 0.1:  # too few tokens: the speed is noise
                self.tps[r.model].append(r.output_tokens / decode)

    def estimate(self, r: Request) -> float | None:
        """Seconds the request would have taken: its model's median TTFT + output at its median speed (all
        models pooled when the model has too few), else the median recorded duration; None: nothing to go by."""
        for key in (r.model, None):
            ttft, tps = self._pooled(self.ttft, key), self._pooled(self.tps, key)
            if len(ttft) >= MIN_SAMPLES and len(tps) >= MIN_SAMPLES:
                return statistics.median(ttft) + r.output_tokens / statistics.median(tps)
        for key in (r.model, None):
            api = self._pooled(self.api, key)
            if api:
                return statistics.median(api)
        return None

    @staticmethod
    def _pooled(table: dict, key: str | None) -> list[float]:
        return table.get(key, []) if key is not None else [x for v in table.values() for x in v]


def _walk(items: list):
    for item in items:
        if isinstance(item, Subagent):
            yield from _walk(item.items)
        else:
            yield item


def read_kv_traces(files: list[Path], ttl: float = CACHE_TTL_S) -> tuple[list[Session], list[FileReport]]:
    """Read kv-cache-tester trace files into sessions (one per file), with a report per file."""
    traces: list[tuple[TraceFile, FileReport]] = []
    reports: list[FileReport] = []
    seen: dict[str, str] = {}
    speeds = Speeds()
    for f in files:
        rep = FileReport(str(f), FORMAT)
        reports.append(rep)
        tf = read_trace(f, rep, ttl)
        if tf is None:
            continue
        sid = tf.id or f.stem
        if sid in seen:
            rep.duplicates = sum(1 for _ in _walk(tf.items))
            rep.notes.append(f"session id {sid} was already read from {seen[sid]}: this copy is left out")
            continue
        seen[sid] = str(f)
        for r in _walk(tf.items):
            speeds.add(r)
        traces.append((tf, rep))
    sessions = []
    for tf, rep in traces:
        session = _Builder(tf, rep, speeds, ttl).session()
        if session is not None:
            sessions.append(session)
    return sessions, reports


class _Builder:
    """One file's records as the nodes of a session (see the module docstring)."""

    def __init__(self, tf: TraceFile, rep: FileReport, speeds: Speeds, ttl: float):
        self.tf, self.rep, self.speeds, self.ttl = tf, rep, speeds, ttl
        self.s = Session(id=tf.id or tf.path.stem, source=FORMAT, file=str(tf.path), dated=False)
        self.counts: dict[str, int] = defaultdict(int)
        self.estimated = self.unestimated = self.spawns_missing = 0

    def new(self, kind: str, start: float, end: float, **kw) -> Node:
        self.counts[kind] += 1
        node = Node(f"{kind[0]}{self.counts[kind]}", kind, start, end, **kw)
        self.s.nodes.append(node)
        return node

    def session(self) -> Session | None:
        self.thread(self.tf.items, 0.0, "main", None)
        calls = self.counts["call"]
        self.rep.calls, self.rep.sessions = calls, int(calls > 0)
        if self.estimated:
            self.rep.notes.append(
                f"{self.estimated} streaming requests carry no api_time: their durations are estimated from the "
                "recorded TTFT and output speed of the same model (docs/replay.md)"
            )
        if self.unestimated:
            self.rep.notes.append(f"{self.unestimated} requests carry no api_time and nothing to estimate it from: 0 s")
        if self.spawns_missing:
            self.rep.notes.append(
                f"{self.spawns_missing} subagents start over {SPAWN_LEAD_S:g} s after their parent's last request (the "
                "request that asked for them is missing): the time before them is counted as the person's"
            )
        if not calls:
            return None
        self.s.estimated_calls = self.estimated + self.unestimated
        _order(self.s.nodes)
        return self.s

    def thread(self, items: list, base: float, agent: str, parent: str | None) -> None:
        """The chain of one agent's requests, with the gaps between them (and the subagents inside gaps)."""
        prev: tuple[Node, ...] = ()  # the nodes the next one waits for
        prev_req: Request | None = None
        waiting: list[Subagent] = []
        for item in items:
            if isinstance(item, Subagent):
                if item.duration is None:
                    self.background(item, base, agent, parent, prev)
                else:
                    waiting.append(item)
                continue
            start = base + item.t
            person = agent == "main" and prev_req is not None and _person(item, prev_req)
            prev = self.gap(prev, start, waiting, person, agent, parent)
            waiting = []
            prev = (self.call(item, start, agent, parent, prev),)
            prev_req = item
        self.gap(prev, None, waiting, False, agent, parent)

    def call(self, r: Request, start: float, agent: str, parent: str | None, prev: tuple) -> Node:
        duration = r.api_time
        if duration is None:
            duration = self.speeds.estimate(r)
            if duration is None:
                self.unestimated += 1
                duration = 0.0
            else:
                self.estimated += 1
        read = min(r.cached_blocks * self.tf.block_size, r.input_tokens)
        write = r.input_tokens - read
        hour = self.ttl >= ONE_HOUR
        c = Call(
            call_id=f"{self.s.id}:{r.where}",
            model=r.model,
            provider="anthropic" if r.model.startswith("claude") else None,
            input_tokens=r.input_tokens,
            cache_read_tokens=read,
            cache_write_5m_tokens=0 if hour else write,
            cache_write_1h_tokens=write if hour else 0,
            output_tokens=r.output_tokens,
            ttft_s=r.ttft,
        )
        return self.new("call", start, start + duration, agent=agent, parent=parent, call=c, preds=_after(prev))

    def gap(self, prev: tuple, until: float | None, subs: list[Subagent], person: bool, agent, parent) -> tuple:
        """The nodes between the previous request's end and the next one's start (``until``; None at the end), and
        so the nodes the next request waits for."""
        a = max((n.end for n in prev), default=None)
        if not subs:
            if a is None or until is None or until <= a:
                return prev
            kind = "human" if person else "tool"
            return (self.new(kind, a, until, agent=agent, parent=parent, name=kind, preds=_after(prev)),)
        first = min(s.t - s.duration for s in subs)
        if a is None:
            a = first
        elif first - a > SPAWN_LEAD_S and agent == "main":
            self.spawns_missing += len(subs)
            prev = (self.new("human", a, first, agent=agent, parent=parent, name="human", preds=_after(prev)),)
            a = first
        tasks = self.tasks(subs, a, until, person, agent, parent, prev)
        end = max(t.end for t in tasks)
        if person and until is not None and until > end:
            return (self.new("human", end, until, agent=agent, parent=parent, name="human", preds=_after(tasks)),)
        return tasks

    def tasks(self, subs: list[Subagent], a: float, until, person: bool, agent, parent, prev: tuple) -> tuple:
        """One ``Task`` tool run per subagent from the gap's start, each holding its subagent (started together:
        side by side); the last to end lasts until the next request when the agent's loop goes on."""
        last = max(range(len(subs)), key=lambda i: (subs[i].t, -i))
        out = []
        for i, sub in enumerate(subs):
            end = sub.t if (i != last or until is None or person) else max(sub.t, until)
            task = self.new("tool", a, end, agent=agent, parent=parent, name="Task", preds=_after(prev))
            start = sub.t - sub.duration
            host = self.new("agent", start, sub.t, agent=sub.agent_id, parent=task.id, name=sub.kind)
            self.thread(sub.items, start, sub.agent_id, host.id)
            out.append(task)
        return tuple(out)

    def background(self, sub: Subagent, base: float, agent: str, parent: str | None, prev: tuple) -> None:
        """A subagent launched to run beside its parent: from its ``t`` to its last request's end."""
        start = base + sub.t
        host = self.new("agent", start, start, agent=sub.agent_id, parent=parent, name=sub.kind, preds=_after(prev))
        before = len(self.s.nodes)
        self.thread(sub.items, start, sub.agent_id, host.id)
        inner = [n for n in self.s.nodes[before:] if n.parent == host.id]
        host.end = max((n.end for n in inner), default=start)


def _person(r: Request, prev: Request) -> bool:
    """Whether the gap before ``r`` is the person's: a message, sent when the agent had stopped."""
    return r.person and (not r.tool_result or prev.stop != "tool_use")


def _after(prev: tuple) -> tuple[str, ...]:
    return tuple(n.id for n in prev)


def _order(nodes: list[Node]) -> None:
    """Each node's place among its container's nodes: by start, never before the node it follows (a chain's
    node may start a rounding earlier than its predecessor ended), ties in the order they were made."""
    key: dict[str, float] = {}
    for n in nodes:  # a node is made after the node it follows
        key[n.id] = max([n.start, *(key[p] for p in n.preds if p in key)])
    groups: dict[str | None, list[tuple[float, int, Node]]] = defaultdict(list)
    for i, n in enumerate(nodes):
        groups[n.parent].append((key[n.id], i, n))
    for group in groups.values():
        for place, (_, _, n) in enumerate(sorted(group, key=lambda g: g[:2])):
            n.order = place

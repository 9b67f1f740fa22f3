"""Reading one kv-cache-tester trace file into checked records, request by request.

The capture format of `kv-cache-tester <https://github.com/callanjfox/kv-cache-tester>`_ (its ``traces/``
folder: anonymised real Claude Code sessions; the same shape as the SemiAnalysis "Weka" agentic-coding
traces) is one JSON document per session::

    {"id": "trace_0001", "models": [...], "block_size": 64, "hash_id_scope": "local",
     "tool_tokens": 12974, "system_tokens": 4243,
     "requests": [{"t": 0.0, "type": "n", "model": "claude-opus-4-5-20251101", "in": 71175, "out": 169,
                   "hash_ids": [...], "input_types": ["text"], "output_types": ["text", "tool_use"],
                   "stop": "tool_use", "api_time": 7.34, "think_time": 0.0, "ttft": 1.9}, ...,
                  {"t": 134.227, "type": "subagent", "agent_id": "agent_001", "duration_ms": 126015,
                   "status": "completed", "requests": [...]}]}

A document can be large (a long session's ``hash_ids`` run to tens of megabytes), so it is parsed as a
stream (:mod:`ijson`): one request at a time, its prompt's block hashes turned at once into the number of
tokens the prompt cache could serve (:class:`PromptCache`), never kept whole. What is kept per request is
a :class:`Request` of numbers and short names; nothing of a prompt exists in these files.

Every number goes through the domain checks (``t``, ``api_time``, ``think_time`` and ``ttft`` are
durations; ``in`` and ``out`` token counts). A request that fails one is skipped and counted, with the
place (``requests[12].api_time``) and the reason, never the value of a text field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from agentsim.model import domain
from agentsim.traces.sessions import FileReport, token_count

__all__ = ["CACHE_TTL_S", "FORMAT", "PromptCache", "Request", "Subagent", "TraceFile", "looks_like", "read_trace"]

FORMAT = "kv-cache-tester"
CACHE_TTL_S = 300.0  # Anthropic's default prompt-cache lifetime (5 minutes), what Claude Code writes by default
MAX_DEPTH = 8  # subagents inside subagents: deeper is not a Claude Code session
MAX_BLOCK = 1 << 20  # tokens per hash block: kv-cache-tester writes 64


def looks_like(obj: dict) -> bool:
    """A kv-cache-tester trace: a document with ``requests`` whose records carry ``hash_ids`` or ``input_types``."""
    if not isinstance(obj, dict) or not isinstance(obj.get("requests"), list):
        return False
    if "block_size" in obj or "hash_id_scope" in obj:
        return True
    first = next((r for r in obj["requests"][:5] if isinstance(r, dict)), None)
    return first is not None and ("hash_ids" in first or "input_types" in first)


@dataclass
class Request:
    """One API request, as recorded (times in seconds from its thread's start)."""

    where: str  # requests[3] or requests[7].requests[2]
    t: float
    streaming: bool
    model: str
    input_tokens: int
    output_tokens: int
    cached_blocks: int  # prompt blocks the cache held (tokens: times the file's block_size, at most input)
    api_time: float | None
    think_time: float | None
    ttft: float | None
    person: bool  # its new input holds a person's text (a message) -- see Thread.turn_starts
    tool_result: bool
    stop: str


@dataclass
class Subagent:
    """A subagent marker: ``t`` is when it *ended* (``t - duration`` its start); ``async_launched`` ones run in
    the background from ``t``, with no recorded duration."""

    where: str
    t: float
    duration: float | None
    agent_id: str
    kind: str  # subagent_type: Explore, general-purpose, Plan...
    status: str
    items: list = field(default_factory=list)  # Request | Subagent, in file order


@dataclass
class TraceFile:
    path: Path
    id: str | None = None
    block_size: int = 64
    block_size_seen: bool = False
    items: list = field(default_factory=list)  # Request | Subagent of the main thread, in file order


class PromptCache:
    """Which part of each prompt a provider's prompt cache could serve, from the prompts' block hashes.

    Claude Code marks the end of each request's prompt for caching, so every request leaves an entry for its
    whole prompt. A later request of the same thread and model reads the longest prefix (in whole blocks) it
    shares with an entry still alive -- used within ``ttl`` seconds before the request's send -- and writes
    the rest. An entry is last used when its request ends (at its send, for a request without a recorded
    duration). The cache is per thread, as ``hash_id_scope: local`` says: hash ids of different agents are
    not comparable.
    """

    KEEP = 16  # newest entries compared (a session's prompts extend each other; older ones are dominated)

    def __init__(self, ttl: float):
        self.ttl = ttl
        self.entries: dict[str, list[tuple[list, float]]] = {}

    def read(self, model: str, hashes: list, sent: float, used: float) -> int:
        """Blocks of this prompt (sent at ``sent``) the cache holds; records the prompt's own entry."""
        live = [(h, u) for h, u in self.entries.get(model, ()) if sent - u <= self.ttl]
        best = max((_common_prefix(hashes, h) for h, _ in live), default=0)
        live.append((hashes, used))
        self.entries[model] = live[-self.KEEP :]
        return best


def _common_prefix(a: list, b: list) -> int:
    """Length of the longest common prefix of two lists (slice comparisons run in C)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


class _Bad(ValueError):
    """A record that is skipped: the message names the place and the reason (never a text value)."""


def _duration(rec: dict, key: str, where: str, required: bool = False) -> float | None:
    v = rec.get(key)
    if v is None:
        if required:
            raise _Bad(f"{where}.{key} is missing")
        return None
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise _Bad(f"{where}.{key} is not a number")
    msg = domain.problem("duration", v)
    if msg is not None:
        raise _Bad(f"{where}.{key}: {msg}")
    return float(v)


def _tokens(rec: dict, key: str, where: str) -> int:
    try:
        return token_count(rec.get(key))
    except ValueError as exc:
        raise _Bad(f"{where}.{key}: {exc}") from None


def _names(rec: dict, key: str, where: str) -> tuple[str, ...]:
    v = rec.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise _Bad(f"{where}.{key} is not a list of names")
    return tuple(v)


def _text(rec: dict, key: str, where: str, default: str = "") -> str:
    v = rec.get(key, default)
    if v is None:
        return default
    if not isinstance(v, str) or len(v) > 200:
        raise _Bad(f"{where}.{key} is not a short name")
    return v


def _hashes(rec: dict, where: str) -> list:
    v = rec.get("hash_ids", [])
    if not isinstance(v, list):
        raise _Bad(f"{where}.hash_ids is not a list")
    return v


class _Thread:
    """One agent's requests and subagents, read record by record (a prompt's hashes are let go at once)."""

    def __init__(self, rep: FileReport, ttl: float, where: str, depth: int):
        self.rep, self.ttl, self.where, self.depth = rep, ttl, where, depth
        self.cache = PromptCache(ttl)
        self.items: list = []
        self.count = 0

    def add(self, rec) -> None:
        here = f"{self.where}[{self.count}]"
        self.count += 1
        try:
            if not isinstance(rec, dict):
                raise _Bad(f"{here} is not an object")
            self.items.append(self.subagent(rec, here) if rec.get("type") == "subagent" else self.request(rec, here))
        except _Bad as exc:
            self.rep.bad_line(None, str(exc))

    def request(self, rec: dict, here: str) -> Request:
        t = _duration(rec, "t", here, required=True)
        api = _duration(rec, "api_time", here)
        ttft = _duration(rec, "ttft", here)
        if ttft is not None and api is not None and ttft > api:
            raise _Bad(f"{here}.ttft is longer than its api_time")
        inp, out = _tokens(rec, "in", here), _tokens(rec, "out", here)
        model = _text(rec, "model", here) or "unknown"
        kinds = _names(rec, "input_types", here)
        think = _duration(rec, "think_time", here)
        stream, stop = _text(rec, "type", here, "n"), _text(rec, "stop", here)
        blocks = self.cache.read(model, _hashes(rec, here), t, t if api is None else t + api)
        return Request(
            here,
            t,
            stream == "s",
            model,
            inp,
            out,
            blocks,
            api,
            think,
            ttft,
            "text" in kinds,
            "tool_result" in kinds,
            stop,
        )

    def subagent(self, rec: dict, here: str) -> Subagent:
        if self.depth >= MAX_DEPTH:
            raise _Bad(f"{here}: subagents nested more than {MAX_DEPTH} deep")
        t = _duration(rec, "t", here, required=True)
        ms = rec.get("duration_ms")
        dur = None
        if ms is not None:
            if isinstance(ms, bool) or not isinstance(ms, int | float):
                raise _Bad(f"{here}.duration_ms is not a number")
            dur = _duration({"duration_ms": ms / 1000.0 if math.isfinite(ms) else ms}, "duration_ms", here)
            if dur > t:
                raise _Bad(f"{here}: the subagent would have started before its session (duration_ms above t)")
        inner = rec.get("requests", [])
        if not isinstance(inner, list):
            raise _Bad(f"{here}.requests is not a list")
        agent = _text(rec, "agent_id", here) or here
        sub = Subagent(here, t, dur, agent, _text(rec, "subagent_type", here) or "subagent", _text(rec, "status", here))
        thread = _Thread(self.rep, self.ttl, f"{here}.requests", self.depth + 1)
        for item in inner:
            thread.add(item)
        sub.items = thread.items
        return sub


def read_trace(path: Path, rep: FileReport, ttl: float = CACHE_TTL_S) -> TraceFile | None:
    """One file's records (None when nothing could be read from it: the report says why)."""
    import ijson

    out = TraceFile(path)
    main = _Thread(rep, ttl, "requests", 0)
    try:
        _read_header(path, out, rep)
        with path.open("rb") as fh:
            for rec in ijson.items(fh, "requests.item", use_float=True):  # built in C, one at a time
                main.add(rec)
    except ijson.JSONError as exc:
        rep.notes.append(f"not a complete JSON document{_position(exc)}; {main.count} records before that were read")
    except RecursionError:
        rep.notes.append("nested too deeply to read")
    rep.lines = main.count
    if not main.items:
        return None
    out.items = main.items
    return out


def _read_header(path: Path, out: TraceFile, rep: FileReport) -> None:
    """``id`` and ``block_size``: the top-level scalars, read up to ``requests`` (where writers put them), and
    through the whole document only when ``block_size`` is not before it."""
    import ijson

    with path.open("rb") as fh:
        for key, event, value in ijson.parse(fh, use_float=True):
            if key == "" and event == "map_key" and value == "requests" and out.block_size_seen:
                return
            elif key in ("id", "block_size"):
                _header(out, key, event, value, rep)


def _position(exc: Exception) -> str:
    """Where the parser stopped, without the text it quotes (a file's contents are never repeated)."""
    import re

    m = re.search(r"\b(?:position|offset|byte) (\d+)", str(exc))
    return f" (it stops near byte {m.group(1)})" if m else ""


def _header(out: TraceFile, key: str, event: str, value, rep: FileReport) -> None:
    if key == "id":
        if event == "string" and 0 < len(value) <= 200:
            out.id = value
    elif event != "number" or not (1 <= value <= MAX_BLOCK) or value != int(value):
        rep.notes.append(f"block_size is not a whole number from 1 to {MAX_BLOCK}: read as 64")
        out.block_size_seen = True
    else:
        out.block_size, out.block_size_seen = int(value), True

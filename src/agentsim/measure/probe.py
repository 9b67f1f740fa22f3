"""Measuring an endpoint: stream real requests and record when every token arrived.

``agentsim measure`` sends ``requests`` streaming requests (at most
``concurrency`` at a time) to an OpenAI-compatible Chat Completions endpoint or
an Anthropic Messages endpoint, and writes one JSON line per finished request:

* ``ttft_s``: seconds from sending the request to the first output event (text,
  reasoning or tool-call delta);
* ``events_s``: the arrival of every output event, in seconds from sending, and
  ``gaps_s``, the gaps between consecutive ones (``chunks`` of them in all);
* ``event_tokens``: the tokens in each output event, only when the server says (a running
  ``usage.completion_tokens`` on every chunk, as vLLM's ``continuous_usage_stats``, or one
  ``logprobs.content`` entry per token);
* ``latency_s``: seconds from sending to the end of the stream;
* ``headers_s``: seconds from sending to the response headers (the server accepted the
  request; ``ttft_s - headers_s`` is the server's own time to the first token, without
  the request's upload);
* ``connect_s``: when the request opened a new connection, the seconds that took (TCP and
  TLS handshakes); they come *before* the clock starts, as in an application whose HTTP
  client keeps connections alive;
* ``input_tokens`` (cached ones included), ``cached_input_tokens`` and
  ``output_tokens`` from the usage block (OpenAI: ``stream_options.include_usage``;
  Anthropic: ``message_start`` and ``message_delta``); when a server sends no
  usage, ``output_tokens`` is the number of output events (``tokens_source: chunks``);
* ``status``, ``ok`` and ``error``: a refused connection, an HTTP error (401,
  429, 500...), a timeout, an error event, or a stream that ends before the
  response is complete are recorded as failed requests, not raised.

**Timing.** "Sending" is the moment the encoded request is handed to an open connection, and an
event arrives when the event loop delivers its bytes (:mod:`agentsim.measure.http_stream`): the
client adds under 1 ms to a time to first token against a plain-socket client (docs/measure.md says
how that was measured), where a general HTTP client (httpx) added 1.8-7 ms.

The first line of the file records the settings (``kind: run``). Lines are
written and flushed one at a time as requests finish, so the file is valid
JSON Lines even when the run is interrupted. ``agentsim calibrate`` reads it
(format ``measure``).

These are real requests: they cost money and count against rate limits. The API
key is read from the environment variable the caller names, sent only in the
request header, and never written: error messages from the server are scrubbed
of it (and of anything that looks like a key) before they are recorded.

Input sizes: prompts are built from common English words (about one token
each) behind a unique request prefix, so prompt caches do not hit. A range of
input sizes (``input_tokens=(low, high)``) spreads the requests evenly over it,
which lets calibration separate prefill time from the base TTFT.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["APIS", "MeasureConfig", "build_prompt", "input_sizes", "measure", "stream_request", "write_measurements"]

APIS = ("openai", "anthropic")
ANTHROPIC_VERSION = "2023-06-01"
FORMAT_VERSION = 1
ERROR_BODY_CHARS = 300

_WORD_TEXT = (
    "time year people way day man thing woman life child world school state family student group country "
    "problem hand part place case week company system program question work government number night point "
    "home water room mother area money story fact month lot right study book eye job word business issue "
    "side kind head house service friend father power hour game line end member law car city community name"
)
_WORDS = tuple(_WORD_TEXT.split())


@dataclass(frozen=True)
class MeasureConfig:
    base_url: str
    model: str
    api: str = "openai"
    requests: int = 20
    concurrency: int = 1
    input_tokens: tuple[int, int] = (1000, 1000)  # (low, high); equal for a fixed size
    output_tokens: int = 256
    timeout_s: float = 120.0
    seed: int = 0
    max_tokens_field: str = "max_tokens"  # OpenAI-compatible servers: max_tokens or max_completion_tokens

    def __post_init__(self):
        if self.api not in APIS:
            raise ValueError(f"api must be one of {', '.join(APIS)}, got {self.api!r}")
        lo, hi = self.input_tokens
        if not (1 <= lo <= hi):
            raise ValueError(f"input_tokens must be 1 <= low <= high, got {self.input_tokens}")
        if self.requests < 1 or self.concurrency < 1 or self.output_tokens < 1:
            raise ValueError("requests, concurrency and output_tokens must be at least 1")

    @property
    def url(self) -> str:
        base = self.base_url.rstrip("/")
        if self.api == "openai":
            return base + "/chat/completions"
        return base + ("/messages" if base.endswith("/v1") else "/v1/messages")


def input_sizes(config: MeasureConfig) -> list[int]:
    """Input size of each request: evenly spread over the range, in a shuffled (seeded) order."""
    lo, hi = config.input_tokens
    sizes = np.rint(np.linspace(lo, hi, config.requests)).astype(int)
    rng = np.random.default_rng(config.seed)
    return [int(s) for s in rng.permutation(sizes)]


def build_prompt(i: int, n_tokens: int, output_tokens: int, seed: int = 0) -> str:
    """A prompt of about ``n_tokens`` tokens that asks for a long answer, unique per request."""
    rng = np.random.default_rng([seed, i])
    head = (
        f"Request {i}-{rng.integers(1 << 62):x}. Write a long, detailed story of at least "
        f"{output_tokens} words that uses the following words; do not stop early.\n"
    )
    n_words = max(1, n_tokens - 30)
    words = rng.choice(_WORDS, size=n_words)
    return head + " ".join(words)


def _headers(config: MeasureConfig, api_key: str | None) -> dict[str, str]:
    h = {"content-type": "application/json"}
    if config.api == "openai":
        if api_key:
            h["authorization"] = f"Bearer {api_key}"
    else:
        h["anthropic-version"] = ANTHROPIC_VERSION
        if api_key:
            h["x-api-key"] = api_key
    return h


def _body(config: MeasureConfig, prompt: str) -> dict[str, Any]:
    messages = [{"role": "user", "content": prompt}]
    if config.api == "openai":
        return {
            "model": config.model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
            config.max_tokens_field: config.output_tokens,
        }
    return {"model": config.model, "messages": messages, "stream": True, "max_tokens": config.output_tokens}


_KEYLIKE = re.compile(r"\b(sk|pk|key|api|token)[-_][-_A-Za-z0-9*.]{6,}", re.IGNORECASE)


def _error_message(body: str) -> str:
    """The message of a JSON error body (OpenAI and Anthropic: ``error.message``), else the text."""
    try:
        err = json.loads(body).get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:ERROR_BODY_CHARS]
    except (ValueError, AttributeError):
        pass
    return " ".join(body.split())[:ERROR_BODY_CHARS]


def _scrub(text: str, api_key: str | None) -> str:
    if api_key:
        text = text.replace(api_key, "[redacted]")
    return _KEYLIKE.sub("[redacted]", text)


# --------------------------------------------------------------------------- one request


@dataclass
class _Stream:
    """What the parser has seen of one streamed response."""

    token_times: list[float]
    input_tokens: float | None = None
    cached_input_tokens: float | None = None
    output_tokens: float | None = None
    complete: bool = False
    error: str | None = None
    model: str | None = None
    end: float | None = None  # arrival of the last event read
    event_tokens: list[int | None] = field(default_factory=list)  # tokens per output event, when the server says
    counted: int = 0  # the running completion-token count of the usage blocks seen so far


def _openai_event(s: _Stream, data: str, now: float) -> None:
    if data.strip() == "[DONE]":
        s.complete = True
        return
    obj = json.loads(data)
    if not isinstance(obj, dict):
        return
    if obj.get("error"):
        e = obj["error"]
        s.error = f"error event: {e.get('message') if isinstance(e, dict) else e}"
        return
    s.model = obj.get("model") or s.model
    usage = obj.get("usage")
    running = usage.get("completion_tokens") if isinstance(usage, dict) else None
    for choice in obj.get("choices") or []:
        delta = choice.get("delta") or {}
        if any(delta.get(k) for k in ("content", "reasoning_content", "reasoning", "tool_calls", "refusal")):
            s.token_times.append(now)
            s.event_tokens.append(_event_tokens(choice, running, s.counted))
    if isinstance(running, int | float):
        s.counted = int(running)
    if isinstance(usage, dict):
        s.input_tokens = usage.get("prompt_tokens", s.input_tokens)
        s.output_tokens = usage.get("completion_tokens", s.output_tokens)
        details = usage.get("prompt_tokens_details") or {}
        if isinstance(details, dict) and details.get("cached_tokens") is not None:
            s.cached_input_tokens = details["cached_tokens"]


def _event_tokens(choice: dict, running, counted: int) -> int | None:
    """Tokens in one output event, when the server says: a running usage count on every chunk (vLLM's
    ``continuous_usage_stats``) or one log-probability entry per token; else None."""
    if isinstance(running, int | float):
        return int(running) - counted
    lp = choice.get("logprobs")
    content = lp.get("content") if isinstance(lp, dict) else None
    return len(content) if isinstance(content, list) else None


def _anthropic_event(s: _Stream, event: str, data: str, now: float) -> None:
    obj = json.loads(data) if data.strip() else {}
    kind = obj.get("type", event) if isinstance(obj, dict) else event
    if kind == "message_start":
        msg = obj.get("message") or {}
        s.model = msg.get("model") or s.model
        u = msg.get("usage") or {}
        read = u.get("cache_read_input_tokens") or 0
        write = u.get("cache_creation_input_tokens") or 0
        if u.get("input_tokens") is not None:
            s.input_tokens = u["input_tokens"] + read + write  # Anthropic's input_tokens exclude cache tokens
            s.cached_input_tokens = read
        if u.get("output_tokens"):
            s.output_tokens = u["output_tokens"]
    elif kind == "content_block_delta":
        s.token_times.append(now)
        s.event_tokens.append(None)
    elif kind == "message_delta":
        u = obj.get("usage") or {}
        if u.get("output_tokens") is not None:
            s.output_tokens = u["output_tokens"]
    elif kind == "message_stop":
        s.complete = True
    elif kind == "error":
        e = obj.get("error") or {}
        s.error = f"error event: {e.get('type', '')}: {e.get('message', '')}".strip(": ")


async def stream_request(pool, config: MeasureConfig, i: int, n_input: int, api_key: str | None) -> dict:
    """Send request ``i`` (a prompt of about ``n_input`` tokens) on a :class:`~agentsim.measure.http_stream.Pool`
    and return its record (the JSON line ``measure`` writes): one streamed request, timed."""
    from agentsim.measure.http_stream import HTTPStreamError, post

    rec: dict[str, Any] = {
        "agentsim_measure": FORMAT_VERSION,
        "kind": "request",
        "i": i,
        "api": config.api,
        "model": config.model,
        "input_tokens_requested": n_input,
    }
    s = _Stream(token_times=[])
    body = json.dumps(_body(config, build_prompt(i, n_input, config.output_tokens, config.seed))).encode()
    headers = _headers(config, api_key)
    status = resp = None
    rec["start_s"] = round(time.time(), 6)
    try:
        async with post(pool, config.url, headers, body, config.timeout_s) as resp:
            status = resp.status
            await _read_response(resp, s, config, rec)
    except HTTPStreamError as exc:
        s.error = _transport_error(exc, config)
    except json.JSONDecodeError as exc:
        s.error = f"an event is not valid JSON: {exc}"
    rec.update(_timings(resp, s))
    rec.update(
        status=status,
        ok=s.error is None,
        error=_scrub(s.error, api_key) if s.error else None,
        input_tokens=s.input_tokens,
        cached_input_tokens=s.cached_input_tokens,
        output_tokens=s.output_tokens if s.output_tokens is not None else (len(s.token_times) or None),
        tokens_source="usage" if s.output_tokens is not None else "chunks",
    )
    if s.model:
        rec["model"] = s.model
    return rec


async def _read_response(resp, s: _Stream, config: MeasureConfig, rec: dict) -> None:
    """Read one response into ``s``: an error body, or the stream's events with their arrival times."""
    from agentsim.measure.http_stream import sse_events

    if resp.status != 200:
        text = (await resp.read_all()).decode("utf-8", "replace")
        s.error = f"HTTP {resp.status}: {_error_message(text)}"
        if resp.headers.get("retry-after"):
            rec["retry_after"] = resp.headers["retry-after"]
        return
    async for now, event, data in sse_events(resp.body()):
        if config.api == "openai":
            _openai_event(s, data, now)
        else:
            _anthropic_event(s, event, data, now)
        if s.error:
            return
        s.end = now
    if not s.complete:
        s.error = "the stream ended before the response was complete"


def _transport_error(exc, config: MeasureConfig) -> str:
    if exc.kind == "connect":
        return f"connection failed: {exc}"
    if exc.kind == "timeout":
        return f"timed out after {config.timeout_s:g} s"
    if exc.kind == "cut":
        return f"the stream was cut: {exc}"
    return f"invalid response: {exc}"


def _timings(resp, s: _Stream) -> dict[str, Any]:
    """The record's times, in seconds from the moment the request was handed to the connection."""
    if resp is None:  # no connection: nothing was sent
        return {"headers_s": None, "ttft_s": None, "latency_s": None, "gaps_s": [], "chunks": 0}
    t0, times = resp.sent, s.token_times
    end = s.end if s.end is not None else time.perf_counter()
    out: dict[str, Any] = {
        "headers_s": round(resp.headers_at - t0, 6) if resp.status else None,
        "ttft_s": round(times[0] - t0, 6) if times else None,
        "latency_s": round(end - t0, 6),
        "gaps_s": [round(b - a, 6) for a, b in itertools.pairwise(times)],
        "chunks": len(times),
        "events_s": [round(t - t0, 6) for t in times],
    }
    counts = s.event_tokens
    if times and len(counts) == len(times) and all(c is not None and c >= 0 for c in counts) and sum(counts) > 0:
        out["event_tokens"] = counts
    if resp.connect_s is not None:
        out["connect_s"] = round(resp.connect_s, 6)
    return out


async def measure(config: MeasureConfig, api_key: str | None, on_record: Callable[[dict], None]) -> None:
    """Send the requests; call ``on_record`` with each finished request's record, in finishing order."""
    from agentsim.measure.http_stream import Pool

    sizes = input_sizes(config)
    gate = asyncio.Semaphore(config.concurrency)
    async with Pool(config.concurrency, connect_timeout_s=min(10.0, config.timeout_s)) as pool:

        async def task(i: int) -> None:
            async with gate:
                rec = await stream_request(pool, config, i, sizes[i], api_key)
            on_record(rec)

        await asyncio.gather(*(task(i) for i in range(config.requests)))


def run_header(config: MeasureConfig) -> dict[str, Any]:
    settings = asdict(config)
    settings["input_tokens"] = list(config.input_tokens)
    return {
        "agentsim_measure": FORMAT_VERSION,
        "kind": "run",
        "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        **settings,
    }


def write_measurements(
    path: str | Path,
    config: MeasureConfig,
    api_key: str | None,
    on_record: Callable[[dict], None] | None = None,
) -> dict[str, int]:
    """Measure and write the JSONL file line by line (flushed); returns counts of ok and failed requests.

    On Ctrl-C (KeyboardInterrupt) the requests still running are abandoned and the
    exception propagates; every line already written is complete.
    """
    counts = {"ok": 0, "failed": 0}
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with Path(path).open("w", encoding="utf-8") as fh:
        fh.write(json.dumps(run_header(config)) + "\n")
        fh.flush()

        def sink(rec: dict) -> None:
            fh.write(json.dumps(rec) + "\n")
            fh.flush()
            counts["ok" if rec["ok"] else "failed"] += 1
            if on_record is not None:
                on_record(rec)

        asyncio.run(measure(config, api_key, sink))
    return counts

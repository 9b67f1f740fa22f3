"""Measuring an endpoint: stream real requests and record when every token arrived.

``agentsim measure`` sends ``requests`` streaming requests (at most
``concurrency`` at a time) to an OpenAI-compatible Chat Completions endpoint or
an Anthropic Messages endpoint, and writes one JSON line per finished request:

* ``ttft_s``: seconds from sending the request to the first output event (text,
  reasoning or tool-call delta);
* ``gaps_s``: every gap between consecutive output events after the first;
* ``latency_s``: seconds from sending to the end of the stream;
* ``headers_s``: seconds from sending to the response headers (the server accepted the
  request; ``ttft_s - headers_s`` is the server's own time to the first token, without
  connection set-up and request upload);
* ``input_tokens`` (cached ones included), ``cached_input_tokens`` and
  ``output_tokens`` from the usage block (OpenAI: ``stream_options.include_usage``;
  Anthropic: ``message_start`` and ``message_delta``); when a server sends no
  usage, ``output_tokens`` is the number of output events (``tokens_source: chunks``);
* ``status``, ``ok`` and ``error``: a refused connection, an HTTP error (401,
  429, 500...), a timeout, an error event, or a stream that ends before the
  response is complete are recorded as failed requests, not raised.

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
from dataclasses import asdict, dataclass
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
    for choice in obj.get("choices") or []:
        delta = choice.get("delta") or {}
        if any(delta.get(k) for k in ("content", "reasoning_content", "reasoning", "tool_calls", "refusal")):
            s.token_times.append(now)
    usage = obj.get("usage")
    if isinstance(usage, dict):
        s.input_tokens = usage.get("prompt_tokens", s.input_tokens)
        s.output_tokens = usage.get("completion_tokens", s.output_tokens)
        details = usage.get("prompt_tokens_details") or {}
        if isinstance(details, dict) and details.get("cached_tokens") is not None:
            s.cached_input_tokens = details["cached_tokens"]


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
    elif kind == "message_delta":
        u = obj.get("usage") or {}
        if u.get("output_tokens") is not None:
            s.output_tokens = u["output_tokens"]
    elif kind == "message_stop":
        s.complete = True
    elif kind == "error":
        e = obj.get("error") or {}
        s.error = f"error event: {e.get('type', '')}: {e.get('message', '')}".strip(": ")


async def stream_request(client, config: MeasureConfig, i: int, n_input: int, api_key: str | None) -> dict:
    """Send request ``i`` (a prompt of about ``n_input`` tokens) on an ``httpx.AsyncClient`` and
    return its record (the JSON line ``measure`` writes): one streamed request, timed."""
    import httpx
    from httpx_sse import SSEError, aconnect_sse

    rec: dict[str, Any] = {
        "agentsim_measure": FORMAT_VERSION,
        "kind": "request",
        "i": i,
        "api": config.api,
        "model": config.model,
        "input_tokens_requested": n_input,
    }
    s = _Stream(token_times=[])
    body = _body(config, build_prompt(i, n_input, config.output_tokens, config.seed))
    status = t_headers = None
    rec["start_s"] = round(time.time(), 6)
    t0 = time.perf_counter()
    try:
        async with aconnect_sse(client, "POST", config.url, json=body, headers=_headers(config, api_key)) as src:
            t_headers = time.perf_counter()
            status = src.response.status_code
            if status != 200:
                text = (await src.response.aread()).decode("utf-8", "replace")
                s.error = f"HTTP {status}: {_error_message(text)}"
                if src.response.headers.get("retry-after"):
                    rec["retry_after"] = src.response.headers["retry-after"]
            else:
                async for sse in src.aiter_sse():
                    now = time.perf_counter()
                    if config.api == "openai":
                        _openai_event(s, sse.data, now)
                    else:
                        _anthropic_event(s, sse.event, sse.data, now)
                    if s.error:
                        break
                if not s.error and not s.complete:
                    s.error = "the stream ended before the response was complete"
    except httpx.ConnectError as exc:
        s.error = f"connection failed: {exc or type(exc).__name__}"
    except httpx.TimeoutException:
        s.error = f"timed out after {config.timeout_s:g} s"
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        s.error = f"the stream was cut: {exc or type(exc).__name__}"
    except (httpx.HTTPError, SSEError) as exc:
        s.error = f"{type(exc).__name__}: {exc}"
    except json.JSONDecodeError as exc:
        s.error = f"an event is not valid JSON: {exc}"
    end = time.perf_counter()
    times = s.token_times
    rec.update(
        status=status,
        ok=s.error is None,
        error=_scrub(s.error, api_key) if s.error else None,
        headers_s=round(t_headers - t0, 6) if t_headers is not None else None,
        ttft_s=round(times[0] - t0, 6) if times else None,
        latency_s=round(end - t0, 6),
        gaps_s=[round(b - a, 6) for a, b in itertools.pairwise(times)],
        chunks=len(times),
        input_tokens=s.input_tokens,
        cached_input_tokens=s.cached_input_tokens,
        output_tokens=s.output_tokens if s.output_tokens is not None else (len(times) or None),
        tokens_source="usage" if s.output_tokens is not None else "chunks",
    )
    if s.model:
        rec["model"] = s.model
    return rec


async def measure(config: MeasureConfig, api_key: str | None, on_record: Callable[[dict], None]) -> None:
    """Send the requests; call ``on_record`` with each finished request's record, in finishing order."""
    import httpx

    sizes = input_sizes(config)
    gate = asyncio.Semaphore(config.concurrency)
    limits = httpx.Limits(max_connections=config.concurrency, max_keepalive_connections=config.concurrency)
    timeout = httpx.Timeout(config.timeout_s, connect=min(10.0, config.timeout_s))
    async with httpx.AsyncClient(timeout=timeout, limits=limits) as client:

        async def task(i: int) -> None:
            async with gate:
                rec = await stream_request(client, config, i, sizes[i], api_key)
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

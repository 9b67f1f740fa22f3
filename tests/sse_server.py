"""A small streaming LLM server on 127.0.0.1 for the ``measure`` tests (standard library only).

It speaks both OpenAI Chat Completions streaming (``/<mode>/v1/chat/completions``) and
Anthropic Messages streaming (``/<mode>/v1/messages``) over HTTP/1.1 chunked encoding, with
a configured time to first token and per-token delay. Tokens are sent at *absolute* times
``t_request + ttft + k * delay`` (sleeping until each target), so sleep overshoot does not
accumulate over a response. ``mode`` chooses the behaviour:

* ``ok``: a complete response (a role chunk first, which carries no token);
* ``unauthorized`` / ``ratelimited`` / ``broken``: HTTP 401 / 429 / 500 (the 401 body echoes
  the key it was sent, as some providers do, to check that ``measure`` scrubs it);
* ``cut``: the connection is closed after 3 tokens, without ending the chunked body;
* ``errorevent``: an error event after 3 tokens (``{"error": ...}`` / ``event: error``);
* ``stall``: the first token only comes after 5 s (for client timeouts).

With ``hold_after`` set, every request after the first ``hold_after`` is held before its answer until the
server stops (a client that is interrupted while waiting: deterministic, whatever the machine's speed).

With ``prefill_tps`` set, the TTFT grows by ``prompt words / prefill_tps``. Usage reports
``input = words + 64`` tokens of which 64 cached, and ``output = tokens``.

**A provider with hidden speeds** (:class:`Hidden`, for the end-to-end fidelity checks,
tests/test_fidelity_loopback.py and benchmarks/fidelity.py): every request draws its own TTFT
(lognormal, median ``ttft_s``, log-sd ``ttft_sigma``; plus the prefill term) and its own speed
(lognormal, median ``tps_median``, log-sd ``tps_sigma``), sends as many tokens as the request's
``max_tokens``, spaced by gaps ``w_j / tps`` with weights ``w`` of mean 1 and CV ``jitter_cv``
scaled so the ``N`` gaps (the last one before the closing chunk) add up to ``N / tps``: a request
lasts ``ttft + N / tps``, the model agentsim calibrates. Tokens go out in SSE events of ``chunk``
tokens (whole numbers uniform on ``low..high``; the last event takes what is left), each event when
its last token is due, the first at the TTFT. Before each event after the first, with probability
``stall_per_chunk``, the stream pauses for a time drawn from ``stall`` (``("uniform", low, high)``,
``("exponential", mean, 0)``, ``("lognormal", median, log_sd)``, ``("gamma", shape, scale)`` or
``("constant", seconds, 0)``): that event and every later one, and the end, move by the pause (a stall
process: any number per request). ``running_usage`` adds a running ``usage.completion_tokens`` to every
chunk, as vLLM's ``continuous_usage_stats`` does, so a client can count the tokens of each event. With
``cap`` set, at most that many streams are served at once; the others wait (FIFO by arrival) before
their response headers, as behind a gateway, and their TTFT clock starts when they are admitted. The
draws come from one seeded generator, in the order requests are admitted; :meth:`_Draws.request`
returns every time and pause of a response, so a test can compare with what was sent.

``SSEServer`` runs it in a separate Python process (``python sse_server.py ...``), so that its
timing does not compete for the test process's interpreter lock; the requests it received
are logged as JSON lines and read back through ``SSEServer.received``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CACHED = 64


@dataclass(frozen=True)
class Hidden:
    """The hidden truth of a provider (see the module doc); agentsim is told none of it."""

    ttft_s: float = 0.25  # median TTFT, without prefill
    ttft_sigma: float = 0.35
    prefill_tps: float = 20000.0  # prompt words per second
    tps_median: float = 100.0
    tps_sigma: float = 0.2
    jitter_cv: float = 0.3
    cap: int | None = None  # streams served at once
    seed: int = 0
    chunk: tuple[int, int] = (1, 1)  # tokens per SSE event: whole numbers uniform on low..high
    stall_per_chunk: float = 0.0  # before each event after the first: the probability of a pause
    stall: tuple[str, float, float] = ("uniform", 0.3, 1.0)  # a pause's family and parameters (STALL_FAMILIES)
    running_usage: bool = False  # a running completion-token count in every chunk (vLLM continuous_usage_stats)

    def args(self) -> list[str]:
        return ["--hidden", json.dumps({k: getattr(self, k) for k in self.__dataclass_fields__})]


# A pause's family: (name, a, b) -> seconds, from a random.Random
STALL_FAMILIES = {
    "constant": lambda rng, a, b: a,
    "uniform": lambda rng, a, b: rng.uniform(a, b),  # low, high
    "exponential": lambda rng, a, b: rng.expovariate(1 / a),  # mean
    "lognormal": lambda rng, a, b: rng.lognormvariate(math.log(a), b),  # median, log-sd
    "gamma": lambda rng, a, b: rng.gammavariate(a, b),  # shape, scale
}


@dataclass(frozen=True)
class Response:
    """When a hidden response's events go out: seconds after the request, and tokens in each."""

    ttft: float
    at: list[float]  # send offset of each event after the TTFT (the first: 0)
    tokens: list[int]
    end: float  # offset of the closing chunk
    pauses: list[float]  # the stall pauses drawn (seconds)


class _Draws:
    """Per-request TTFT, speed, gap weights, groups and pauses from one seeded generator (thread-safe)."""

    def __init__(self, h: Hidden):
        self.h, self.rng, self.lock = h, random.Random(h.seed), threading.Lock()
        self.sigma_w = math.sqrt(math.log1p(h.jitter_cv**2))

    def request(self, words: int, n: int) -> Response:
        """Token ``k`` (0-based) comes ``cum(w)_k / sum(w) x n / tps`` after the TTFT, the closing chunk after
        all ``n`` gaps; an event goes out with its group's last token (the first at the TTFT); a pause
        before an event delays it and everything after it."""
        h, s, rng = self.h, self.sigma_w, self.rng
        with self.lock:
            ttft = h.ttft_s * math.exp(h.ttft_sigma * rng.gauss(0, 1)) + words / h.prefill_tps
            tps = h.tps_median * math.exp(h.tps_sigma * rng.gauss(0, 1))
            w = [math.exp(s * rng.gauss(0, 1) - 0.5 * s * s) if s > 0 else 1.0 for _ in range(n)]
            sizes, left = [], n  # (no draw when the size is fixed or nothing stalls: older seeds keep their streams)
            while left > 0:
                sizes.append(min(left, rng.randint(*h.chunk) if h.chunk[0] != h.chunk[1] else h.chunk[0]))
                left -= sizes[-1]
            family, a, b = h.stall
            stalls = h.stall_per_chunk > 0
            pauses = [
                STALL_FAMILIES[family](rng, a, b) if k and stalls and rng.random() < h.stall_per_chunk else 0.0
                for k in range(len(sizes))
            ]
        total, acc, arrive = sum(w), 0.0, []
        for x in w:
            arrive.append(acc / total * n / tps)  # token k after k gaps
            acc += x
        at, last, shift = [], -1, 0.0
        for k, (m, pause) in enumerate(zip(sizes, pauses, strict=True)):
            last += m
            shift += pause
            at.append(shift + (arrive[last] if k else 0.0))
        return Response(ttft, at, sizes, shift + n / tps, [p for p in pauses if p > 0])


class _Gate:
    """At most ``cap`` streams at once, admitted in order of arrival."""

    def __init__(self, cap: int | None):
        self.cap, self.busy, self.cond, self.queue = cap, 0, threading.Condition(), []

    def __enter__(self):
        if self.cap is None:
            return self
        with self.cond:
            me = object()
            self.queue.append(me)
            self.cond.wait_for(lambda: self.busy < self.cap and self.queue[0] is me)
            self.queue.pop(0)
            self.busy += 1
            self.cond.notify_all()
        return self

    def __exit__(self, *exc):
        if self.cap is not None:
            with self.cond:
                self.busy -= 1
                self.cond.notify_all()


class _Server:
    def __init__(
        self,
        ttft_s: float,
        delay_s: float,
        tokens: int,
        prefill_tps: float | None,
        log: Path,
        hidden=None,
        hold_after: int | None = None,
    ):
        self.ttft_s, self.delay_s, self.tokens, self.prefill_tps = ttft_s, delay_s, tokens, prefill_tps
        self.hold_after, self.count, self.count_lock = hold_after, 0, threading.Lock()
        self.draws = _Draws(hidden) if hidden is not None else None
        self.hidden = hidden
        self.gate = _Gate(hidden.cap if hidden is not None else None)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                if server.draws is not None:
                    with server.gate:
                        try:
                            self._hidden(body)
                        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a run cancelled)
                            self.close_connection = True
                    return
                with server.count_lock:
                    server.count += 1
                    held = server.hold_after is not None and server.count > server.hold_after
                if held:
                    threading.Event().wait()  # never answered: the server process ends with the test
                t_request = time.monotonic()
                seen = {
                    "path": self.path,
                    "authorization": self.headers.get("authorization"),
                    "x-api-key": self.headers.get("x-api-key"),
                    "body": body,
                }
                with log.open("a") as fh:
                    fh.write(json.dumps(seen) + "\n")
                parts = self.path.strip("/").split("/")
                mode, api = parts[0], ("anthropic" if self.path.endswith("/messages") else "openai")
                key = self.headers.get("x-api-key") or (self.headers.get("authorization") or "").removeprefix("Bearer ")
                if mode in ("unauthorized", "ratelimited", "broken"):
                    status = {"unauthorized": 401, "ratelimited": 429, "broken": 500}[mode]
                    msg = {
                        401: f"Incorrect API key provided: {key}",
                        429: "Rate limit reached",
                        500: "The server had an error",
                    }[status]
                    data = json.dumps({"error": {"message": msg, "type": "error"}}).encode()
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    if status == 429:
                        self.send_header("retry-after", "1")
                    self.end_headers()
                    self.wfile.write(data)
                    return
                prompt = body["messages"][0]["content"]
                words = len(prompt.split())
                ttft = server.ttft_s + (words / server.prefill_tps if server.prefill_tps else 0.0)
                if mode == "stall":
                    ttft = 5.0
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                model = body.get("model", "m")
                self._event(None, self._start(api, model, words))
                for k in range(server.tokens):
                    wait = t_request + ttft + k * server.delay_s - time.monotonic()
                    if wait > 0:
                        time.sleep(wait)
                    self._event(*self._token(api, model, k))
                    if mode == "cut" and k == 2:
                        self.close_connection = True  # no terminating chunk: the body is cut
                        return
                    if mode == "errorevent" and k == 2:
                        if api == "openai":
                            self._event(None, json.dumps({"error": {"message": "Overloaded", "type": "server_error"}}))
                        else:
                            self._event(
                                "error",
                                json.dumps(
                                    {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
                                ),
                            )
                        self.wfile.write(b"0\r\n\r\n")
                        self.wfile.flush()
                        return
                for event in self._end(api, model, words):
                    self._event(*event)
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def _hidden(self, body):
                """A response of the provider with hidden speeds (OpenAI API)."""
                t_request = time.monotonic()
                words = len(body["messages"][0]["content"].split())
                n = max(1, int(body.get("max_tokens") or server.tokens))
                r = server.draws.request(words, n)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                model = body.get("model", "m")
                self._event(None, self._start("openai", model, words))
                sent = 0
                for at, m in zip(r.at, r.tokens, strict=True):
                    wait = t_request + r.ttft + at - time.monotonic()
                    if wait > 0:
                        time.sleep(wait)
                    sent += m
                    usage = (words + CACHED, sent) if server.hidden.running_usage else None
                    self._event(*self._token("openai", model, sent - m, m, usage))
                wait = t_request + r.ttft + r.end - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                for event in self._end("openai", model, words, n):
                    self._event(*event)
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            # --- SSE events of the two APIs
            def _event(self, name, data):
                text = (f"event: {name}\n" if name else "") + f"data: {data}\n\n"
                raw = text.encode()
                self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
                self.wfile.flush()

            @staticmethod
            def _start(api, model, words):
                if api == "openai":
                    return json.dumps(
                        {
                            "id": "c1",
                            "object": "chat.completion.chunk",
                            "model": model,
                            "choices": [{"index": 0, "delta": {"role": "assistant"}}],
                        }
                    )
                return json.dumps(
                    {
                        "type": "message_start",
                        "message": {
                            "id": "m1",
                            "type": "message",
                            "role": "assistant",
                            "model": model,
                            "content": [],
                            "usage": {
                                "input_tokens": words,
                                "cache_read_input_tokens": CACHED,
                                "cache_creation_input_tokens": 0,
                                "output_tokens": 1,
                            },
                        },
                    }
                )

            @staticmethod
            def _token(api, model, k, m=1, usage=None):
                """An event with tokens ``k .. k+m-1`` (with a running usage count ``(prompt, completion)``)."""
                text = "".join(f"tok{j} " for j in range(k, k + m))
                if api == "openai":
                    chunk = {
                        "id": "c1",
                        "object": "chat.completion.chunk",
                        "model": model,
                        "choices": [{"index": 0, "delta": {"content": text}}],
                    }
                    if usage is not None:
                        chunk["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1]}
                    return None, json.dumps(chunk)
                return "content_block_delta", json.dumps(
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
                )

            @staticmethod
            def _end(api, model, words, n=None):
                n = server.tokens if n is None else n
                if api == "openai":
                    yield (
                        None,
                        json.dumps(
                            {
                                "id": "c1",
                                "model": model,
                                "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}],
                            }
                        ),
                    )
                    yield (
                        None,
                        json.dumps(
                            {
                                "id": "c1",
                                "model": model,
                                "choices": [],
                                "usage": {
                                    "prompt_tokens": words + CACHED,
                                    "completion_tokens": n,
                                    "total_tokens": words + CACHED + n,
                                    "prompt_tokens_details": {"cached_tokens": CACHED},
                                },
                            }
                        ),
                    )
                    yield None, "[DONE]"
                else:
                    yield "content_block_stop", json.dumps({"type": "content_block_stop", "index": 0})
                    yield (
                        "message_delta",
                        json.dumps(
                            {
                                "type": "message_delta",
                                "delta": {"stop_reason": "max_tokens"},
                                "usage": {"output_tokens": n},
                            }
                        ),
                    )
                    yield "message_stop", json.dumps({"type": "message_stop"})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True


class SSEServer:
    """The server in its own process, for a ``with`` block."""

    def __init__(
        self,
        ttft_s: float = 0.15,
        delay_s: float = 0.02,
        tokens: int = 20,
        prefill_tps: float | None = None,
        hidden: Hidden | None = None,
        hold_after: int | None = None,
    ):
        self._args = ["--ttft", str(ttft_s), "--delay", str(delay_s), "--tokens", str(tokens)]
        if hold_after is not None:
            self._args += ["--hold-after", str(hold_after)]
        if prefill_tps:
            self._args += ["--prefill-tps", str(prefill_tps)]
        if hidden is not None:
            self._args += hidden.args()
        self._log = Path(tempfile.mkdtemp(prefix="sse-server-")) / "received.jsonl"
        self._proc: subprocess.Popen | None = None
        self.url = ""

    def __enter__(self) -> SSEServer:
        self._proc = subprocess.Popen(
            [sys.executable, __file__, *self._args, "--log", str(self._log)], stdout=subprocess.PIPE, text=True
        )
        assert self._proc.stdout is not None
        self.url = self._proc.stdout.readline().strip()
        if not self.url.startswith("http://127.0.0.1:"):
            self._proc.kill()
            raise RuntimeError("the test SSE server did not start")
        return self

    def __exit__(self, *exc) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=10)

    @property
    def received(self) -> list[dict]:
        if not self._log.exists():
            return []
        return [json.loads(x) for x in self._log.read_text().splitlines() if x.strip()]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ttft", type=float, required=True)
    ap.add_argument("--delay", type=float, required=True)
    ap.add_argument("--tokens", type=int, required=True)
    ap.add_argument("--prefill-tps", type=float, default=None)
    ap.add_argument("--log", type=Path, required=True)
    ap.add_argument("--hidden", type=str, default=None, help="a Hidden provider, as JSON")
    ap.add_argument("--hold-after", type=int, default=None, help="hold every later request unanswered")
    a = ap.parse_args()
    hidden = None
    if a.hidden:
        fields = json.loads(a.hidden)
        hidden = Hidden(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})
    server = _Server(a.ttft, a.delay, a.tokens, a.prefill_tps, a.log, hidden, a.hold_after)
    print(f"http://127.0.0.1:{server.httpd.server_address[1]}", flush=True)
    server.httpd.serve_forever()


if __name__ == "__main__":
    main()

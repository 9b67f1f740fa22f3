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

With ``prefill_tps`` set, the TTFT grows by ``prompt words / prefill_tps``. Usage reports
``input = words + 64`` tokens of which 64 cached, and ``output = tokens``.

``SSEServer`` runs it in a separate Python process (``python sse_server.py ...``), so that its
timing does not compete for the test process's interpreter lock; the requests it received
are logged as JSON lines and read back through ``SSEServer.received``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CACHED = 64


class _Server:
    def __init__(self, ttft_s: float, delay_s: float, tokens: int, prefill_tps: float | None, log: Path):
        self.ttft_s, self.delay_s, self.tokens, self.prefill_tps = ttft_s, delay_s, tokens, prefill_tps
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                t_request = time.monotonic()
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
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
            def _token(api, model, k):
                if api == "openai":
                    return None, json.dumps(
                        {
                            "id": "c1",
                            "object": "chat.completion.chunk",
                            "model": model,
                            "choices": [{"index": 0, "delta": {"content": f"tok{k} "}}],
                        }
                    )
                return "content_block_delta", json.dumps(
                    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": f"tok{k} "}}
                )

            @staticmethod
            def _end(api, model, words):
                n = server.tokens
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

    def __init__(self, ttft_s: float = 0.15, delay_s: float = 0.02, tokens: int = 20, prefill_tps: float | None = None):
        self._args = ["--ttft", str(ttft_s), "--delay", str(delay_s), "--tokens", str(tokens)]
        if prefill_tps:
            self._args += ["--prefill-tps", str(prefill_tps)]
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
    a = ap.parse_args()
    server = _Server(a.ttft, a.delay, a.tokens, a.prefill_tps, a.log)
    print(f"http://127.0.0.1:{server.httpd.server_address[1]}", flush=True)
    server.httpd.serve_forever()


if __name__ == "__main__":
    main()

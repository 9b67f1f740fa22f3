"""A reference streaming client on plain sockets (standard library only), to time what ``measure`` adds.

What a client adds to a measured time to first token is everything between the moment it takes its
clock and the moment the request's bytes leave, plus everything between the moment the first token's
bytes arrive and the moment it takes its clock again. This client keeps both as small as Python
allows, so it serves as the reference ``agentsim measure`` is compared with (docs/measure.md,
benchmarks/stream_fidelity.py):

* the request (headers and JSON body) is encoded before the clock starts, and sent with one
  ``sendall`` on a connected socket with ``TCP_NODELAY`` (kept alive between requests, as
  ``measure``'s pool does);
* the clock is read once per ``recv`` that returns, right after it returns, and every event completed
  by those bytes is stamped with that time: parsing (HTTP/1.1 chunked framing, SSE lines, JSON) comes
  after the stamp, so it adds nothing to the times.

:meth:`RawClient.stream` returns the send time, the arrival time of every output event (a delta with
text, in the OpenAI Chat Completions stream), the tokens of each event (from a running usage count,
``usage.completion_tokens`` on every chunk as vLLM's ``continuous_usage_stats`` gives, else the words
of its text: the loopback server writes one word per token), and the end. Plain ``http://`` only:
the loopback server of the tests. One connection, one request at a time: run several clients in
several processes (never threads, whose interpreter lock would delay a stamp).
"""

from __future__ import annotations

import json
import socket
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

__all__ = ["RawClient", "RawStream"]


@dataclass
class RawStream:
    """One streamed response as the reference client saw it (``perf_counter`` seconds)."""

    sent: float
    events: list[float] = field(default_factory=list)  # arrival of each output event
    tokens: list[int] = field(default_factory=list)  # tokens per output event
    end: float = float("nan")
    completion_tokens: int | None = None

    @property
    def ttft_s(self) -> float:
        return self.events[0] - self.sent

    @property
    def gaps_s(self) -> list[float]:
        return [b - a for a, b in zip(self.events, self.events[1:], strict=False)]

    @property
    def latency_s(self) -> float:
        return self.end - self.sent


class _Parser:
    """Incremental HTTP/1.1 response parser: status line, headers, chunked body, SSE events."""

    def __init__(self, out: RawStream):
        self.out, self.buf, self.body, self.head_done, self.done = out, b"", b"", False, False
        self.chunked, self.left, self.seen = True, None, 0

    def feed(self, data: bytes, now: float) -> None:
        self.buf += data
        if not self.head_done:
            head, sep, rest = self.buf.partition(b"\r\n\r\n")
            if not sep:
                return
            status = int(head.split(b" ", 2)[1])
            if status != 200:
                raise RuntimeError(f"HTTP {status}")
            self.chunked = b"transfer-encoding: chunked" in head.lower()
            self.head_done, self.buf = True, rest
        self._chunks()
        self._events(now)

    def _chunks(self) -> None:
        while True:
            if not self.chunked:
                self.body, self.buf = self.body + self.buf, b""
                return
            size_line, sep, rest = self.buf.partition(b"\r\n")
            if not sep:
                return
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                self.done, self.buf = True, b""
                return
            if len(rest) < size + 2:
                return
            self.body += rest[:size]
            self.buf = rest[size + 2 :]

    def _events(self, now: float) -> None:
        while b"\n\n" in self.body:
            block, _, self.body = self.body.partition(b"\n\n")
            data = b"".join(line[5:].strip() for line in block.split(b"\n") if line.startswith(b"data:"))
            if not data or data == b"[DONE]":
                continue
            obj = json.loads(data)
            usage = obj.get("usage") or {}
            count = usage.get("completion_tokens")
            text = "".join((c.get("delta") or {}).get("content") or "" for c in obj.get("choices") or [])
            if text:
                self.out.events.append(now)
                self.out.tokens.append(int(count) - self.seen if count is not None else len(text.split()))
            if count is not None:
                self.seen = int(count)
                self.out.completion_tokens = int(count)


class RawClient:
    """One kept-alive connection to an ``http://host:port`` server; :meth:`stream` posts one request."""

    def __init__(self, base_url: str, timeout_s: float = 60.0):
        u = urlsplit(base_url)
        if u.scheme != "http":
            raise ValueError("the reference client speaks plain http:// only")
        self.host, self.port, self.prefix = u.hostname or "127.0.0.1", u.port or 80, u.path.rstrip("/")
        self.timeout_s = timeout_s
        self.sock: socket.socket | None = None

    def _connect(self) -> socket.socket:
        if self.sock is None:
            self.sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return self.sock

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def stream(self, body: dict, path: str = "/chat/completions") -> RawStream:
        """Post ``body`` (an OpenAI Chat Completions request with ``stream: true``) and read the stream."""
        data = json.dumps(body).encode()
        request = (
            f"POST {self.prefix}{path} HTTP/1.1\r\nhost: {self.host}:{self.port}\r\n"
            f"content-type: application/json\r\naccept-encoding: identity\r\ncontent-length: {len(data)}\r\n\r\n"
        ).encode() + data
        sock = self._connect()
        out = RawStream(sent=time.perf_counter())
        sock.sendall(request)
        parser = _Parser(out)
        while not parser.done:
            chunk = sock.recv(65536)
            now = time.perf_counter()
            if not chunk:
                self.close()
                raise RuntimeError("the server closed the connection mid-response")
            parser.feed(chunk, now)
        out.end = now  # the closing chunk's arrival
        return out

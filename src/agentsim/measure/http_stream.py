"""A streaming HTTP/1.1 client that stamps bytes when they arrive, for ``agentsim measure``.

A measured time to first token is ``t(first token's bytes read) − t(request sent)``. Whatever a client
does between taking its clock and the request's bytes leaving, and between the first token's bytes
arriving and its clock being read again, is added to it. A general HTTP client adds a lot there:
httpx (with httpx-sse) added a median **1.8 ms** (idle machine) to **3-7 ms** (busy one) on top of a
plain-socket client on the loopback (docs/measure.md), of which about 0.8 ms is building and encoding
the request after the clock starts, 0.8 ms writing headers and body in two passes through its layers,
and the rest the event loop's delay before the reading task resumes, behind every other stream's
parsing. This client's median is within the run-to-run noise of the reference's (≤ 1 ms).

This client keeps the clock at the socket:

* the request (line, headers and body) is encoded **before** the clock starts and handed to the
  transport in one write, on a connection that is already open (a new connection's TCP and TLS
  handshakes come before the clock, and are reported apart as ``connect_s``);
* every read is stamped in the transport's ``data_received`` callback, **as the event loop delivers it**,
  before any task runs; decoding the chunked body, splitting Server-Sent Events and parsing JSON come
  later and add nothing to the times. Events that arrive in one read share its time (so a gap of 0 is
  real: the server sent them together).

Connections are kept alive and reused (at most ``size`` of them, one per request in flight).
``HTTPS_PROXY``/``HTTP_PROXY``/``NO_PROXY`` are honoured, through an HTTP ``CONNECT`` tunnel (the
proxy's own latency then belongs to the measurement, as it does to the application behind it).
Plain ``http://`` and ``https://`` (TLS with the ``certifi`` roots when installed, else the system's).

Errors are raised as :class:`HTTPStreamError` with ``kind`` one of ``connect`` (no connection),
``timeout`` (no byte for ``timeout_s``), ``cut`` (the connection closed before the response ended)
or ``protocol`` (not an HTTP/1.1 response).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
import time
import urllib.request
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

__all__ = ["HTTPStreamError", "Pool", "Response", "sse_events"]

READ_CHUNK_LIMIT = 1 << 20  # bytes of a response head, or of one chunk-size line, before it is refused
MAX_HEAD_BYTES = 64 << 10


class HTTPStreamError(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class _Protocol(asyncio.Protocol):
    """Collects ``(arrival time, bytes)`` pieces; the time is read as the loop hands the bytes over."""

    def __init__(self) -> None:
        self.pieces: deque[tuple[float, bytes]] = deque()
        self.waiter: asyncio.Future | None = None
        self.closed = False
        self.error: BaseException | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.pieces.append((time.perf_counter(), data))
        self._wake()

    def eof_received(self) -> bool:
        self.closed = True
        self._wake()
        return False

    def connection_lost(self, exc) -> None:
        self.closed, self.error = True, exc
        self._wake()

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def read(self, timeout_s: float) -> tuple[float, bytes]:
        """The next piece, ``(t, b"")`` at the end of the connection; a timeout after ``timeout_s`` without one."""
        if not self.pieces and not self.closed:
            self.waiter = asyncio.get_running_loop().create_future()
            try:
                await asyncio.wait_for(self.waiter, timeout_s)
            except TimeoutError:
                raise HTTPStreamError("timeout", f"no data for {timeout_s:g} s") from None
            finally:
                self.waiter = None
        if self.pieces:
            return self.pieces.popleft()
        return time.perf_counter(), b""


@dataclass
class _Conn:
    key: tuple[str, str, int]
    proto: _Protocol
    reused: bool = False

    def close(self) -> None:
        if self.proto.transport is not None:
            self.proto.transport.close()

    @property
    def usable(self) -> bool:
        return not self.proto.closed and not self.proto.pieces


def _ssl_context() -> ssl.SSLContext:
    try:
        import certifi

        ctx = ssl.create_default_context(cafile=certifi.where())
    except ImportError:  # pragma: no cover - certifi comes with httpx, a dependency
        ctx = ssl.create_default_context()
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx


def _proxy_for(scheme: str, host: str) -> str | None:
    """The proxy URL the environment names for this scheme and host (``NO_PROXY`` honoured), or None."""
    proxies = urllib.request.getproxies()
    url = proxies.get(scheme) or proxies.get("all")
    if not url or urllib.request.proxy_bypass(host):
        return None
    return url


class Pool:
    """At most ``size`` kept-alive connections, reused for requests to the same scheme, host and port."""

    def __init__(self, size: int, connect_timeout_s: float = 10.0):
        self.size, self.connect_timeout_s = size, connect_timeout_s
        self.idle: list[_Conn] = []
        self._ssl: ssl.SSLContext | None = None

    async def __aenter__(self) -> Pool:
        return self

    async def __aexit__(self, *exc) -> None:
        for c in self.idle:
            c.close()
        self.idle.clear()

    def _take(self, key) -> _Conn | None:
        for c in [c for c in self.idle if not c.usable]:  # closed by the server while idle
            self.idle.remove(c)
            c.close()
        for c in reversed(self.idle):
            if c.key == key:
                self.idle.remove(c)
                c.reused = True
                return c
        return None

    def give_back(self, conn: _Conn) -> None:
        if conn.usable and len(self.idle) < self.size:
            self.idle.append(conn)
        else:
            conn.close()

    async def connect(self, scheme: str, host: str, port: int) -> _Conn:
        key = (scheme, host, port)
        conn = self._take(key)
        if conn is not None:
            return conn
        loop = asyncio.get_running_loop()
        tls = None
        if scheme == "https":
            self._ssl = self._ssl or _ssl_context()
            tls = self._ssl
        proxy = _proxy_for(scheme, host)
        try:
            async with asyncio.timeout(self.connect_timeout_s):
                if proxy is None:
                    hostname = host if tls is not None else None
                    _, proto = await loop.create_connection(_Protocol, host, port, ssl=tls, server_hostname=hostname)
                else:
                    proto = await self._tunnel(proxy, host, port, tls)
        except TimeoutError:
            raise HTTPStreamError("connect", f"no connection within {self.connect_timeout_s:g} s") from None
        except (OSError, ssl.SSLError) as exc:
            raise HTTPStreamError("connect", str(exc) or type(exc).__name__) from None
        return _Conn(key, proto)

    async def _tunnel(self, proxy: str, host: str, port: int, tls) -> _Protocol:
        """A connection to ``host:port`` through an HTTP proxy's ``CONNECT`` tunnel (TLS inside it if asked)."""
        p = urlsplit(proxy if "://" in proxy else "http://" + proxy)
        if p.scheme != "http":
            raise OSError(f"proxy {p.scheme}:// is not supported (an http:// proxy with CONNECT is)")
        loop = asyncio.get_running_loop()
        transport, proto = await loop.create_connection(_Protocol, p.hostname, p.port or 80)
        auth = ""
        if p.username:
            token = base64.b64encode(f"{unquote(p.username)}:{unquote(p.password or '')}".encode()).decode()
            auth = f"proxy-authorization: Basic {token}\r\n"
        transport.write(f"CONNECT {host}:{port} HTTP/1.1\r\nhost: {host}:{port}\r\n{auth}\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            _, piece = await proto.read(self.connect_timeout_s)
            if not piece:
                raise OSError("the proxy closed the connection")
            head += piece
        first = head.split(b"\r\n", 1)[0]
        status = first.split(b" ")
        if len(status) < 2 or status[1] != b"200":
            raise OSError(f"the proxy refused the tunnel: {first.decode('latin-1')}")
        if tls is None:
            return proto
        new = await loop.start_tls(transport, proto, tls, server_hostname=host)
        proto.transport = new  # the protocol now reads the decrypted stream
        return proto


@dataclass
class Response:
    """One streamed response: its status and headers, then its body as ``(arrival time, bytes)`` pieces."""

    conn: _Conn
    pool: Pool
    timeout_s: float
    sent: float  # perf_counter when the request was handed to the transport
    connect_s: float | None  # seconds spent opening a new connection (None: a kept-alive one)
    status: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    headers_at: float = 0.0
    _rest: bytes = b""
    _done: bool = False

    async def _head(self) -> None:
        buf, t = b"", 0.0
        while True:
            if b"\r\n\r\n" not in buf:
                t, piece = await self.conn.proto.read(self.timeout_s)
                if not piece:
                    raise HTTPStreamError("cut", "the server closed the connection before the response headers")
                buf += piece
                if len(buf) > MAX_HEAD_BYTES and b"\r\n\r\n" not in buf:
                    raise HTTPStreamError("protocol", "response headers over 64 KB")
                continue
            head, _, rest = buf.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            parts = lines[0].split(" ", 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
                raise HTTPStreamError("protocol", f"not an HTTP/1.1 response: {lines[0][:80]!r}")
            status = int(parts[1])
            if 100 <= status < 200:  # an interim response (100 Continue): the real one follows
                buf = rest
                continue
            self.status, self.headers_at, self._rest = status, t, rest
            for line in lines[1:]:
                name, _, value = line.partition(":")
                self.headers[name.strip().lower()] = value.strip()
            return

    async def body(self) -> AsyncIterator[tuple[float, bytes]]:
        """The body's bytes, de-chunked, each piece with the arrival time of the read that completed it."""
        reader = _Body(self)
        async for piece in reader.pieces():
            yield piece
        self._done = True

    async def read_all(self) -> bytes:
        return b"".join([p async for _, p in self.body()])

    def release(self) -> None:
        """Return the connection to the pool when the body was read to its end and the server keeps it open."""
        if self._done and self.headers.get("connection", "").lower() != "close":
            self.pool.give_back(self.conn)
        else:
            self.conn.close()


class _Body:
    """Framing of a response body: chunked, ``content-length`` or up to the end of the connection."""

    def __init__(self, resp: Response):
        self.resp, self.buf, self.t = resp, resp._rest, resp.headers_at
        h = resp.headers
        self.chunked = "chunked" in h.get("transfer-encoding", "").lower()
        self.length = int(h["content-length"]) if "content-length" in h and not self.chunked else None

    async def _more(self) -> bool:
        self.t, piece = await self.resp.conn.proto.read(self.resp.timeout_s)
        self.buf += piece
        return bool(piece)

    async def pieces(self) -> AsyncIterator[tuple[float, bytes]]:
        if self.chunked:
            async for p in self._chunked():
                yield p
            return
        left = self.length
        while left is None or left > 0:
            if not self.buf and not await self._more():
                if left is None:
                    return
                raise HTTPStreamError("cut", f"the connection closed {left} bytes before the body's end")
            take = self.buf if left is None else self.buf[:left]
            self.buf = self.buf[len(take) :]
            if left is not None:
                left -= len(take)
            yield self.t, take

    async def _chunked(self) -> AsyncIterator[tuple[float, bytes]]:
        while True:
            while b"\r\n" not in self.buf:
                if len(self.buf) > READ_CHUNK_LIMIT:
                    raise HTTPStreamError("protocol", "a chunk-size line over 1 MB")
                if not await self._more():
                    raise HTTPStreamError("cut", "the connection closed inside the chunked body")
            line, _, self.buf = self.buf.partition(b"\r\n")
            try:
                size = int(line.split(b";")[0].strip() or b"x", 16)
            except ValueError:
                raise HTTPStreamError("protocol", f"bad chunk size {line[:40]!r}") from None
            if size == 0:
                while b"\r\n\r\n" not in b"\r\n" + self.buf:  # trailers, then the closing blank line
                    if not await self._more():
                        return
                return
            while len(self.buf) < size + 2:
                if not await self._more():
                    raise HTTPStreamError("cut", "the connection closed inside a chunk")
            data, self.buf = self.buf[:size], self.buf[size + 2 :]
            yield self.t, data


@contextlib.asynccontextmanager
async def post(pool: Pool, url: str, headers: dict[str, str], body: bytes, timeout_s: float):
    """POST ``body`` and yield the :class:`Response` once its headers are in (the clock: ``Response.sent``)."""
    u = urlsplit(url)
    if u.scheme not in ("http", "https") or not u.hostname:
        raise HTTPStreamError("connect", f"not an http:// or https:// URL: {url}")
    port = u.port or (443 if u.scheme == "https" else 80)
    target = (u.path or "/") + (f"?{u.query}" if u.query else "")
    host = u.hostname if u.port is None else f"{u.hostname}:{u.port}"
    lines = [f"POST {target} HTTP/1.1", f"host: {host}", f"content-length: {len(body)}", "accept-encoding: identity"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    request = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
    for attempt in (0, 1):
        t_connect = time.perf_counter()
        conn = await pool.connect(u.scheme, u.hostname, port)
        connect_s = None if conn.reused else time.perf_counter() - t_connect
        sent = time.perf_counter()
        conn.proto.transport.write(request)
        resp = Response(conn, pool, timeout_s, sent, connect_s)
        try:
            await resp._head()
        except HTTPStreamError as exc:
            conn.close()
            if exc.kind == "cut" and conn.reused and attempt == 0:
                continue  # a kept-alive connection the server had closed: once more on a new one
            raise
        break
    try:
        yield resp
    finally:
        resp.release()


async def sse_events(pieces: AsyncIterator[tuple[float, bytes]]) -> AsyncIterator[tuple[float, str, str]]:
    """Server-Sent Events ``(arrival time, event name, data)`` of a body; an event's time is that of its last byte."""
    buf = b""
    async for t, piece in pieces:
        buf += piece
        while True:
            cut = _event_end(buf)
            if cut is None:
                break
            block, buf = buf[: cut[0]], buf[cut[1] :]
            name, data = "", []
            for raw in block.decode("utf-8", "replace").splitlines():
                key, _, value = raw.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if key == "event":
                    name = value
                elif key == "data":
                    data.append(value)
            if data or name:
                yield t, name, "\n".join(data)


def _event_end(buf: bytes) -> tuple[int, int] | None:
    """Where the first event of ``buf`` ends and the next starts (a blank line: LF LF or CRLF CRLF)."""
    best = None
    for sep in (b"\n\n", b"\r\n\r\n", b"\r\r"):
        i = buf.find(sep)
        if i >= 0 and (best is None or i < best[0]):
            best = (i, i + len(sep))
    return best

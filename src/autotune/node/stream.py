"""A minimal HTTP/1.1 client for streamed POSTs: the load generator's transport.

Through httpx, each request cost milliseconds of pure-Python work before it was on the wire
and each streamed chunk went through several layers before it was time-stamped: at 64 streams
on a 2-core machine the first tokens of a wave read 45-300 ms late and output tok/s 4-8% low
(bench/loadgen.py, docs/benchmarks.md). This client does only what the benchmark needs:
keep-alive connections to one ``http://`` host, a request written in one call, the response
read in large pieces, each piece time-stamped the moment it arrives (before any parsing), and
the three body framings (chunked, Content-Length, until close).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator
from types import TracebackType
from urllib.parse import urlsplit

READ_SIZE = 1 << 16
MAX_HEAD = 1 << 16


class StreamError(Exception):
    """A transport failure; ``str()`` starts with its kind (``ConnectError: ...``)."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")


class _Conn:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.used = False  # served a request before (a keep-alive reuse may find it closed)

    def close(self) -> None:
        self.writer.close()


class Pool:
    """Keep-alive connections to one server.

    Args:
        base_url: ``http://host:port`` (no TLS: autotune benchmarks servers it launched).
        read_timeout_s: the longest silence while waiting for response bytes.
        connect_timeout_s: the longest wait for a connection.

    Raises:
        ValueError: not an ``http://`` URL.
    """

    def __init__(self, base_url: str, *, read_timeout_s: float, connect_timeout_s: float) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"the load generator speaks plain http://host:port, not {base_url!r}")
        self.host = parts.hostname
        self.port = parts.port or 80
        self.read_timeout_s = read_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self._idle: list[_Conn] = []

    async def _open(self) -> _Conn:
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port, limit=MAX_HEAD),
                self.connect_timeout_s,
            )
        except TimeoutError:
            raise StreamError(
                "ConnectTimeout", f"no connection within {self.connect_timeout_s:g} s"
            ) from None
        except OSError as exc:
            raise StreamError("ConnectError", str(exc) or type(exc).__name__) from None
        sock = writer.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError as exc:  # a dying server reset it already: a failed request
                writer.close()
                raise StreamError("ConnectError", str(exc) or type(exc).__name__) from None
        return _Conn(reader, writer)

    def post(self, path: str, body: bytes) -> Response:
        """A streamed ``POST path`` with a JSON body; use as ``async with``."""
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            "Content-Type: application/json\r\nAccept: text/event-stream\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        return Response(self, head + body)

    async def aclose(self) -> None:
        """Close the idle connections (inside the event loop that opened them)."""
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
        for conn in idle:
            with contextlib.suppress(OSError):  # the peer already went: closed either way
                await conn.writer.wait_closed()


class Response:
    """One response: ``status``, ``headers``, then :meth:`pieces` or :meth:`read`."""

    def __init__(self, pool: Pool, request: bytes) -> None:
        self._pool, self._request = pool, request
        self._conn: _Conn | None = None
        self.status = 0
        self.headers: dict[str, str] = {}
        self._buf = b""
        self._done = False
        self._reusable = False

    async def __aenter__(self) -> Response:
        pool = self._pool
        while True:
            reused = bool(pool._idle)
            conn = pool._idle.pop() if reused else await pool._open()
            self._conn = conn
            conn.writer.write(self._request)
            try:
                await self._head()
                return self
            except StreamError:
                conn.close()
                self._conn = None
                if reused and self.status == 0:
                    continue  # the server closed an idle connection: once more, on a new one
                raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._done and self._reusable and exc is None:
            conn.used = True
            self._pool._idle.append(conn)
        else:
            conn.close()

    async def _read(self) -> bytes:
        assert self._conn is not None
        try:
            async with asyncio.timeout(self._pool.read_timeout_s):
                return await self._conn.reader.read(READ_SIZE)
        except TimeoutError:
            raise StreamError(
                "ReadTimeout", f"no data for {self._pool.read_timeout_s:g} s"
            ) from None
        except OSError as exc:
            raise StreamError("ReadError", str(exc) or type(exc).__name__) from None

    async def _head(self) -> None:
        while b"\r\n\r\n" not in self._buf:
            data = await self._read()
            if not data:
                raise StreamError(
                    "RemoteProtocolError", "server disconnected without sending a response"
                )
            self._buf += data
            if len(self._buf) > MAX_HEAD:
                raise StreamError("RemoteProtocolError", "response head too long")
        head, self._buf = self._buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            raise StreamError("RemoteProtocolError", f"bad status line {lines[0][:80]!r}")
        self.status = int(parts[1])
        for line in lines[1:]:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()
        keep = self.headers.get("connection", "").lower() != "close" and parts[0] != "HTTP/1.0"
        self._chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        length = self.headers.get("content-length")
        self._left = int(length) if length and length.isdigit() and not self._chunked else None
        self._reusable = keep and (self._chunked or self._left is not None)

    async def pieces(self) -> AsyncIterator[tuple[float, bytes]]:
        """The body as it arrives: ``(time.perf_counter() at arrival, decoded bytes)``."""
        now = time.perf_counter()
        pending, self._buf = self._buf, b""
        size = -1  # chunked: bytes left in the current chunk; -1: a size line is next
        while True:
            if self._chunked:
                out = bytearray()
                while True:
                    if size < 0:
                        end = pending.find(b"\r\n")
                        if end < 0:
                            break
                        try:
                            size = int(pending[:end].split(b";")[0], 16)
                        except ValueError:
                            raise StreamError("RemoteProtocolError", "bad chunk size") from None
                        pending = pending[end + 2 :]
                        if size == 0:
                            self._done = True  # trailers ignored: the benchmark needs none
                            break
                    if len(pending) < size + 2:
                        take = min(size, len(pending))
                        out += pending[:take]
                        pending, size = pending[take:], size - take
                        break
                    out += pending[:size]
                    pending, size = pending[size + 2 :], -1
                if out:
                    yield now, bytes(out)
            elif pending:
                if self._left is not None:
                    pending = pending[: self._left]
                    self._left -= len(pending)
                    self._done = self._left == 0
                yield now, pending
                pending = b""
            if self._done or (self._left == 0 and not self._chunked):
                self._done = True
                return
            data = await self._read()
            now = time.perf_counter()
            if not data:
                if self._chunked or self._left:
                    raise StreamError(
                        "RemoteProtocolError", "peer closed connection before the body ended"
                    )
                self._done = True
                return
            pending += data

    async def read(self) -> bytes:
        """The rest of the body at once (error responses)."""
        return b"".join([piece async for _, piece in self.pieces()])

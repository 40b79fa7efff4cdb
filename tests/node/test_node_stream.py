"""The load generator's HTTP/1.1 client: framings, keep-alive, broken and silent servers."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator

import pytest

from autotune.node.stream import Pool, StreamError


class Scripted:
    """A one-thread TCP server: each accepted connection gets the next script, a list of
    raw byte pieces sent after the request arrived (``None``: close the connection)."""

    def __init__(self, scripts: list[list[bytes | None]], pause_s: float = 0.02) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.scripts, self.pause_s = scripts, pause_s
        self.connections = 0
        self.requests = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        import time

        for script in self.scripts:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                for piece in script:
                    if piece is None:
                        break
                    if piece == b"<request>":
                        self._read_request(conn)
                        continue
                    conn.sendall(piece)
                    time.sleep(self.pause_s)

    def _read_request(self, conn: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head, body = data.split(b"\r\n\r\n", 1)
        length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
        while len(body) < length:
            body += conn.recv(65536)
        self.requests += 1


@pytest.fixture
def scripted() -> Iterator[type[Scripted]]:
    yield Scripted


def _fetch(pool: Pool, times: int = 1) -> list[tuple[int, list[bytes]]]:
    async def one() -> tuple[int, list[bytes]]:
        async with pool.post("/x", b"{}") as response:
            return response.status, [piece async for _, piece in response.pieces()]

    async def all_of() -> list[tuple[int, list[bytes]]]:
        try:
            return [await one() for _ in range(times)]
        finally:
            await pool.aclose()

    return asyncio.run(all_of())


def _pool(url: str, read_timeout_s: float = 5.0) -> Pool:
    return Pool(url, read_timeout_s=read_timeout_s, connect_timeout_s=5.0)


CHUNKED = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"


def test_chunks_split_anywhere_are_reassembled_and_the_connection_reused(scripted) -> None:  # type: ignore[no-untyped-def]
    # One connection, two requests; chunk sizes, data and CRLFs cut at odd places.
    script: list[bytes | None] = [
        b"<request>", CHUNKED + b"5\r\nhel", b"lo\r", b"\n3", b"\r\n wo\r\n0\r\n\r\n",
        b"<request>", CHUNKED + b"2\r\nok\r\n0\r\n\r\n",
    ]  # fmt: skip
    server = scripted([script])
    got = _fetch(_pool(server.url), times=2)
    assert [(s, b"".join(p)) for s, p in got] == [(200, b"hello wo"), (200, b"ok")]
    assert len(got[0][1]) >= 2  # delivered as it arrived, not at the end
    assert server.connections == 1 and server.requests == 2


def test_content_length_and_until_close_bodies(scripted) -> None:  # type: ignore[no-untyped-def]
    server = scripted(
        [
            [b"<request>", b"HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope"],
            [b"<request>", b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nab", b"cd", None],
        ]
    )
    got = _fetch(_pool(server.url), times=2)
    assert [(s, b"".join(p)) for s, p in got] == [(404, b"nope"), (200, b"abcd")]


def test_a_closed_idle_connection_is_replaced_once(scripted) -> None:  # type: ignore[no-untyped-def]
    # The server keeps the first connection for one response, then drops it while idle.
    first: list[bytes | None] = [b"<request>", b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na"]
    second: list[bytes | None] = [b"<request>", b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb"]
    server = scripted([first, second], pause_s=0.2)
    got = _fetch(_pool(server.url), times=2)
    assert [b"".join(p) for _, p in got] == [b"a", b"b"]
    assert server.connections == 2


@pytest.mark.parametrize(
    ("script", "kind"),
    [
        ([b"<request>", CHUNKED + b"10\r\nshort", None], "RemoteProtocolError"),
        ([b"<request>", b"SPDY/9 what\r\n\r\n"], "RemoteProtocolError"),
        ([b"<request>", None], "RemoteProtocolError"),
        ([b"<request>", CHUNKED + b"zz\r\n"], "RemoteProtocolError"),
    ],
)
def test_broken_responses(scripted, script: list[bytes | None], kind: str) -> None:  # type: ignore[no-untyped-def]
    server = scripted([script])
    with pytest.raises(StreamError, match=f"^{kind}"):
        _fetch(_pool(server.url))


def test_a_silent_server_times_out(scripted) -> None:  # type: ignore[no-untyped-def]
    server = scripted([[b"<request>", CHUNKED]], pause_s=2.0)
    with pytest.raises(StreamError, match="^ReadTimeout: no data for 0.2 s"):
        _fetch(_pool(server.url, read_timeout_s=0.2))


def test_only_plain_http() -> None:
    with pytest.raises(ValueError, match="plain http"):
        Pool("https://example.com", read_timeout_s=1, connect_timeout_s=1)

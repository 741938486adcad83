"""A gate between the code under test and the test's PostgreSQL server: a TCP relay on
127.0.0.1 that can be shut (every connection through it cut, new ones refused: the
server as a client sees it when it goes down) and opened again, without stopping the
server other tests share."""

from __future__ import annotations

import asyncio
import contextlib
import re


class PgGate:
    def __init__(self, port: int) -> None:
        self.port = port  # the server's
        self.open = True
        self.accepted = 0
        self.refused = 0
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    def url(self, url: str, listen_port: int) -> str:
        """``url`` with the gate's port in place of the server's."""
        return re.sub(r"@127\.0\.0\.1:\d+/", f"@127.0.0.1:{listen_port}/", url, count=1)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.open:
            self.refused += 1
            writer.close()
            return
        self.accepted += 1
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        except OSError:
            writer.close()
            return
        self._writers.update((writer, up_writer))

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, ConnectionError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self._writers.discard(writer)
        self._writers.discard(up_writer)

    def shut(self) -> None:
        """Cut every connection and refuse new ones."""
        self.open = False
        for writer in list(self._writers):
            with contextlib.suppress(Exception):
                transport = writer.transport
                transport.abort()
        self._writers.clear()

    def reopen(self) -> None:
        self.open = True

    async def close(self) -> None:
        self.shut()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

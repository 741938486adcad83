"""A lean MCP agent over streamable HTTP for the hub benches: JSON-RPC POSTs on one
keep-alive connection (the hub answers each call with one JSON body), so a hub that dies
is a plain connection error here (the SDK's client may wait on a transport that is
gone), and 128 of them cost the bench's process little.

``call`` returns the tool's ``structuredContent`` (a failed call: ``{"error": {...}}``
with its ``code`` and ``retrySafe``); a transport failure raises ``HubGone``.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import httpx2

HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}
INIT = {
    "protocolVersion": "2025-06-18",
    "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"},
}


class HubGone(Exception):
    """The hub could not be reached or dropped the connection (nothing is known)."""


class RawAgent:
    def __init__(self, url: str, token: str, *, timeout: float = 60.0) -> None:
        self.url = url
        self.token = token
        self.http = httpx2.AsyncClient(
            headers={"authorization": f"Bearer {token}", **HEADERS}, timeout=timeout
        )
        self.session: str | None = None
        self._ids = itertools.count(1)

    async def _post(self, message: dict[str, Any]) -> httpx2.Response:
        headers = {"mcp-session-id": self.session} if self.session else {}
        try:
            return await self.http.post(self.url, json=message, headers=headers)
        except httpx2.HTTPError as error:
            raise HubGone(f"{type(error).__name__}: {error}") from None

    async def open(self) -> RawAgent:
        answer = await self._post(
            {"jsonrpc": "2.0", "id": next(self._ids), "method": "initialize", "params": INIT}
        )
        if answer.status_code != 200:
            raise HubGone(f"initialize: HTTP {answer.status_code} {answer.text[:200]}")
        self.session = answer.headers["mcp-session-id"]
        await self._post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    async def move(self, url: str) -> None:
        """Connect to another hub (a new MCP session there, the same token)."""
        await self.close()
        self.url = url
        self.session = None
        self.http = httpx2.AsyncClient(
            headers={"authorization": f"Bearer {self.token}", **HEADERS}, timeout=60.0
        )
        await self.open()

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        message = {
            "jsonrpc": "2.0",
            "id": next(self._ids),
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        answer = await self._post(message)
        if answer.status_code != 200:
            try:
                document = answer.json()
            except ValueError:
                document = {}
            # A hub refusing before the tools: 503 (busy, draining, full) is retry-safe,
            # nothing done; anything else (401: the token) is not.
            code = document.get("error") if isinstance(document, dict) else None
            return {"error": {"code": f"http-{answer.status_code}-{code or ''}",
                              "retrySafe": answer.status_code == 503,
                              "message": str(document)[:200]}}  # fmt: skip
        try:
            result = answer.json()["result"]
        except (ValueError, KeyError) as error:
            raise HubGone(f"an answer that is not a result: {answer.text[:200]}") from error
        structured = result.get("structuredContent")
        if structured is None:
            text = result["content"][0]["text"]
            structured = json.loads(text) if not result.get("isError") else {"error": text}
        return structured  # type: ignore[no-any-return]

    async def close(self) -> None:
        await self.http.aclose()

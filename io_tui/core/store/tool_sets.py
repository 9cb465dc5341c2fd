"""The tool schemas requests offered, stored once per distinct set by its digest.

A request's manifest names the set it offered (``tools_digest``); the set itself is kept here,
so a recorded request can be sent again exactly as it was (a fork's first request, a "what if"
probe) without starting the MCP servers whose tools it offered.
"""

from __future__ import annotations

import hashlib
import json
import time
from functools import partial
from typing import Any

from io_tui.core.store.db import Connection, Database


def tools_digest(specs: list[dict[str, Any]]) -> str:
    """The digest a set of tool schemas (as JSON) is stored under."""
    text = json.dumps(specs, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class ToolSetRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def put(self, digest: str, specs: list[dict[str, Any]]) -> None:
        await self.db.write(
            partial(
                _execute,
                "INSERT INTO tool_sets (digest, specs, created_at) VALUES (?, ?, ?)"
                " ON CONFLICT (digest) DO NOTHING",
                (digest, json.dumps(specs), time.time()),
            )
        )

    async def get(self, digest: str) -> list[dict[str, Any]] | None:
        row = await self.db.fetchone("SELECT specs FROM tool_sets WHERE digest = ?", (digest,))
        return json.loads(row["specs"]) if row else None


def _execute(sql: str, params: tuple[Any, ...], conn: Connection) -> None:
    conn.execute(sql, params)

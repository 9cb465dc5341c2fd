"""Which content of a workspace's ``.mcp.json`` the operator trusted: its digest, per workspace.

A cloned repository's ``.mcp.json`` names commands to start. None starts until the operator
trusted that file's exact bytes (``io-tui mcp trust``, the TUI, an ACP client); a changed file
has another digest and is asked about again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from io_tui.core.store.db import Connection, Database


@dataclass(frozen=True, slots=True)
class Trusted:
    workspace: str
    digest: str
    trusted_by: str
    trusted_at: float


class TrustRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def trust(self, workspace: str, digest: str, by: str) -> None:
        """Trust ``digest`` (a ``.mcp.json``'s content) in ``workspace``; again is a no-op."""
        now = time.time()
        await self.db.write(
            lambda conn: conn.execute(
                "INSERT INTO mcp_trust (workspace, digest, trusted_by, trusted_at)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (workspace, digest) DO NOTHING",
                (workspace, digest, by, now),
            )
        )

    async def revoke(self, workspace: str) -> int:
        """Forget every trusted digest of ``workspace``; how many there were."""

        def revoke(conn: Connection) -> int:
            rows = conn.execute(
                "SELECT digest FROM mcp_trust WHERE workspace = ?", (workspace,)
            ).fetchall()
            conn.execute("DELETE FROM mcp_trust WHERE workspace = ?", (workspace,))
            return len(rows)

        return await self.db.write(revoke)

    async def get(self, workspace: str, digest: str) -> Trusted | None:
        row = await self.db.fetchone(
            "SELECT * FROM mcp_trust WHERE workspace = ? AND digest = ?", (workspace, digest)
        )
        if row is None:
            return None
        return Trusted(row["workspace"], row["digest"], row["trusted_by"], row["trusted_at"])

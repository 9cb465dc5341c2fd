"""A store damaged as a disk or a careless copy damages one: one page in the middle of the file
overwritten, the header and the schema still readable, so the open's checks of identity and
version pass and only a statement that reads the page (or ``quick_check``) finds it."""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing
from pathlib import Path

MALFORMED = "database disk image is malformed"  # what SQLite says of such a page


def damage_table(path: Path, table: str) -> str:
    """Overwrite ``table``'s root page of the (closed) store at ``path`` with 0xff bytes; the
    file's sha256 after."""
    with closing(sqlite3.connect(path)) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        [root] = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,))
    assert 2 < root[0] < pages, (table, root, pages)  # neither the header's page nor the last
    with path.open("r+b") as f:
        f.seek((root[0] - 1) * page_size)
        f.write(b"\xff" * page_size)
    return sha256(path)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()

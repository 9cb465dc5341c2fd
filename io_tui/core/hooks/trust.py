"""Which workspace files the operator approved, by digest: a file's hooks run only while its
content is the content approved (``io-tui hooks trust``); any change asks again.

Why a digest per workspace: a repository is shared, and whoever can push to it could otherwise
run commands on every machine that opens it. The approvals live in the user's config dir
(``trusted.json``), written atomically.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from io_tui.paths import config_dir

KIND = "claude-hooks"  # the kind of file approved; another (``.mcp.json``) can share the file


def trust_file() -> Path:
    return config_dir() / "trusted.json"


def _load() -> dict[str, dict[str, str]]:
    try:
        data = json.loads(trust_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def workspace_hooks_trusted(workspace: Path, digest: str, kind: str = KIND) -> bool:
    return _load().get(kind, {}).get(str(workspace.resolve())) == digest


def trust_workspace_hooks(workspace: Path, digest: str | None, kind: str = KIND) -> None:
    """Record ``digest`` as approved for ``workspace`` (None: withdraw the approval)."""
    data = _load()
    entries = data.setdefault(kind, {})
    key = str(workspace.resolve())
    if digest is None:
        entries.pop(key, None)
    else:
        entries[key] = digest
    path = trust_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".trusted-")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(data, out, indent=2, sort_keys=True)
    os.replace(tmp, path)

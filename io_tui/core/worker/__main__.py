"""``python -m io_tui.core.worker --store PATH``: the harness worker the app starts (see server)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from io_tui.core.store import StoreError
from io_tui.core.worker.server import main


def run() -> int:
    parser = argparse.ArgumentParser(prog="python -m io_tui.core.worker")
    parser.add_argument("--store", type=Path, required=True, help="the app's SQLite store")
    args = parser.parse_args()
    try:
        return asyncio.run(main(args.store))
    except StoreError as exc:
        print(f"io-tui worker: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(run())

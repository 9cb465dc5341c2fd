"""``python -m io_tui.core.hosts.process --store PATH``: the harness worker the app starts (see server)."""

from __future__ import annotations

import argparse
import asyncio
import sys

from io_tui.core.hosts.process.protocol import EXIT_STORE_DAMAGED
from io_tui.core.hosts.process.server import main
from io_tui.core.store import StoreDamaged, StoreError, store_location


def run() -> int:
    parser = argparse.ArgumentParser(prog="python -m io_tui.core.hosts.process")
    parser.add_argument(
        "--store", type=store_location, required=True, help="the app's store (file or URL)"
    )
    args = parser.parse_args()
    try:
        return asyncio.run(main(args.store))
    except StoreDamaged as exc:  # its last line: the app ends with it (protocol.py)
        print(exc, file=sys.stderr)
        return EXIT_STORE_DAMAGED
    except StoreError as exc:
        print(f"io-tui worker: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(run())

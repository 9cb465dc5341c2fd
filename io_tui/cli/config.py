"""``io-tui config path|show`` and ``io-tui providers``: where settings live, and what is reachable."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from io_tui.cli.common import EXIT_OK, UsageError, print_json
from io_tui.config import ConfigError, load_settings, masked
from io_tui.core import PRESETS, probe_models
from io_tui.paths import config_file


def register(sub: Any) -> None:
    config = sub.add_parser("config", help="where the config file is, and the merged settings")
    config.add_argument("action", choices=["path", "show"])
    config.add_argument("--json", action="store_true")
    config.set_defaults(handler=config_command)

    providers = sub.add_parser(
        "providers", help="the provider presets and whether each answers now"
    )
    providers.add_argument("--timeout", type=float, default=2.0, help="seconds per probe")
    providers.add_argument("--json", action="store_true")
    providers.set_defaults(handler=providers_command)


async def config_command(args: argparse.Namespace) -> int:
    if args.action == "path":
        print(config_file())
        return EXIT_OK
    try:
        settings = load_settings()
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    data = masked(settings)
    if args.json:
        print_json(data)
    else:
        print(f"# {config_file()}{'' if config_file().exists() else ' (not created yet)'}")
        for key, value in data.items():
            print(f"{key} = {value!r}")
    return EXIT_OK


async def providers_command(args: argparse.Namespace) -> int:
    names = list(PRESETS)
    results = await asyncio.gather(*(probe_models(name, timeout_s=args.timeout) for name in names))
    rows = [
        {
            "name": name,
            "wire": PRESETS[name].wire,
            "base_url": PRESETS[name].base_url,
            "key_env": PRESETS[name].key_env,
            "reachable": result.reachable,
            "detail": result.detail,
        }
        for name, result in zip(names, results, strict=True)
    ]
    if args.json:
        print_json(rows)
        return EXIT_OK
    for row in rows:
        mark = "✓" if row["reachable"] else "·"
        print(
            f"{mark} {row['name']:<18} {row['wire']:<9} {row['base_url'] or '(needs --base-url)'}"
        )
        print(f"    {row['detail']}")
    return EXIT_OK

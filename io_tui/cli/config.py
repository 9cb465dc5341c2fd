"""``io-tui config path|show`` and ``io-tui providers``: where settings live, and what is reachable."""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from io_tui.cli.common import EXIT_FAILED, EXIT_OK, UsageError, print_json
from io_tui.config import ConfigError, load_settings, masked
from io_tui.core import PRESETS, probe_models
from io_tui.paths import config_file


def register(sub: Any) -> None:
    config = sub.add_parser("config", help="where the config file is, and the merged settings")
    config.add_argument("action", choices=["path", "show"])
    config.add_argument("--json", action="store_true")
    config.set_defaults(handler=config_command)

    providers = sub.add_parser(
        "providers",
        help="probe the provider presets (or one endpoint) and list the models each serves",
    )
    providers.add_argument(
        "--provider", metavar="P", help="probe only this preset (default: every preset)"
    )
    providers.add_argument(
        "--base-url",
        metavar="URL",
        help="probe this URL (for --provider, default openai-compatible) instead of the preset's",
    )
    providers.add_argument("--timeout", type=float, default=2.0, help="seconds per probe")
    providers.add_argument("--json", action="store_true")
    providers.set_defaults(handler=providers_command)


async def config_command(args: argparse.Namespace) -> int:
    if args.action == "path":
        print(config_file())
        return EXIT_OK
    try:
        settings = load_settings(store=getattr(args, "store", None))
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    data = masked(settings)
    if args.json:
        print_json(data)
    else:
        print(f"# {config_file()}{'' if config_file().exists() else ' (not created yet)'}")
        for key, value in data.items():
            print(f"{key} = {json.dumps(value, ensure_ascii=False, default=str)}")
    return EXIT_OK


def probe_targets(
    args: argparse.Namespace, configured: str, configured_url: str | None
) -> list[tuple[str, str | None]]:
    """(preset, base URL or None for the preset's) to probe: one with ``--provider`` or
    ``--base-url``, else every preset, the configured one at the config's ``base_url``."""
    if args.provider or args.base_url:
        name = args.provider or "openai-compatible"
        if name not in PRESETS:
            known = ", ".join(PRESETS)
            raise UsageError(f"unknown provider {name!r}; known: {known}")
        url = args.base_url or (configured_url if name == configured else None)
        return [(name, url)]
    return [(name, configured_url if name == configured else None) for name in PRESETS]


async def providers_command(args: argparse.Namespace) -> int:
    try:
        settings = load_settings()
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    targets = probe_targets(args, settings.provider, settings.base_url)
    results = await asyncio.gather(
        *(probe_models(name, base_url=url, timeout_s=args.timeout) for name, url in targets)
    )
    rows: list[dict[str, Any]] = [
        {
            "name": name,
            "wire": PRESETS[name].wire,
            "base_url": url or PRESETS[name].base_url,
            "key_env": PRESETS[name].key_env,
            "reachable": result.reachable,
            "detail": result.detail,
            "models": list(result.models),
        }
        for (name, url), result in zip(targets, results, strict=True)
    ]
    if args.json:
        print_json(rows)
    else:
        for row in rows:
            mark = "✓" if row["reachable"] else "·"
            where = row["base_url"] or "(needs --base-url)"
            print(f"{mark} {row['name']:<18} {row['wire']:<9} {where}")
            print(f"    {row['detail']}")
            if len(rows) == 1:  # one endpoint asked about: every model it serves
                for model in row["models"]:
                    print(f"      {model}")
    single = len(rows) == 1
    return EXIT_FAILED if single and not rows[0]["reachable"] else EXIT_OK

"""``io-tui rules list|revoke ID``: the rules a human chose to remember (DESIGN §3.4)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from io_tui.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    add_store_option,
    error,
    open_store,
    print_json,
)


def register(sub: Any) -> None:
    rules = sub.add_parser("rules", help="remembered approval rules: list or revoke")
    actions = rules.add_subparsers(dest="rules_action", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="the remembered rules")
    listing.add_argument("--all", action="store_true", help="include revoked rules")
    listing.add_argument("--json", action="store_true")
    add_store_option(listing)
    listing.set_defaults(handler=list_command)
    revoke = actions.add_parser("revoke", help="revoke one rule by id")
    revoke.add_argument("id", type=int)
    revoke.add_argument("--json", action="store_true")
    add_store_option(revoke)
    revoke.set_defaults(handler=revoke_command)


async def list_command(args: argparse.Namespace) -> int:
    store = await open_store(args)
    try:
        rules = await store.rules.list(include_revoked=args.all)
    finally:
        await store.close()
    if args.json:
        print_json([r.to_json() for r in rules])
        return EXIT_OK
    if not rules:
        print("no remembered rules")
        return EXIT_OK
    for r in rules:
        where = {"run": f"run {r.run_id}", "workspace": r.workspace or "", "global": "everywhere"}
        state = "  [revoked]" if r.revoked_at else ""
        saved = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created_at))
        origin = f" from request #{r.approval_id}" if r.approval_id else ""
        print(
            f"#{r.id}  {r.effect.value} {r.act.value} {r.pattern}  "
            f"({r.scope}: {where.get(r.scope, r.scope)}){state}"
        )
        print(f"      saved {saved}{origin}")
    return EXIT_OK


async def revoke_command(args: argparse.Namespace) -> int:
    store = await open_store(args)
    try:
        revoked = await store.rules.revoke(args.id)
    finally:
        await store.close()
    if args.json:
        print_json({"id": args.id, "revoked": revoked})
    elif revoked:
        print(f"revoked rule {args.id}")
    else:
        error(f"no active rule {args.id}")
    return EXIT_OK if revoked else EXIT_FAILED

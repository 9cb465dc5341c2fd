"""``io-tui whatif RUN STEP``: send one recorded request of a run again with its context changed
and show the answer beside the recorded one (text, proposed tool calls, tokens, cost). Nothing
the answer proposes is executed.

Changes: ``--restore CALL_ID`` (a stubbed, collapsed, dropped or folded result back whole),
``--drop CALL_ID`` (a call and its result out), ``--edit CALL_ID=FILE`` (a result's text
replaced), ``--memory FILE`` (the memory block replaced); ``--preset``/``--model`` send it to
another provider. With none, the request goes again as recorded. ``--repeat N`` sends the
recorded request and the changed one N times each and counts how often the first proposed call
differs from the recorded answer's. Every probe is stored with the run: ``--list`` lists them,
``--show PROBE`` opens one again.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

from io_tui.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    add_store_option,
    open_store,
    print_json,
)
from io_tui.cli.run import provider_from, settings_from
from io_tui.core import (
    Answer,
    Batch,
    Probe,
    ProbeError,
    ProbeRow,
    Provider,
    Store,
    Variant,
    baseline,
    reopen_probe,
    run_provider,
    send_batch,
    send_probe,
)

GAP = " │ "


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "whatif", help="send a recorded request again with its context changed; never executed"
    )
    parser.add_argument("run", type=int, help="run id")
    parser.add_argument("step", type=int, nargs="?", help="the step whose request is sent")
    parser.add_argument("--restore", action="append", default=[], metavar="CALL_ID",
                        help="put a call's result back whole (stubbed, collapsed, dropped)")  # fmt: skip
    parser.add_argument("--drop", action="append", default=[], metavar="CALL_ID",
                        help="take a call and its result out")  # fmt: skip
    parser.add_argument("--edit", action="append", default=[], metavar="CALL_ID=FILE",
                        help="replace a call's result with FILE's text (- for stdin)")  # fmt: skip
    parser.add_argument("--memory", metavar="FILE", help="replace the memory block with FILE's")
    parser.add_argument("--preset", help="send it to another provider preset")
    parser.add_argument("--model", help="send it to another model")
    parser.add_argument("--base-url", help="the other provider's base URL")
    parser.add_argument("--repeat", type=int, metavar="N",
                        help="a batch: each variant N times, first-call differences counted")  # fmt: skip
    parser.add_argument("--list", action="store_true", help="the run's stored probes")
    parser.add_argument("--show", type=int, metavar="PROBE", help="open a stored probe again")
    parser.add_argument("--json", action="store_true")
    add_store_option(parser)
    parser.set_defaults(handler=whatif_command)


def variant_from(args: argparse.Namespace) -> Variant:
    edits: dict[str, str] = {}
    for item in args.edit:
        call_id, sep, name = item.partition("=")
        if not sep or not call_id or not name:
            raise UsageError(f"--edit takes CALL_ID=FILE, not {item!r}")
        edits[call_id] = _read(name)
    memory = _read(args.memory) if args.memory else None
    return Variant("what if", tuple(args.restore), tuple(args.drop), edits, memory)


def _read(name: str) -> str:
    if name == "-":
        return sys.stdin.read()
    try:
        return Path(name).read_text()
    except OSError as exc:
        raise UsageError(f"{name}: {exc.strerror or exc}") from None


async def whatif_command(args: argparse.Namespace) -> int:
    store = await open_store(args)
    try:
        if args.list:
            return await _list(store, args)
        if args.show is not None:
            return await _show(store, args)
        if args.step is None:
            raise UsageError("name the step whose request is sent: io-tui whatif RUN STEP")
        variant = variant_from(args)
        try:
            base = await baseline(store, args.run, args.step)
            provider = await _provider(store, args)
        except ProbeError as exc:
            return _failed(args, str(exc))
        try:
            if args.repeat is not None:
                batch = await send_batch(store, base, [variant], provider, args.repeat,
                                         on_probe=None if args.json else _tick)  # fmt: skip
                _say_batch(args, batch, provider)
                return EXIT_OK
            if variant.empty:
                variant = Variant("as recorded")
            probe = await send_probe(store, base, variant, provider)
        except ProbeError as exc:
            return _failed(args, str(exc))
        finally:
            await provider.aclose()
    finally:
        await store.close()
    if args.json:
        print_json({"probe": probe.to_json(), "recorded": base.answer.to_json(),
                    "changes": probe.changes, "tools": base.tools_note})  # fmt: skip
    else:
        print(_head(args.run, args.step, probe.row, base.tools_note))
        print(side_by_side(base.answer, probe))
    return EXIT_OK if probe.answer.error is None else EXIT_FAILED


async def _provider(store: Store, args: argparse.Namespace) -> Provider:
    if args.preset is None and args.model is None and args.base_url is None:
        return await run_provider(store, args.run)
    args.provider = args.preset
    return provider_from(settings_from(args))


def _tick(probe: Probe) -> None:
    sys.stderr.write(f"probe {probe.row.id} ({probe.variant.name}): {_first(probe.answer)}\n")


def _first(answer: Answer) -> str:
    if answer.error:
        return f"failed: {answer.error}"
    return answer.first_call or "no tool call"


def _say_batch(args: argparse.Namespace, batch: Batch, provider: Provider) -> None:
    if args.json:
        print_json(batch.to_json())
        return
    print(
        f"batch {batch.id}: run {args.run} step {args.step} sent to {provider.name}"
        f" {provider.model}; nothing was executed"
    )
    print(f"recorded first call: {batch.recorded.first_call or 'no tool call'}")
    for tally in batch.tallies:
        n = tally.answers or 1
        print(
            f"  {tally.variant}: {tally.answers} answers"
            + (f", {tally.errors} failed" if tally.errors else "")
            + f"; first tool differs in {tally.other_tool}/{tally.answers}"
            f" ({tally.other_tool / n:.0%}), first call (tool or arguments) in"
            f" {tally.other_call}/{tally.answers} ({tally.other_call / n:.0%})"
        )
        for call, count in tally.first_calls.most_common(5):
            print(f"      {count}× {call}")


def _head(run: int, step: int, row: ProbeRow, tools: str) -> str:
    changes = [c for c in row.changes if "op" in c]
    said = "; ".join(_change(c) for c in changes) or "nothing changed: the request as recorded"
    return (
        f"what if, run {run} step {step} (probe {row.id}, request {row.request_id}), sent to"
        f" {row.provider.get('preset') or row.provider.get('kind')} {row.model} with {tools};"
        f" nothing was executed\nchanges: {said}"
    )


def _change(change: dict[str, Any]) -> str:
    op = change["op"]
    if op == "memory":
        return f"memory block replaced ({change['chars']:,} chars; was {change['was']})"
    verb = {"restore": "restored", "edit": "edited", "drop": "dropped"}[op]
    now = "" if op == "drop" else f", now {change.get('chars', 0):,} chars"
    return f"{verb} {change['call_id']} (was {change.get('was')}{now})"


def side_by_side(recorded: Answer, probe: Probe, width: int | None = None) -> str:
    """The recorded answer and the probe's, in two columns (one under the other when narrow)."""
    width = width or shutil.get_terminal_size((120, 24)).columns
    left = ["recorded", *_answer_lines(recorded, recorded_cost=None)]
    right = [f"what if (probe {probe.row.id})", *_answer_lines(probe.answer, probe.cost)]
    column = (width - len(GAP)) // 2
    if column < 30:
        return "\n".join([*left, "", *right])
    lines = []
    wrapped_left = _wrap(left, column)
    wrapped_right = _wrap(right, column)
    for i in range(max(len(wrapped_left), len(wrapped_right))):
        a = wrapped_left[i] if i < len(wrapped_left) else ""
        b = wrapped_right[i] if i < len(wrapped_right) else ""
        lines.append(f"{a:<{column}}{GAP}{b}".rstrip())
    return "\n".join(lines)


def _wrap(lines: list[str], width: int) -> list[str]:
    out: list[str] = []
    for line in lines:
        out += textwrap.wrap(line, width, replace_whitespace=False) or [""]
    return out


def _answer_lines(answer: Answer, recorded_cost: dict[str, float] | None) -> list[str]:
    lines = ["─" * 8]
    if answer.error:
        lines.append(f"failed: {answer.error}")
    lines += answer.text.strip().splitlines() or ["(no text)"]
    for call in answer.tool_calls:
        lines.append(f"→ {call.name} {json.dumps(call.arguments)}")
    if not answer.tool_calls:
        lines.append("→ no tool call")
    usage = answer.usage or {}
    if usage:
        cached = usage.get("cache_read_tokens", 0)
        lines.append(
            f"tokens: {usage.get('prompt_tokens', 0):,} in"
            + (f" ({cached:,} cached)" if cached else "")
            + f" · {usage.get('completion_tokens', 0):,} out"
        )
    if recorded_cost:
        lines.append(f"cost: ~{recorded_cost['prompt_equivalent']:,.0f} prompt-token equivalents")
    return lines


async def _list(store: Store, args: argparse.Namespace) -> int:
    rows = await store.probes.for_run(args.run, args.step)
    if args.json:
        print_json([r.to_json() for r in rows])
        return EXIT_OK
    if not rows:
        print(f"run {args.run} has no probes")
    for row in rows:
        answer = row.answer or {}
        calls = answer.get("tool_calls") or []
        first = f"{calls[0]['name']}" if calls else "no tool call"
        tokens = (row.usage or {}).get("prompt_tokens")
        print(
            f"#{row.id:<4} step {row.step:>3}  {row.variant:<12} {row.model:<20} → {first}"
            + (f"  ({tokens:,} tok)" if tokens else "")
            + (f"  batch {row.batch}" if row.batch else "")
            + (f"  failed: {row.error}" if row.error else "")
        )
    return EXIT_OK


async def _show(store: Store, args: argparse.Namespace) -> int:
    try:
        probe, base = await reopen_probe(store, args.show)
    except ProbeError as exc:
        return _failed(args, str(exc))
    if probe.row.run_id != args.run:
        return _failed(args, f"probe {args.show} is run {probe.row.run_id}'s, not run {args.run}'s")
    if args.json:
        print_json({"probe": probe.row.to_json(messages=True), "recorded": base.answer.to_json()})
        return EXIT_OK
    print(_head(probe.row.run_id, probe.row.step, probe.row, "the tools it recorded"))
    print(side_by_side(base.answer, probe))
    return EXIT_OK


def _failed(args: argparse.Namespace, error: str) -> int:
    if args.json:
        print_json({"run_id": args.run, "error": error})
    else:
        print(f"io-tui: {error}")
    return EXIT_FAILED

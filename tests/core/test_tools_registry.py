"""The registry: the built-in set, lookup errors the model can act on, and specs for providers."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from io_tui.core.derived.skills import ReadSkill
from io_tui.core.ledger import ObsKind
from io_tui.core.run.harness import harness_registry
from io_tui.core.tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolOutcome
from io_tui.core.tools.registry import ToolRegistry, default_registry

BUILTINS = ("read_file", "write_file", "edit_file", "list_dir", "find", "grep", "run_command")


class EchoArgs(ToolArgs):
    text: str


class Echo(Tool):
    name: ClassVar[str] = "echo"
    description: ClassVar[str] = "Echo text back."
    Args = EchoArgs

    async def run(self, args: Any, ctx: ToolContext) -> ToolOutcome:
        return ToolOutcome(args.text, ObsKind.MESSAGE, "echo")


def test_default_registry_holds_the_builtins_in_order() -> None:
    registry = default_registry()
    assert registry.names() == BUILTINS
    assert [spec.name for spec in registry.specs()] == list(BUILTINS)
    assert len(registry) == len(BUILTINS)


def test_the_tools_that_only_read_are_the_reads_and_change_no_file() -> None:
    """A tool that only reads has its intent written with its result (``store/intents.py``):
    every read the harness offers says so, and none of them may change a file."""
    tools = [*harness_registry(), ReadSkill({})]  # what a run offers (read_skill per run)
    reads = {tool.name for tool in tools if tool.only_reads}
    assert reads == {"read_file", "list_dir", "grep", "find", "recall_result", "read_skill"}
    assert not any(tool.changes_files for tool in tools if tool.only_reads)


def test_default_registries_are_independent() -> None:
    one = default_registry()
    one.register(Echo())
    assert "echo" in one
    assert "echo" not in default_registry()


def test_specs_are_json_schemas_with_descriptions() -> None:
    specs = {spec.name: spec for spec in default_registry().specs()}
    read = specs["read_file"].parameters
    assert read["type"] == "object"
    assert read["required"] == ["path"]
    assert read["additionalProperties"] is False
    for spec in specs.values():
        assert spec.description
        for name, prop in spec.parameters.get("properties", {}).items():
            assert prop.get("description"), f"{spec.name}.{name} has no description"
            assert "title" not in prop
    assert specs["run_command"].parameters["properties"]["argv"]["type"] == "array"


def test_get_unknown_lists_the_known_names() -> None:
    registry = default_registry()
    with pytest.raises(ToolError) as info:
        registry.get("delete_everything")
    message = str(info.value)
    assert "unknown tool 'delete_everything'" in message
    assert all(name in message for name in BUILTINS)


def test_register_adds_and_refuses_duplicates() -> None:
    registry = ToolRegistry()
    echo = Echo()
    registry.register(echo)
    assert registry.get("echo") is echo
    with pytest.raises(ValueError, match="already registered"):
        registry.register(Echo())
    other = Echo()
    registry.register(other, replace=True)
    assert registry.get("echo") is other
    assert list(registry) == [other]

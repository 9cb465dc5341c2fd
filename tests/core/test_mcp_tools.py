"""A remote tool as an io-tui tool: model-safe names, schemas, argument checks, rendered results."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest
from mcp_types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from io_tui.core.authority.policy import Act
from io_tui.core.boundary.workspace import Workspace
from io_tui.core.ledger import ObsKind
from io_tui.core.mcp.tools import McpTool, exposed_name, model_schema, render_result
from io_tui.core.tools.base import ToolContext, ToolError

SAFE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class FakeServer:
    name = "fake"

    def __init__(self, result: CallToolResult) -> None:
        self.result = result
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call(
        self, tool: str, arguments: dict[str, Any], progress: Any = None, sampler: Any = None
    ) -> CallToolResult:
        self.calls.append((tool, arguments))
        return self.result


def bare_context(tmp_path: Path) -> ToolContext:
    """A call's context with nothing but a workspace: no events, no sampling."""
    return ToolContext(Workspace(tmp_path), run_id=1, step=1, cap_chars=10_000)


def text_result(*texts: str, **extra: Any) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=t) for t in texts], **extra)


@pytest.mark.parametrize(
    ("server", "tool", "expected"),
    [
        ("time", "get_current_time", "mcp__time__get_current_time"),
        ("my server", "tiny.image", "mcp__my_server__tiny_image"),
        ("a__b", "c", "mcp__a_b__c"),
        ("ünï", "çödé/x", "mcp__n__d_x"),
        ("", "...", "mcp__x__x"),
    ],
)
def test_names_are_model_safe(server: str, tool: str, expected: str) -> None:
    assert exposed_name(server, tool) == expected


def test_long_and_colliding_names_stay_unique_safe_and_stable() -> None:
    long = exposed_name("a-very-long-server-name-indeed", "and_an_even_longer_tool_name_" * 3)
    assert SAFE.match(long) and len(long) == 64
    assert long == exposed_name(
        "a-very-long-server-name-indeed", "and_an_even_longer_tool_name_" * 3
    )
    first = exposed_name("s", "a.b")
    second = exposed_name("s", "a_b", taken={first})
    assert first == "mcp__s__a_b" and second != first and SAFE.match(second)


def test_schema_is_offered_as_an_object_without_noise() -> None:
    schema = model_schema(
        {"$schema": "http://json-schema.org/draft-07/schema#", "title": "T", "type": "object"}
    )
    assert schema == {"type": "object", "properties": {}}
    assert model_schema(None) == {"type": "object", "properties": {}}


async def test_tool_spec_gate_and_run(tmp_path: Path) -> None:
    server = FakeServer(text_result("12:00"))
    schema = {
        "type": "object",
        "properties": {"timezone": {"type": "string"}},
        "required": ["timezone"],
    }
    tool = McpTool.make(server, "get time", "Current time.", schema, "mcp__fake__get_time")
    spec = tool.spec()
    assert spec.name == "mcp__fake__get_time" and spec.parameters["required"] == ["timezone"]
    assert "Current time." in spec.description and "fake" in spec.description
    args = tool.parse({"timezone": "UTC", "b": [2, 1]})
    gate = await tool.gate(args, bare_context(tmp_path))
    assert (gate.act, gate.target) == (Act.EXEC, "mcp__fake__get_time")
    assert gate.content == json.dumps({"b": [2, 1], "timezone": "UTC"}, sort_keys=True)
    outcome = await tool.run(args, bare_context(tmp_path))
    assert server.calls == [("get time", {"timezone": "UTC", "b": [2, 1]})]
    assert (outcome.text, outcome.kind, outcome.target, outcome.is_error) == (
        "12:00",
        ObsKind.MCP,
        "mcp__fake__get_time",
        False,
    )


def test_arguments_failing_the_schema_are_refused_before_calling() -> None:
    server = FakeServer(text_result("never"))
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "mode": {"enum": ["x", "y"]}},
        "required": ["a"],
        "additionalProperties": False,
    }
    tool = McpTool.make(server, "t", None, schema, "mcp__fake__t")
    with pytest.raises(ToolError) as caught:
        tool.parse({"a": "one", "mode": "z", "extra": 1})
    message = str(caught.value)
    assert "nothing was sent to the server" in message
    assert "a: 'one' is not of type 'integer'" in message
    assert "mode: 'z' is not one of ['x', 'y']" in message
    assert "'extra' was unexpected" in message
    with pytest.raises(ToolError, match="'a' is a required property"):
        tool.parse({})
    assert server.calls == []


def test_an_invalid_server_schema_leaves_judgement_to_the_server() -> None:
    tool = McpTool.make(
        FakeServer(text_result()), "t", None, {"type": "object", "properties": 3}, "mcp__f__t"
    )
    assert tool.parse({"anything": 1}).arguments == {"anything": 1}


def test_texts_are_joined_and_structured_content_is_not_repeated() -> None:
    assert render_result(text_result("one", "two")) == "one\ntwo"
    data = {"temperature": 21, "sky": "clear"}
    assert render_result(text_result(json.dumps(data), structured_content=data)) == json.dumps(data)
    wrapped = render_result(text_result("echo: hi", structured_content={"result": "echo: hi"}))
    assert wrapped == "echo: hi"
    # server-filesystem's read_text_file: the file as text and as {"content": text}
    file = "a\nb\n" * 1000
    assert render_result(text_result(file, structured_content={"content": file})) == file
    two = render_result(text_result("a", "b", structured_content={"content": "a\nb"}))
    assert two == "a\nb"
    only = render_result(CallToolResult(content=[], structured_content=data))
    assert json.loads(only) == data
    both = render_result(text_result("Weather follows.", structured_content=data))
    assert both.startswith("Weather follows.\n") and json.loads(both.split("\n", 1)[1]) == data


def test_binary_content_is_summarized_by_type_and_size() -> None:
    png = base64.b64encode(b"\x89PNG" + b"\0" * 96).decode()
    result = CallToolResult(
        content=[
            ImageContent(type="image", data=png, mime_type="image/png"),
            AudioContent(
                type="audio", data=base64.b64encode(b"x" * 2048).decode(), mime_type="audio/wav"
            ),
            EmbeddedResource(
                type="resource",
                resource=BlobResourceContents(
                    uri="file:///a.gz", mime_type="application/gzip", blob=png
                ),
            ),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(
                    uri="demo://r/1", mime_type="text/plain", text="hello"
                ),
            ),
            ResourceLink(
                type="resource_link",
                name="Doc",
                uri="demo://doc",
                mime_type="text/markdown",
                size=1234,
            ),
        ]
    )
    lines = render_result(result).splitlines()
    assert lines == [
        "[image image/png, 100 bytes]",
        "[audio audio/wav, 2,048 bytes]",
        "[resource file:///a.gz application/gzip, 100 bytes]",
        "[resource demo://r/1 text/plain, 5 chars]",
        "hello",
        "[resource link demo://doc text/markdown, 1,234 bytes: Doc]",
    ]
    assert png not in render_result(result)


async def test_error_results_become_error_observations(tmp_path: Path) -> None:
    tool = McpTool.make(
        FakeServer(text_result("Invalid timezone 'Mars/Base'", is_error=True)),
        "get",
        None,
        {},
        "mcp__f__get",
    )
    outcome = await tool.run(tool.parse({}), bare_context(tmp_path))
    assert outcome.is_error and outcome.kind is ObsKind.MCP
    assert outcome.text == "Invalid timezone 'Mars/Base'"
    empty = render_result(CallToolResult(content=[], is_error=True))
    assert "error" in empty

"""What counts as a test run among a run's commands: the progress ledger's evidence and the
daily log's "tests" line use the one rule."""

from __future__ import annotations

import re

TEST_COMMAND = re.compile(
    r"(^|[\s/])(pytest|py\.test|tox|nox|jest|vitest|mocha|rspec|phpunit|ctest|unittest)(\s|$)"
    r"|\b(npm|yarn|pnpm|bun)\s+(run\s+)?test\b"
    r"|\b(go|cargo|dotnet|mvn|gradle|mix|deno|zig)\s+test\b"
    r"|\bmake\s+(test|check)\b"
)


def is_test_command(line: str) -> bool:
    """Whether a command line (as the shell would read it) runs a test suite."""
    return TEST_COMMAND.search(line) is not None

"""What a command line does, as far as its words say: a test run (the progress ledger's
evidence and the daily log's "tests" line use the one rule), or a print of files' own lines
(whose output the context engine keeps as long as it keeps reads)."""

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


# a viewer, a search or a diff anywhere in the line (a pipeline's stage, inside ``bash -c '…'``)
FILE_LINES_COMMAND = re.compile(
    r"(^|[\s/|;&('\"])(cat|nl|sed|head|tail|grep|egrep|fgrep|rg|ag|ack|awk|less|more|diff|bat)"
    r"(\s|$)"
    r"|\bgit\s+(show|diff|log\s+-p|blame|grep)\b"
)


def shows_file_lines(line: str) -> bool:
    """Whether a command line may print files' own lines (``cat``, ``nl``, ``sed -n``, ``grep``,
    ``git diff``, …): what an agent reads code with, and quotes when it edits."""
    return FILE_LINES_COMMAND.search(line) is not None

"""Canary: every private name of Textual's that io-tui relies on is still there.

The UI reaches past Textual's public API in six files, each time for a reason its comment gives
(a repaint Textual does for the whole tree, a notification it cannot withdraw, a stream it does
not let a driver replace). Textual may rename a private name in any release, so the dependency
is pinned to the minor version these were checked against (``textual>=8.2,<8.3`` in
pyproject.toml), and this test fails first when one goes: raising the pin starts here.
"""

from __future__ import annotations

import inspect

import pytest
from textual.app import App
from textual.drivers.linux_driver import LinuxDriver
from textual.widget import Widget
from textual.widgets import DataTable, Footer, Tree

# (where io-tui uses it, owner, name)
ATTRIBUTES = [
    ("ui/app.py", "app", "_notifications"),
    ("ui/app.py", "app", "_unnotify"),
    ("ui/widgets/run_tree.py", "tree", "_tree_lines"),
    ("ui/widgets/run_tree.py", "tree", "_render_line"),
    ("ui/widgets/run_tree.py", "tree", "_refresh_line"),
    ("ui/widgets/run_tree.py", "node", "_id"),
    ("ui/widgets/run_tree.py", "node", "_hover"),
    ("ui/widgets/run_tree.py", "node", "_selected"),
    ("ui/widgets/run_tree.py", "node", "_updates"),
    ("ui/widgets/run_tree.py", "node", "_label"),
    ("ui/widgets/run_tree.py", "node", "_line"),
    ("ui/widgets/footer.py", "footer", "_bindings_ready"),
    ("ui/widgets/footer.py", "footer_module", "FooterKey"),
    ("ui/widgets/scrollbars.py", "widget", "_refresh_scrollbars"),
    ("ui/widgets/scrollbars.py", "widget", "_scroll_update"),
    ("ui/widgets/table.py", "table", "_on_idle"),
    ("ui/widgets/table.py", "table", "_require_update_dimensions"),
    ("ui/widgets/table.py", "table", "_updated_cells"),
]
# names set or read inside a method rather than at construction: the method's source must hold them
SET_IN = [
    ("ui/widgets/run_tree.py", [(Tree.render_lines, "self._pseudo_class_state =")]),
    (
        "ui/widgets/footer.py",
        [
            (Footer.compose, "data_bind(compact=Footer.compact)"),
            (Footer.compose, 'classes="-command-palette"'),  # the one key left unbound
        ],
    ),
    (
        "ui/driver.py",
        [
            (LinuxDriver.__init__, "self._file ="),
            (LinuxDriver.start_application_mode, "WriterThread(self._file)"),
        ],
    ),
]


def owners() -> dict[str, object]:
    from textual.widgets import _footer

    tree: Tree[None] = Tree("root")
    return {
        "footer": Footer(),
        "footer_module": _footer,
        "app": App(),
        "tree": tree,
        "node": tree.root,
        "widget": Widget(),
        "table": DataTable(),
    }


@pytest.mark.parametrize(("where", "owner", "name"), ATTRIBUTES)
def test_textual_still_has_the_private_attribute(where: str, owner: str, name: str) -> None:
    assert hasattr(owners()[owner], name), f"{where} relies on {owner}.{name}"


@pytest.mark.parametrize(("where", "sources"), SET_IN)
def test_textual_still_sets_the_private_attribute(
    where: str, sources: list[tuple[object, str]]
) -> None:
    for method, text in sources:
        assert text in inspect.getsource(method), f"{where} relies on {text!r} in {method}"


def test_the_canary_covers_every_private_name_the_ui_uses() -> None:
    """Twenty-one names in six files: a new one joins the lists above, with its reason."""
    files = {where for where, *_ in ATTRIBUTES + SET_IN}
    assert len(ATTRIBUTES) + len(SET_IN) == 21
    assert files == {
        "ui/app.py",
        "ui/driver.py",
        "ui/widgets/footer.py",
        "ui/widgets/run_tree.py",
        "ui/widgets/scrollbars.py",
        "ui/widgets/table.py",
    }

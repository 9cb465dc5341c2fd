from io_tui.cli import entry

entry()

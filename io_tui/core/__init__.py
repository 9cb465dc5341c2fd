"""The harness: runs agent tasks headless. Never imports textual, rich or io_tui.ui."""

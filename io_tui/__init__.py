"""io-tui: a terminal cockpit for coding-agent runs."""

__version__ = "0.1.0"

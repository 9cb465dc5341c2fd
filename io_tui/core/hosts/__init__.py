"""What drives runs: the processes that own a run loop and answer for it.

``process/`` is the harness process the TUI starts (``python -m io_tui.core.hosts.process``):
the app's runs, driven over JSON lines on a pipe. ``queue_worker.py`` is ``io-tui worker``: it
claims queued runs from the store, heartbeats their leases and drives them. Both sit above the
run package and the steering functions, and nothing in the core imports them.
"""

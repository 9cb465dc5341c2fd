"""The harness in its own process: the app's runs, driven over JSON lines on stdin and stdout.

``python -m io_tui.core.hosts.process --store PATH`` runs the runs the app asks for against the same
store, streams their events back, forwards their approval asks and takes the answers. The app
keeps the screen (one core), the harness keeps the runs (the other); neither waits for the other's
frames or SQLite commits. ``protocol`` holds the messages; ``server`` the process; ``client``
the app's end of the pipe (no Textual: the UI's ``ProcessHost`` listens to it).
"""

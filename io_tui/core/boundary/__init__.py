"""Where the core meets the machine: the workspace's files and commands, and what crosses back.

``workspace.py`` contains every path in the workspace and runs its commands, ``sandbox.py`` is
the bubblewrap sandbox an approved command runs in, ``untrusted.py`` frames what comes back
(files, command output, servers) as data with secrets cut out, ``safe_text.py`` makes such text
safe for a terminal, and ``notice.py`` rings the terminal when a run asks. Nothing here knows
about runs: the tools, the hooks and the run loop call in.
"""

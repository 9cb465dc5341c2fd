"""What an operator does to stored runs from outside any run loop.

Decide a pending approval and resume its run (``decisions.py``), cancel a paused run
(``cancel.py``), remember a rule from an approval (``remember.py``), check a rewritten action
(``rewrite.py``), read the audit of past decisions (``audit.py``), move notes between the store
and ``MEMORY.md`` (``memory_sync.py``), read a run's trace (``trace.py``) and an entry's
lifecycle across its requests (``lifecycle.py``). Each works on the store alone, so the CLI, the
TUI and ACP share them.
"""

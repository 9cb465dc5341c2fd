"""The progress ledger of a run (DESIGN §3.8): what a fresh run needs to pick the work up,
kept by the harness from runtime state.

``model.py`` holds the ledger as data (JSON, digest, handles), ``fold.py`` folds it from a run's
events, ``render.py`` writes it as text, ``keeper.py`` keeps a live run's (a revision in the
store each time what it says changes) and reads any run's back; ``continuation`` is what a run
started with ``io-tui run --continue RUN`` carries in its first request.
"""

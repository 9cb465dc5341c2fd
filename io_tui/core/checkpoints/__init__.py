"""Checkpoints of a run's whole workspace, and rewinding to them.

Before each step that may change files, and after its calls, a run snapshots its workspace into
a shadow git object store kept outside it (``shadow``: the ``git`` binary with its own
``GIT_DIR`` and index; the workspace's own ``.git`` is never touched, and the workspace need not
be a repository). ``taking`` is the run's side, ``rewind`` the operator's: a plan (what changes,
what someone else changed since the run's last checkpoint), then the restore, itself
checkpointed so it can be undone. ``pruning`` keeps the stores bounded by a documented policy.
"""

"""Who may do what: the deny-first policy (``policy.py``) and approvals (``approvals.py``:
requests, the five decisions, the ``Approver`` protocol). Leaves: they import nothing else of
the core, so every layer above can ask them.
"""

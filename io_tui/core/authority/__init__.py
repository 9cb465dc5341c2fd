"""Who may do what: the deny-first policy (``policy.py``, over the acts and effects of
``acts.py``), approvals (``approvals.py``:
requests, the five decisions, the ``Approver`` protocol) and the reviewer model a policy may
name, with what it says on an ask (``review.py``). Leaves: they import nothing else of the
core, so every layer above can ask them.
"""

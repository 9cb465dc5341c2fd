"""A reviewer model in the approver's chair: for runs nobody is watching, each ask the policy
leaves to a human goes first to a second model, which approves, denies or escalates it to the
human (DESIGN §3.4).

``material.py`` gathers what it is shown (the goal, the request as a diff or an argv, the run's
recent steps), ``guards.py`` holds plainly risky asks for the human before the model is asked,
``prompt.py`` frames the ask as untrusted data, ``verdict.py`` reads the answer, and
``reviewer.py`` asks the model and fails closed. The run consults it in ``run/reviewed.py``.
"""

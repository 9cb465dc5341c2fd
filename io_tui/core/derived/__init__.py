"""The parts of a request derived from the workspace: each built with what it depends on.

``instructions.py`` loads AGENTS.md and CLAUDE.md, ``skills.py`` the skill catalogue, and
``parts.py`` records each part's dependencies and versions so a request can say when one moved
(DESIGN §3.2, derived context that invalidates).
"""

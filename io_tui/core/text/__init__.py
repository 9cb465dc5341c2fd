"""The text forms the core writes and reads back, each defined once.

``heads.py`` holds the head lines of the messages a request carries (and the readers that take
them apart), ``numbered.py`` the read tool's numbered lines, ``endings.py`` how a run's outcome
is worded and marked everywhere it is shown, and ``prefix.py`` how many leading items two
sequences share (the cached prefix of two requests). Leaves: they import nothing of the core
but its events.
"""

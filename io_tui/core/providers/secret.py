"""An API key that cannot leak by accident: its repr and str are a mask, never the value.

Keys reach a provider from the environment or an argument and must never appear in a
``describe()``, a repr, an error message or a log line. Holding them in this wrapper makes the
only way to the value an explicit ``reveal()`` at the one place that builds request headers.
"""

from __future__ import annotations

MASK = "***"


class Secret:
    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def redact(self, text: str) -> str:
        """``text`` with every occurrence of the key replaced by the mask.

        Servers sometimes echo (part of) a rejected key in their error body; whatever we raise
        passes through here first.
        """
        if len(self._value) < 4:  # too short to search for without mangling ordinary text
            return text
        return text.replace(self._value, MASK)

    def __repr__(self) -> str:
        return f"Secret({MASK!r})"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> str | tuple[object, ...]:
        raise TypeError("a Secret is not picklable; pass the key again where it is needed")

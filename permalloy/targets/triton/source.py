"""
A Python source under construction: indented lines, fresh names, helpers used.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Value:
    """A value in generated code: its text (a name or an expression), its Triton
    dtype, and the tile axes it varies along (`x`: rows, `r`: inner)."""

    text: str
    dtype: str
    deps: frozenset[str] = frozenset()


@dataclass
class SourceWriter:
    """Lines of Python with the current indentation, and the helpers they call."""

    lines: list[str] = field(default_factory=list)
    depth: int = 0
    helpers: set[str] = field(default_factory=set)
    counter: int = 0

    def line(self, text: str = "") -> None:
        self.lines.append(("    " * self.depth + text) if text else "")

    def comment(self, text: str) -> None:
        for piece in text.splitlines():
            self.line(f"# {piece}".rstrip())

    def fresh(self, stem: str = "t") -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    def assign(self, text: str, dtype: str, deps: frozenset[str], stem: str = "t") -> Value:
        """Bind `text` to a fresh name and return it as a value."""
        name = self.fresh(stem)
        self.line(f"{name} = {text}")
        return Value(name, dtype, deps)

    @contextmanager
    def indented(self) -> Iterator[None]:
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

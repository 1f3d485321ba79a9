"""
The progress display on stderr: which case, which backend, what is happening and
for how long. On a terminal one status line is rewritten in place as the phases run and
tick; otherwise each phase prints one line when it starts. Disabled, it prints
nothing.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import TextIO


class Progress:
    """Reports the phases of a benchmark run to a stream."""

    TICK_S = 0.25

    def __init__(self, stream: TextIO | None, total_cases: int) -> None:
        self._stream = stream
        self._total = total_cases
        self._start = time.perf_counter()
        self._live = bool(stream is not None and _is_terminal(stream))

    @property
    def enabled(self) -> bool:
        return self._stream is not None

    def note(self, text: str) -> None:
        """One line of information, such as the measured copy bandwidth."""
        if self._stream is not None:
            self._stream.write(f"{self._clear()}[{self._elapsed():7.1f}s] {text}\n")
            self._stream.flush()

    def finish(self) -> None:
        """Clear the status line, once the run is over."""
        if self._stream is not None and self._live:
            self._stream.write(self._clear())
            self._stream.flush()

    @contextlib.contextmanager
    def phase(self, index: int, case: str, backend: str | None, what: str) -> Iterator[None]:
        """Show `what` is being done to case number `index` (under `backend`, if any)."""
        if self._stream is None:
            yield
            return
        subject = case if backend is None else f"{case} / {backend}"
        label = f"[{index + 1}/{self._total}] {subject}: {what}"
        if not self._live:
            self.note(label)
            yield
            return
        with self._ticker(label):
            yield

    @contextlib.contextmanager
    def _ticker(self, label: str) -> Iterator[None]:
        """Rewrite `label` with the phase's elapsed time until the block ends."""
        stop = threading.Event()
        started = time.perf_counter()

        def draw() -> None:
            seconds = time.perf_counter() - started
            self._stream.write(f"{self._clear()}[{self._elapsed():7.1f}s] {label} {seconds:5.1f}s")
            self._stream.flush()

        def tick() -> None:
            while not stop.wait(self.TICK_S):
                draw()

        draw()
        thread = threading.Thread(target=tick, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            draw()

    def _clear(self) -> str:
        """What returns to the start of an emptied status line, on a terminal."""
        return "\r\033[K" if self._live else ""

    def _elapsed(self) -> float:
        return time.perf_counter() - self._start


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False

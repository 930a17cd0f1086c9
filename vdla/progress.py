"""Progress lines of the long commands (``vdla hw synth``, ``vdla sim``, ``vdla compile``,
``vdla rtl``, ``vdla deploy``): on stderr only, so ``--json`` stdout stays one JSON document.

:class:`Heartbeat` is a context manager: :meth:`Heartbeat.say` prints a stage's line at once and
remembers it, :meth:`Heartbeat.stage` only remembers it; while the body runs, a background
thread repeats the current stage with the time elapsed, first after ``first`` seconds and then
every ``every`` seconds, so a command that ends quickly prints nothing more and one that takes
minutes (a synthesis: 3 to 27 minutes) shows it is alive and what it is doing::

    with Heartbeat("vdla hw synth", first=30, every=60) as beat:
        estimate_fmax(config, progress=beat.say)
"""

from __future__ import annotations

import sys
import threading
import time


def elapsed_text(seconds: float) -> str:
    """``75.2`` -> ``1 min 15 s``; under a minute ``42 s``."""
    whole = int(seconds)
    return f"{whole // 60} min {whole % 60} s" if whole >= 60 else f"{whole} s"


class Heartbeat:
    """Stage lines and periodic ``PREFIX: STAGE (T elapsed)`` lines on ``stream`` (stderr)."""

    def __init__(self, prefix: str, *, first: float = 10.0, every: float = 30.0, stream=None):
        self.prefix, self.first, self.every = prefix, first, every
        self.stream = stream
        self.current = "working"
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self._thread = threading.Thread(target=self._beat, name=f"{prefix} progress", daemon=True)

    def _write(self, line: str) -> None:
        stream = self.stream or sys.stderr
        with self._lock:
            try:
                print(line, file=stream, flush=True)
            except (OSError, ValueError):  # stderr closed: progress is not worth failing for
                pass

    def say(self, message: str) -> None:
        """Print ``message`` now (one line) and make it the current stage."""
        self.current = message
        self._write(message)

    def stage(self, message: str) -> None:
        """Make ``message`` the current stage without printing it (the next beat will)."""
        self.current = message

    def _beat(self) -> None:
        wait = self.first
        while not self._stop.wait(wait):
            self._write(f"{self.prefix}: {self.current} ({elapsed_text(time.monotonic() - self._start)} elapsed)")
            wait = self.every

    def __enter__(self) -> "Heartbeat":
        self._start = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

"""The sweep's progress line on stderr: a bar, points done, failed, invalid, rate and ETA.

On a terminal the line redraws in place; otherwise (a log file, CI) a line is printed at most
every :data:`LOG_INTERVAL_S` seconds and at the end.
"""

from __future__ import annotations

import sys
import time

LOG_INTERVAL_S = 10.0
BAR = 24


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


class Progress:
    def __init__(self, total: int, stream=None, enabled: bool = True):
        self.total, self.stream, self.enabled = total, stream or sys.stderr, enabled
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.start = time.perf_counter()
        self.counts = {"ok": 0, "invalid": 0, "failed": 0, "resumed": 0}
        self.last = 0.0
        self.problems: set[str] = set()

    @property
    def done(self) -> int:
        return sum(self.counts.values())

    def add(self, status: str) -> None:
        self.counts[status] += 1
        self.show()

    def line(self) -> str:
        elapsed = time.perf_counter() - self.start
        computed = self.done - self.counts["resumed"]
        rate = computed / elapsed if elapsed > 0 else 0.0
        left = self.total - self.done
        eta = _clock(left / rate) if rate > 0 else "?"
        filled = BAR * self.done // max(self.total, 1)
        c = self.counts
        return (f"sweep [{'#' * filled}{'.' * (BAR - filled)}] {self.done}/{self.total} done "
                f"({c['failed']} failed, {c['invalid']} invalid, {c['resumed']} resumed)  "
                f"{rate:.2f} points/s  ETA {eta}")

    def show(self, final: bool = False) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.tty:
            self.stream.write("\r" + self.line() + ("\n" if final else ""))
            self.stream.flush()
        elif final or now - self.last >= LOG_INTERVAL_S:
            print(self.line(), file=self.stream, flush=True)
            self.last = now

    def note(self, message: str) -> None:
        if not self.enabled:
            return
        if self.tty:
            self.stream.write("\r\x1b[K")
        print(message, file=self.stream, flush=True)

    def problem(self, message: str) -> None:
        """Note ``message`` (an untrusted cache entry, say) once, however many workers report it."""
        if message not in self.problems:
            self.problems.add(message)
            self.note(f"sweep: {message}")

"""Steps a Ctrl-C must not cut in half: Ray's start and its shutdown.

A ``KeyboardInterrupt`` raised inside ``ray.init`` left a half-started Ray (its processes
running on, no shutdown), and one inside ``ray.shutdown`` a half-stopped one (its driver's
threads still running into the interpreter's exit). :func:`held` keeps a SIGINT that arrives
during such a step and delivers it when the step is over, to the handler that was in place
(:mod:`vdla.interrupts`' or Python's own, which raise ``KeyboardInterrupt``).
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager


@contextmanager
def held(second_breaks: bool = False):
    """While the block runs, SIGINT is noted instead of handled; on leaving (however the block
    ends) a noted SIGINT goes to the previous handler, so the interrupt is raised then. Outside
    the main thread, or when SIGINT is ignored or not Python's to handle, nothing changes.
    ``second_breaks``: a second SIGINT goes to the previous handler at once (a way out of a step
    that hangs, such as joining a cluster that does not answer)."""
    previous = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    if not callable(previous):
        yield
        return
    noted: list = []

    def note(signum, frame):
        if noted and second_breaks:
            previous(signum, frame)
        noted.append((signum, frame))

    signal.signal(signal.SIGINT, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if noted:
            previous(*noted[0])

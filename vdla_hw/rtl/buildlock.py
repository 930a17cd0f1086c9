"""One process at a time builds a thing that several may ask for at once (an RTL simulator build,
a synthesis): ``with held(path):`` waits for an exclusive ``fcntl.flock`` on ``path``, created if
absent, and releases it on leaving (or when the process dies). Callers check whether the thing is
already built again after acquiring it, so the second asker uses the first's result."""

from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path


@contextlib.contextmanager
def held(path: str | Path):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)

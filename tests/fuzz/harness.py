"""What every fuzz test asserts about one input: it ends, within a time limit, in a clean error
(a VdlaError: one line for people) or a result, without allocating more than a bound.

``outcome(fn, ...)`` runs ``fn`` under a CPU-time limit (SIGPROF: a hang, which spins, fails the
test with the input that hung; the machine's load does not count, as a wall-clock limit's did)
and tracemalloc (numpy reports its buffers to it), and returns ("ok", value) or ("error",
message); any other exception fails the test, as a traceback of the CLI would.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import tracemalloc

from hypothesis import HealthCheck, settings

from vdla_hw.errors import VdlaError

# Each fuzz test's budget (examples) is sized so the whole folder runs in about a minute on
# 2 busy cores; CI's profile (tests/conftest.py) derandomizes them.
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                      HealthCheck.filter_too_much])
MEMORY_BOUND = 256 << 20


class Hang(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float, cpu: bool = False):
    """Raise Hang after ``seconds`` of wall time, or with ``cpu`` of the process's CPU time (user
    + sys: work that spins, whatever else the machine runs)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum, frame):
        raise Hang(f"no result within {seconds} {'CPU ' if cpu else ''}s")

    sig, timer = (signal.SIGPROF, signal.ITIMER_PROF) if cpu else (signal.SIGALRM, signal.ITIMER_REAL)
    previous = signal.signal(sig, expire)
    signal.setitimer(timer, seconds)
    try:
        yield
    finally:
        signal.setitimer(timer, 0)
        signal.signal(sig, previous)


def outcome(fn, *args, seconds: float = 10.0, memory: int = MEMORY_BOUND, errors=(VdlaError,), **kwargs):
    """("ok", fn(...)) or ("error", one-line message); fails on anything else, a hang or a
    peak allocation above ``memory`` bytes."""
    tracemalloc.start()
    try:
        with time_limit(seconds, cpu=True):
            try:
                value = fn(*args, **kwargs)
                result = ("ok", value)
            except errors as err:
                message = str(err)
                assert message and "\n" not in message, f"error message is not one line: {message!r}"
                result = ("error", message)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= memory, f"{fn.__name__} allocated {peak} bytes at its peak (bound {memory})"
    return result


def one_refusal(code: int, err: str, seconds: float, base_seconds: float, words, limit: float) -> str:
    """The CLI child's refusal (tests/fuzz/test_hostile_files.py, test_bounds.py): exit status 2,
    exactly one ``vdla: error:`` line on stderr and the last one (progress lines such as
    "importing m.onnx" may come before it), no traceback, every one of ``words`` in it, and at
    most ``limit`` seconds beyond the CLI's start-up (``base_seconds``). Returns the line."""
    lines = err.splitlines()
    errors = [line for line in lines if line.startswith("vdla: error: ")]
    assert code == 2 and len(errors) == 1 and lines[-1] == errors[0] and "Traceback" not in err, (code, err)
    assert all(w in errors[0] for w in words), (words, err)
    assert seconds - base_seconds < limit, f"took {seconds:.1f} s (start-up {base_seconds:.1f} s)"
    return errors[0]

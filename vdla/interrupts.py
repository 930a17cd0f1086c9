"""Ctrl-C, the same way for every ``vdla`` command: one line ``vdla: interrupted``, exit status 130.

Python turns SIGINT into a ``KeyboardInterrupt`` raised wherever the main thread happens to be.
:func:`vdla.cli.main` catches it around everything it does (imports included) and calls
:func:`report`. Two places would otherwise lose it or print a traceback:

* a ``KeyboardInterrupt`` raised inside a finaliser (a ``__del__``, a weakref callback, a
  garbage-collection callback, as llvmlite and numpy objects run all the time) is "unraisable":
  Python prints it as ``Exception ignored in ...`` and carries on, so the command went on to
  finish with status 0. :func:`watched` installs a ``sys.unraisablehook`` that records it and
  has it raised again in the main thread a moment later (``_thread.interrupt_main``), silently;
  should that land in a finaliser too, :func:`check` (before outputs are put in place) and
  :func:`vdla.cli.main` (before it returns success) still end the command as interrupted;
* a Ctrl-C while the first is being reported, or during the interpreter's exit (joining
  threads, atexit handlers): when ``main`` is the process's command, SIGINT is ignored once the
  command has ended (:func:`ignore`).

The entry points (``python -m vdla``, the ``vdla`` script) import only the standard library
before :func:`vdla.cli.main` runs, so an interrupt while the packages load is caught too.
"""

from __future__ import annotations

import _thread
import signal
import sys
import threading
from contextlib import contextmanager

EXIT_INTERRUPTED = 128 + signal.SIGINT
RERAISE_DELAY_S = 0.01  # a swallowed interrupt is raised again this long after (outside the finaliser)


class _State:
    lock = threading.Lock()
    active = False   # inside watched(): a lost interrupt may be raised again in the main thread
    lost = False     # an interrupt was swallowed by a finaliser and not raised again yet
    signalled = False  # a SIGINT arrived inside watched() (even if its KeyboardInterrupt was turned
                       # into another error: numpy's C import makes an ImportError of one)


def _raise_again() -> None:
    with _State.lock:
        if _State.active and _State.lost:
            _thread.interrupt_main()  # the main thread raises KeyboardInterrupt at its next instruction


def _unraisable(previous):
    def hook(unraisable) -> None:
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            # Raising it from here would land in this hook (Python code too) and be lost again:
            # another thread raises it a moment later, when the finaliser has returned.
            _State.lost = True
            timer = threading.Timer(RERAISE_DELAY_S, _raise_again)
            timer.daemon = True
            timer.start()
            return
        previous(unraisable)

    return hook


def _on_sigint(signum, frame) -> None:
    _State.signalled = True
    signal.default_int_handler(signum, frame)  # raises KeyboardInterrupt, as without this handler


def signalled() -> bool:
    """Whether a Ctrl-C (SIGINT) arrived while :func:`watched` was active."""
    return _State.signalled


def check() -> None:
    """Raise the interrupt now if one was lost (before a step that must not follow a Ctrl-C,
    such as putting a command's outputs in place)."""
    if _State.lost:
        raise KeyboardInterrupt


@contextmanager
def watched():
    """While the block runs, an interrupt swallowed by a finaliser is raised again in the main
    thread (see the module docstring); ``KeyboardInterrupt`` leaving the block clears it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = sys.unraisablehook
    sys.unraisablehook = _unraisable(previous)
    handler = signal.getsignal(signal.SIGINT)
    if handler is signal.default_int_handler:  # not an ignored SIGINT (a background job)
        signal.signal(signal.SIGINT, _on_sigint)
    _State.active, _State.lost, _State.signalled = True, False, False
    try:
        yield
    except KeyboardInterrupt:
        _State.lost = False
        raise
    finally:
        with _State.lock:
            _State.active = False
        sys.unraisablehook = previous
        if handler is signal.default_int_handler and signal.getsignal(signal.SIGINT) is _on_sigint:
            signal.signal(signal.SIGINT, handler)


def ignore() -> None:
    """Ignore SIGINT from now on (the command has ended; only the interpreter's exit is left)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def report(ignore_more: bool = False) -> int:
    """Say ``vdla: interrupted`` on stderr and return 130 (the temporary files were removed on
    the way out). ``ignore_more``: ignore further Ctrl-C first (this process is ending)."""
    if ignore_more:
        ignore()
    try:
        print("vdla: interrupted", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
    return EXIT_INTERRUPTED

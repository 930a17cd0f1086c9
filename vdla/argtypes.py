"""Argument types and the parser class of every ``vdla`` command (see the contract in vdla/cli.py).

Each type is a callable for ``add_argument(type=...)``: argparse calls it while parsing, before
any command starts work, and turns its ``ArgumentTypeError`` into one line and exit status 2::

    p.add_argument("-o", "--output", type=output_file, required=True)
    p.add_argument("--plots", type=output_dir)
    p.add_argument("--max-cycles", type=int_range(1))
    p.add_argument("--timeout", type=float_range(0.0, low_open=True))
    p.add_argument("--port", type=port)

``output_file``/``output_dir`` check that the path can be written (its folder exists or can be
created, it is not a directory / not a file, the folder is writable; a file is not a device, a
FIFO or read-only, since it is replaced by a rename: ``vdla.outputs``) without leaving anything
behind (whether a folder takes files is tried, ``vdla.outputs.folder_problem``).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path


class ArgumentParser(argparse.ArgumentParser):
    """argparse with one-line errors: ``vdla sim: error: argument --max-cycles: ...``, status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _bad(message: str):
    return argparse.ArgumentTypeError(message)


def int_range(low: int | None = None, high: int | None = None):
    """An integer in [low, high] (either bound may be None)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise _bad(f"{text!r} is not an integer") from None
        if (low is not None and value < low) or (high is not None and value > high):
            raise _bad(f"{value} is outside {_describe(low, high)}")
        return value

    parse.__name__ = "integer"
    parse.bounds = (low, high)
    return parse


def float_range(low: float | None = None, high: float | None = None, *, low_open: bool = False):
    """A finite number in [low, high] (``low_open``: greater than low)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise _bad(f"{text!r} is not a number") from None
        too_low = low is not None and (value <= low if low_open else value < low)
        if not math.isfinite(value) or too_low or (high is not None and value > high):
            raise _bad(f"{text} is outside {_describe(low, high, low_open)}")
        return value

    parse.__name__ = "number"
    parse.bounds = (low, high)
    return parse


def _describe(low, high, low_open: bool = False) -> str:
    if high is None:
        return f"the allowed range (> {low})" if low_open else f"the allowed range (>= {low})"
    if low is None:
        return f"the allowed range (<= {high})"
    return f"the allowed range {'(' if low_open else '['}{low}, {high}]"


port = int_range(0, 65535)
port.__name__ = "port"
seed = int_range(0, 2**32 - 1)
seed.__name__ = "seed"


def host_port(text: str) -> str:
    """``HOST:PORT`` of a server (checked here; the command gets the text back)."""
    host, sep, number = text.rpartition(":")
    if not sep or not host.strip("[]") or not number.isdigit() or not 0 < int(number) < 65536:
        raise _bad(f"{text!r} is not HOST:PORT (e.g. pynq:9091 or 127.0.0.1:9091)")
    return text


def _writable_folder(folder: Path, what: str) -> None:
    """``folder`` exists as a writable directory, or can be created under a writable ancestor."""
    from vdla.outputs import folder_problem

    probe = folder
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        raise _bad(f"cannot write {what}: {probe} is not a directory")
    why = folder_problem(probe)
    if why:
        raise _bad(f"cannot write {what}: {why}")


def output_file(text: str) -> str:
    """A file the command will write (its folder must exist: commands do not create folders for
    files). It is replaced by a rename (``vdla.outputs``), so it must be a regular file or new:
    a device such as /dev/null or a read-only file is refused (``vdla.outputs.file_problem``)."""
    from vdla.outputs import file_problem

    if not text:
        raise _bad("empty file name")
    path = Path(text)
    if not path.parent.is_dir() and not path.is_dir():
        _writable_folder(path.parent, text)  # a file on the way: "... is not a directory"
    why = file_problem(path)
    if why:
        raise _bad(f"cannot write {text}: {why}")
    return text


def output_dir(text: str) -> str:
    """A folder the command will create if needed and write files into."""
    path = Path(text)
    if not text:
        raise _bad("empty folder name")
    if path.exists() and not path.is_dir():
        raise _bad(f"{text} exists and is not a folder")
    _writable_folder(path, text)
    return text


OUTPUT_TYPES = (output_file, output_dir)


def quiet_broken_pipe() -> None:
    """After the reader of stdout went away (``vdla ... | head``): point stdout at /dev/null so
    the interpreter's final flush cannot fail again, and say nothing."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass  # stdout is not a real file (tests capture it); nothing to silence

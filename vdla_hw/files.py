"""Reading and writing files and text that cross a trust boundary, one way for the whole project.

* :func:`atomic_write`: a file appears whole or not at all. The bytes go to a temporary file in
  the same folder, are flushed to disk, and replace ``path`` with one ``os.replace``; an
  interrupted write leaves the old file (or none) and no temporary behind.
* :func:`read_capped`: at most ``max_bytes`` of a file, refusing a larger one (or a device such
  as ``/dev/zero``) before reading it all, so a wrong path cannot exhaust memory.
* :func:`open_checked` / :func:`read_checked`: the one way to open a file a user named (a
  model, its external data, a bundle, an image, an array): opened without blocking and without
  following a final link where links are refused, then, on the descriptor, refused unless it is a
  regular file (a FIFO would hang the read, ``/dev/zero`` never ends), no larger than a limit of
  vdla_hw/limits.py and, when asked, inside a given folder; nothing is read before these checks.
* :func:`json_text`: strict JSON (RFC 8259): a NaN or an infinity, which ``json.dumps`` writes as
  the non-JSON ``NaN``/``Infinity``, becomes ``null`` (a missing quantity).
* :func:`printable`: text from outside (the network, a file) with control characters escaped,
  safe to write to a log or a terminal.
* :func:`json_loads`: JSON from outside with every parse failure (nesting too deep, a number with
  too many digits, bad UTF-8) as one :class:`~vdla_hw.errors.VdlaError` naming where.
"""

from __future__ import annotations

import json
import math
import os
import stat
import tempfile
from pathlib import Path
from typing import Callable

from vdla_hw.errors import FileRefused, VdlaError

MAX_TEXT_BYTES = 16 << 20  # a configuration, sweep space or assembly file: far larger than any real one


def atomic_write(path: str | Path, data: bytes | str | Callable[[object], None], *, mode: int = 0o644) -> Path:
    """Write ``data`` (bytes, text, or a function that writes to a binary file object) to ``path``
    so that readers see the old file or the whole new one, never a part. Returns ``path``."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            if callable(data):
                data(fh)
            else:
                fh.write(data.encode() if isinstance(data, str) else data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def read_capped(path: str | Path, what: str, max_bytes: int = MAX_TEXT_BYTES) -> bytes:
    """The bytes of the regular file ``path``; a :class:`VdlaError` for a missing, unreadable or
    special file (a device, a FIFO) or one larger than ``max_bytes`` (``what`` names it)."""
    path = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once (and is refused below)
        # instead of blocking; it changes nothing for a regular file
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise VdlaError(f"{path}: the {what} is not a regular file")
            if info.st_size > max_bytes:
                raise VdlaError(f"{path}: the {what} has {info.st_size} bytes, more than the {max_bytes}-byte limit")
            data = _read_at_most(fh, max_bytes)
    except FileNotFoundError:
        raise VdlaError(f"{path}: no such {what}") from None
    except IsADirectoryError:
        raise VdlaError(f"{path}: the {what} is a directory, not a file") from None
    except OSError as err:
        raise VdlaError(f"{path}: cannot read the {what} ({err.strerror or err})") from None
    if len(data) > max_bytes:  # grew while being read
        raise VdlaError(f"{path}: the {what} is larger than the {max_bytes}-byte limit")
    return data


_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket"))


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def open_checked(path: str | Path, what: str, max_bytes: int, limit: str, *,
                 inside: str | Path | None = None):
    """An open binary file object of the regular file ``path``, checked before anything is read.

    The file is opened with ``O_NONBLOCK`` (a FIFO with no writer does not hang the open) and
    checked on its descriptor (``fstat``; no window between check and read): a FIFO, a device, a
    directory or a socket is refused, and so is a file of more than ``max_bytes`` bytes
    (``limit`` names the bound, e.g. ``"vdla_hw.limits.MAX_MODEL_BYTES"``). With ``inside``, the
    path (relative paths taken from ``inside``) is resolved, symbolic links included, and must lie
    inside that folder, as ONNX external data must (compiler/frontend/onnx_read.py); the
    resolved path is then opened with ``O_NOFOLLOW``, so a link put in its place later is refused.
    Every refusal is one :class:`~vdla_hw.errors.FileRefused` naming the path and the reason
    (``what`` names the file's role: "model file", "bundle file")."""
    path = Path(path)
    flags = os.O_RDONLY | os.O_NONBLOCK
    target = path
    if inside is not None:
        base = Path(inside).resolve()
        try:
            target = (base / path).resolve()
        except (OSError, ValueError) as err:
            raise FileRefused(str(path), f"the {what} is not a usable path ({err})") from None
        if base not in target.parents:
            raise FileRefused(str(path), f"the {what} points outside the folder {base} (it resolves to {target})")
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(target, flags)
    except FileNotFoundError:
        raise FileRefused(str(path), f"no such {what}") from None
    except (OSError, ValueError) as err:
        raise FileRefused(str(path), f"cannot open the {what} ({getattr(err, 'strerror', None) or err})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(str(path), f"the {what} is {_kind(info.st_mode)}, not a regular file")
        if info.st_size > max_bytes:
            raise FileRefused(str(path), f"the {what} has {info.st_size} bytes, more than the {max_bytes}-byte "
                              f"limit ({limit})")
        os.set_blocking(fd, True)  # a regular file: reads never block, and now they may wait for the disk
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_checked(path: str | Path, what: str, max_bytes: int, limit: str, *,
                 inside: str | Path | None = None) -> bytes:
    """The bytes of ``path`` after :func:`open_checked`'s checks; at most ``max_bytes`` are read
    even if the file grows meanwhile (then refused)."""
    with open_checked(path, what, max_bytes, limit, inside=inside) as fh:
        try:
            data = _read_at_most(fh, max_bytes)
        except OSError as err:
            raise FileRefused(str(path), f"cannot read the {what} ({err.strerror or err})") from None
    if len(data) > max_bytes:
        raise FileRefused(str(path), f"the {what} grew past the {max_bytes}-byte limit ({limit}) while being read")
    return data


def _read_at_most(fh, max_bytes: int) -> bytes:
    """What the open file ``fh`` holds, read up to ``max_bytes + 1`` bytes (one more than the
    limit, so the caller sees a file that grew past it). ``read(n)`` allocates ``n`` bytes
    first, so it asks for the size ``fstat`` gave, then for what a growing file (or a /proc
    file, whose size reads 0) holds beyond it, in 1 MiB steps."""
    chunks = [fh.read(min(os.fstat(fh.fileno()).st_size, max_bytes + 1))]
    total = len(chunks[0])
    while total <= max_bytes and (chunk := fh.read(min(1 << 20, max_bytes + 1 - total))):
        chunks.append(chunk)
        total += len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def json_loads(text: str | bytes, where: str):
    """``json.loads(text)``, with every failure one VdlaError starting with ``where``."""
    try:
        return json.loads(text)
    except RecursionError:
        raise VdlaError(f"{where}: JSON nested too deeply") from None
    except UnicodeDecodeError as err:
        raise VdlaError(f"{where}: not UTF-8 text (byte {err.start})") from None
    except ValueError as err:  # JSONDecodeError, and int('5000 digits') past sys.get_int_max_str_digits()
        raise VdlaError(f"{where}: not valid JSON ({' '.join(str(err).split())[:200]})") from None


def _finite(value):
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def json_text(data, **dumps) -> str:
    """``json.dumps(data)`` as strict JSON: NaN and infinities become ``null``."""
    return json.dumps(_finite(data), allow_nan=False, **dumps)


_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F]}
_CONTROL.update({ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})


def printable(text: object, limit: int | None = None) -> str:
    """``str(text)`` with C0 control characters and DEL escaped (``\\x1b``, ``\\n``), cut to
    ``limit`` characters when given: safe for a log line or a terminal."""
    out = str(text).translate(_CONTROL)
    out = "".join(ch if ch.isprintable() or ch == " " else f"\\u{ord(ch):04x}" for ch in out) \
        if not out.isprintable() else out
    return out if limit is None or len(out) <= limit else out[:limit] + "..."

"""Content-keyed results on disk, shared by every process of the user (runs, sweep workers).

One call: ``cached(kind, parts, compute)`` returns ``compute()``'s value, from disk when an entry
for the same key exists. The key is the sha256 of the entry format, ``kind``, :func:`code_key`
(the hash of every Python source of the project's packages and of the Python and numpy versions)
and ``parts``: JSON-able values, ``bytes`` or ``numpy.ndarray`` (hashed by dtype, shape and
bytes), nested in tuples, lists and dicts. The caller names in ``parts`` everything else that
determines the result (a model file's bytes, a resolution, calibration images, options); a
result is therefore never reused by other code or for other inputs (STYLE.md 16).

The kinds are listed once, in :data:`KINDS`; ``cached`` and ``vdla cache clear/info --kind``
refuse any other.

Where: ``$VDLA_CACHE_DIR``, else ``$XDG_CACHE_HOME/vdla``, else ``~/.cache/vdla``; one folder per
kind, one file per entry (``<kind>/<key>.pkl``). ``VDLA_CACHE=off`` disables the cache (every
call computes). The folder is created private (0700); because entries are unpickled, a folder
that is a symlink, belongs to another user or can be written by other users is refused: one
warning line on stderr, then the process runs uncached.

An entry is ``MAGIC``, the sha256 of (kind, key, payload) and the pickled payload. An entry that
fails that check (damaged, edited, copied to another key's name) or does not unpickle is never
trusted: one warning line naming the file, then it is recomputed and rewritten. The checksum
guards against damage and mistakes, not against someone who can write the folder (the
permission check does that).

Concurrency: entries are written with :func:`vdla_hw.files.atomic_write` (a reader sees the old
file, none or the whole new one); two processes writing one entry write the same bytes, the
last rename wins. Size: after each write the folder is bounded to ``VDLA_CACHE_MAX_BYTES``
(default 2 GB) by deleting the least recently used entries (a hit refreshes an entry's mtime);
an entry larger than the bound is not stored. A cache that cannot be written only costs time.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import stat
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable, TypeVar

from vdla_hw.errors import VdlaError
from vdla_hw.files import atomic_write

T = TypeVar("T")

FORMAT = 1                       # bump when the key derivation or the file layout changes
MAGIC = b"vdla-cache-1\n"
SUFFIX = ".pkl"
ROOT = Path(__file__).resolve().parents[1]
CODE_PACKAGES = ("vdla", "vdla_hw", "vdla_sim", "compiler", "driver", "dse")
DEFAULT_MAX_BYTES = 2 << 30
STALE_TEMP_SECONDS = 3600        # a temporary file this old was left by a killed writer
KIND_RE = re.compile(r"[a-z][a-z0-9-]{0,31}\Z")
# Every kind of entry, one folder each: the one registry that `cached` and `vdla cache` check
# (a new cache adds its kind here, with a line saying what it holds).
KINDS = (
    "model",       # a built or imported float graph (vdla.network)
    "qgraph",      # a calibrated, quantized graph (vdla.network)
    "qreport",     # the quantization report of a graph (vdla.network)
    "reference",   # the reference forward pass of a quantized graph on one input (vdla.network)
    "schedule",    # a schedule search's result (compiler.tensorize.search)
    "layer",       # a compiled accelerator layer (compiler.accel)
    "cpu-cost",    # a CPU kernel's cost analysis (compiler.cpu_fallback.cost.analysis)
    "cpu-kernel",  # a CPU kernel's host object code (compiler.cpu_fallback.jit)
    "rtl-check",   # the generated Verilog's key for the resource model's staleness check (dse.resources)
)
DIR_ENV, SWITCH_ENV, MAX_ENV = "VDLA_CACHE_DIR", "VDLA_CACHE", "VDLA_CACHE_MAX_BYTES"

# per-process counts, by kind: "hit", "miss", "bad" (an untrusted entry), "stored", "evicted"
stats: dict[str, Counter] = {}
_code_key: str | None = None
_warned: set[str] = set()


class CacheError(VdlaError):
    """A cache setting that cannot be used (names the variable and the value)."""


def warn(message: str) -> None:
    """One warning line on stderr, once per process per message."""
    if message not in _warned:
        _warned.add(message)
        print(f"vdla: warning: {message}", file=sys.stderr)


def _count(kind: str, what: str, n: int = 1) -> None:
    stats.setdefault(kind, Counter())[what] += n


# --- keys ---------------------------------------------------------------------------------------

def code_key() -> str:
    """sha256 (hex) of every ``.py`` file (path and bytes) of :data:`CODE_PACKAGES` and of the
    Python and numpy versions; computed once per process (a few ms)."""
    global _code_key
    if _code_key is None:
        import numpy
        h = hashlib.sha256(f"python {sys.version}\0numpy {numpy.__version__}\0".encode())
        for package in CODE_PACKAGES:
            for path in sorted((ROOT / package).rglob("*.py")):
                h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
        _code_key = h.hexdigest()
    return _code_key


def _encode(part, h) -> None:
    """Feed one key part to ``h``, tagged by type so that different values never meet."""
    import numpy as np
    if isinstance(part, np.ndarray):
        data = np.ascontiguousarray(part)
        h.update(b"A" + json.dumps([data.dtype.str, list(data.shape)]).encode() + b"\0")
        h.update(data.tobytes())
    elif isinstance(part, (bytes, bytearray, memoryview)):
        data = bytes(part)
        h.update(b"B%d\0" % len(data) + data)
    elif isinstance(part, (tuple, list)):
        h.update(b"L%d\0" % len(part))
        for item in part:
            _encode(item, h)
    elif isinstance(part, dict):
        h.update(b"D%d\0" % len(part))
        for name in sorted(part, key=str):
            if not isinstance(name, str):
                raise TypeError(f"cache key: dict keys must be str, not {type(name).__name__}")
            _encode(name, h)
            _encode(part[name], h)
    elif part is None or isinstance(part, (str, bool, int, float, np.generic)):
        value = part.item() if isinstance(part, np.generic) else part
        text = repr(value) if isinstance(value, float) else json.dumps(value)
        h.update(b"J" + type(value).__name__.encode() + b":" + text.encode() + b"\0")
    else:
        raise TypeError(f"cache key: cannot hash a {type(part).__name__} (use JSON-able values, bytes or arrays)")


def check_kind(kind: str) -> str:
    """``kind`` if it is one of :data:`KINDS`, else a :class:`CacheError` (one line: the
    user's ``vdla cache --kind`` or a caller's bug) listing the kinds."""
    if kind not in KINDS:
        raise CacheError(f"cache kind {kind[:40]!r}: unknown (the kinds are {', '.join(KINDS)})")
    return kind


def key_of(kind: str, parts: tuple, code: str | None = None) -> str:
    """The sha256 hex of ``kind`` and ``parts`` under today's code (``code``: see :func:`cached`):
    an entry's key when ``kind`` is one of :data:`KINDS` (:func:`cached` and :func:`contains`
    check that); any other label makes a key for a store of its own (dse.cache's sweep entries)."""
    code = code_key() if code is None else f"narrow {code}"
    h = hashlib.sha256(f"vdla-cache format {FORMAT}\0{kind}\0{code}\0".encode())
    _encode(tuple(parts), h)
    return h.hexdigest()


# --- the folder ---------------------------------------------------------------------------------

def enabled() -> bool:
    return os.environ.get(SWITCH_ENV, "").strip().lower() not in ("off", "0", "no", "false")


def location() -> Path:
    """Where the cache lives (whether or not it exists or is usable)."""
    base = os.environ.get(DIR_ENV)
    if not base:
        base = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache"), "vdla")
    return Path(base)


def max_bytes() -> int:
    """The size bound: ``VDLA_CACHE_MAX_BYTES`` (bytes, a whole number >= 0) or 2 GB."""
    text = os.environ.get(MAX_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_BYTES
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise CacheError(f"{MAX_ENV}={text[:40]!r}: expected a whole number of bytes >= 0")
    return value


def unsafe_reason(path: Path) -> str | None:
    """Why the existing folder ``path`` must not be trusted with unpickling, or None."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a folder"
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return "belongs to another user"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "can be written by other users"
    return None


def root(create: bool = True) -> Path | None:
    """The usable cache folder (created 0700 when ``create``), or None when the cache is off,
    the folder is refused (warned once) or cannot be created."""
    if not enabled():
        return None
    path = location()
    try:
        if create and not os.path.lexists(path):
            path.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                pass
        if not os.path.lexists(path):
            return None
        reason = unsafe_reason(path)
    except OSError as err:
        warn(f"cache folder {path}: {err.strerror or err}; running without the cache")
        return None
    if reason:
        warn(f"cache folder {path} {reason}; not trusted (entries are unpickled), running without the cache "
             f"(set {DIR_ENV} to a private folder, or {SWITCH_ENV}=off)")
        return None
    return path


def entry_path(folder: Path, kind: str, key: str) -> Path:
    return folder / kind / f"{key}{SUFFIX}"


# --- entries ------------------------------------------------------------------------------------

def _seal(kind: str, key: str, payload: bytes) -> bytes:
    return hashlib.sha256(f"{kind}/{key}\0".encode() + payload).hexdigest().encode()


def read_entry(path: Path, kind: str, key: str):
    """``(True, value)`` for a trusted entry, ``(False, None)`` when there is none; an entry
    that fails its checksum or does not unpickle is reported (once) and answers as none."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except (FileNotFoundError, NotADirectoryError):
        return False, None
    except OSError as err:
        warn(f"{path}: cache entry unreadable ({err.strerror or err}); recomputing it")
        return False, None
    head, digest_len = len(MAGIC), 64
    payload = data[head + digest_len + 1:]
    if (not data.startswith(MAGIC) or data[head + digest_len:head + digest_len + 1] != b"\n"
            or data[head:head + digest_len] != _seal(kind, key, payload)):
        _count(kind, "bad")
        warn(f"{path}: cache entry fails its checksum (damaged, edited or renamed); recomputing it")
        return False, None
    try:
        value = pickle.loads(payload)
    except Exception as err:  # a sealed payload that no longer unpickles (a class gone)
        _count(kind, "bad")
        warn(f"{path}: cache entry does not unpickle ({type(err).__name__}); recomputing it")
        return False, None
    try:
        os.utime(path)  # recently used: evicted last
    except OSError:
        pass
    return True, value


def write_entry(folder: Path, kind: str, key: str, value) -> bool:
    """Store ``value`` (True when stored); too large for the bound or unwritable: not stored."""
    try:
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError) as err:  # a caller's bug: said, not fatal
        warn(f"cannot store a {type(value).__name__} in the cache (kind {kind}): {err}")
        return False
    data = MAGIC + _seal(kind, key, payload) + b"\n" + payload
    bound = max_bytes()
    if len(data) > bound:
        return False
    try:
        (folder / kind).mkdir(mode=0o700, exist_ok=True)
        atomic_write(entry_path(folder, kind, key), data, mode=0o600)
    except OSError:
        return False  # a full disk or a read-only folder only costs time
    _count(kind, "stored")
    evict(folder, bound)
    return True


def entries(folder: Path):
    """``(kind, path, size, mtime)`` of every entry under ``folder``; stale temporary files of
    killed writers are removed on the way."""
    now = time.time()
    try:
        kinds = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for kind in kinds:
        # any kind-like folder, not only KINDS: an older version's kinds still take room
        if not kind.is_dir(follow_symlinks=False) or not KIND_RE.match(kind.name):
            continue
        try:
            files = list(os.scandir(kind.path))
        except OSError:
            continue
        for entry in files:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue  # removed meanwhile
            if entry.name.startswith("."):
                if entry.name.endswith(".tmp") and now - info.st_mtime > STALE_TEMP_SECONDS:
                    _unlink(entry.path)
                continue
            if entry.name.endswith(SUFFIX) and stat.S_ISREG(info.st_mode):
                yield kind.name, Path(entry.path), info.st_size, info.st_mtime


def _unlink(path) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:
        return False  # another process evicted it first


def evict(folder: Path, bound: int) -> int:
    """Delete least recently used entries until ``folder`` holds at most ``bound`` bytes;
    returns how many were deleted."""
    found = list(entries(folder))
    total = sum(size for _, _, size, _ in found)
    removed = 0
    for kind, path, size, _ in sorted(found, key=lambda e: e[3]):
        if total <= bound:
            break
        if _unlink(path):
            removed += 1
            _count(kind, "evicted")
        total -= size
    return removed


# --- the API ------------------------------------------------------------------------------------

def cached(kind: str, parts: tuple, compute: Callable[[], T], *, code: str | None = None) -> T:
    """``compute()``, or the value stored for the same ``kind``, ``parts`` and code.

    ``parts`` must name everything besides the project's code that determines the value; the
    value must be picklable. A miss stores the value before returning it (so the caller may
    change it afterwards); a hit returns a fresh unpickled copy. ``code``: a narrower hash of
    the code the value depends on, instead of :func:`code_key` (the whole project), for a
    value that is expensive and whose caller hashes every source it comes from (the CPU-kernel
    analyses); the caller answers for it."""
    check_kind(kind)
    folder = root()
    if folder is None:  # off or unusable: no key to compute (hashing a run's inputs took seconds)
        _count(kind, "miss")
        return compute()
    key = key_of(kind, parts, code)
    hit, value = read_entry(entry_path(folder, kind, key), kind, key)
    if hit:
        _count(kind, "hit")
        return value
    _count(kind, "miss")
    value = compute()
    write_entry(folder, kind, key, value)
    return value


def contains(kind: str, parts: tuple, *, code: str | None = None) -> bool:
    """Whether an entry exists for these arguments of :func:`cached` (not checked: a damaged
    one is found when read)."""
    folder = root(create=False)
    return folder is not None and entry_path(folder, kind, key_of(check_kind(kind), parts, code)).is_file()


def info() -> dict:
    """The folder, its state, the bound and the entries and bytes per kind."""
    path = location()
    out = {"folder": str(path), "enabled": enabled(), "max_bytes": max_bytes(), "kinds": {},
           "entries": 0, "bytes": 0}
    if not os.path.lexists(path):
        out["state"] = "absent"
        return out
    reason = unsafe_reason(path)
    out["state"] = f"refused: {reason}" if reason else "ok"
    if reason:
        return out
    for kind, _, size, _ in entries(path):
        row = out["kinds"].setdefault(kind, {"entries": 0, "bytes": 0})
        row["entries"] += 1
        row["bytes"] += size
        out["entries"] += 1
        out["bytes"] += size
    return out


def clear(kind: str | None = None) -> tuple[int, int]:
    """Delete every entry (of ``kind``, one of :data:`KINDS`, when given); returns (entries,
    bytes) deleted."""
    if kind is not None:
        check_kind(kind)
    path = location()
    if not os.path.lexists(path):
        return 0, 0
    reason = unsafe_reason(path)
    if reason:
        raise CacheError(f"cache folder {path} {reason}; not clearing it")
    count = size_sum = 0
    for entry_kind, entry, size, _ in list(entries(path)):
        if (kind is None or entry_kind == kind) and _unlink(entry):
            count += 1
            size_sum += size
    return count, size_sum

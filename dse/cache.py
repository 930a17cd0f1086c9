"""Caches shared by the points of a sweep.

Two levels: a bounded in-process LRU (what one Ray worker has computed) and a directory of
small JSON files (``DIR/cache``, shared by the workers of one machine, kept with the sweep's
results). Every key includes :func:`code_key`, the hash of the project's sources
(:func:`vdla_hw.cache.code_key`, which also keys the user-wide disk cache of :mod:`vdla_hw.cache`),
so a result computed by other code is never reused (STYLE.md 16). Files are written atomically (:func:`vdla_hw.files.atomic_write`), so
two workers writing the same entry cannot leave a torn file.

Every file holds ``{"sha256": ..., "value": ...}``: the value and the sha256 of its canonical JSON
(sorted keys, no spaces) together with the entry's kind and key (:func:`seal`). An entry that is
not JSON, lacks the checksum or fails it (a damaged file, a hand-edited number, an entry copied
to another key's name) is not trusted: :meth:`DiskCache.get` reports it once, naming the file, and
answers "not cached", so the value is recomputed and the entry rewritten. The checksum guards
against damage and mistakes, not against someone who recomputes it.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from pathlib import Path
from typing import Callable

from vdla_hw.cache import code_key as project_code_key
from vdla_hw.cache import key_of
from vdla_hw.errors import VdlaError
from vdla_hw.files import atomic_write, json_loads, json_text, read_capped

MAX_ENTRY_BYTES = 16 << 20  # a layer timing with its bundle metadata is a few kB


def code_key() -> str:
    """The key of the code a cached sweep result depends on: :func:`vdla_hw.cache.code_key` (every
    source of the project's packages, one definition for every cache), 16 hex digits."""
    return project_code_key()[:16]


def digest(*parts) -> str:
    """A short stable hash of ``parts`` (JSON-able values, bytes, arrays) with the code key
    (:func:`vdla_hw.cache.key_of`)."""
    return key_of("sweep", parts)[:24]


class Lru:
    """A bounded mapping that forgets the least recently used entry."""

    def __init__(self, size: int):
        self.size, self.data = size, OrderedDict()

    def get(self, key):
        if key in self.data:
            self.data.move_to_end(key)
            return self.data[key]
        return None

    def put(self, key, value) -> None:
        self.data[key] = value
        self.data.move_to_end(key)
        while len(self.data) > self.size:
            self.data.popitem(last=False)


def checksum(kind: str, key: str, value) -> str:
    """sha256 of ``kind``, ``key`` and the canonical JSON of ``value``."""
    canonical = json_text(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(f"{kind}/{key}\0{canonical}".encode()).hexdigest()


def seal(kind: str, key: str, value) -> str:
    """The text of a cache file holding ``value`` with its checksum."""
    return json_text({"sha256": checksum(kind, key, value), "value": value})


class CacheEntryError(VdlaError):
    """A cache file that cannot be trusted (names the file and why); it is recomputed."""


def unseal(kind: str, key: str, data: bytes | str, where: str):
    """The value of a cache file's text; :class:`CacheEntryError` naming ``where`` unless its
    checksum holds."""
    try:
        entry = json_loads(data, where)
    except VdlaError as err:
        raise CacheEntryError(str(err)) from None
    if not isinstance(entry, dict) or set(entry) != {"sha256", "value"} or not isinstance(entry["sha256"], str):
        raise CacheEntryError(f"{where}: not a checksummed cache entry (expected {{\"sha256\": ..., \"value\": ...}})")
    if entry["sha256"] != checksum(kind, key, entry["value"]):
        raise CacheEntryError(f"{where}: fails its checksum (damaged or edited)")
    return entry["value"]


class DiskCache:
    """JSON values under ``root/<kind>/<key>.json`` (sealed, see :func:`seal`); ``root`` None
    disables it. Untrusted entries are collected in ``problems`` (one line each, naming the
    file) and passed to ``report`` when given."""

    def __init__(self, root: str | Path | None, report: Callable[[str], None] | None = None):
        self.root = Path(root) if root else None
        self.report = report
        self.problems: list[str] = []

    def path(self, kind: str, key: str) -> Path:
        return self.root / kind / f"{key}.json"

    def get(self, kind: str, key: str):
        """The cached value, or None when there is none or it cannot be trusted (reported)."""
        if self.root is None:
            return None
        path = self.path(kind, key)
        if not path.exists():
            return None
        try:
            return unseal(kind, key, read_capped(path, "sweep cache entry", MAX_ENTRY_BYTES),
                          f"{path}: sweep cache entry")
        except VdlaError as err:
            message = f"{err}; recomputing it"
            if message not in self.problems:
                self.problems.append(message)
                if self.report:
                    self.report(message)
            return None

    def put(self, kind: str, key: str, value) -> None:
        if self.root is None:
            return
        try:
            (self.root / kind).mkdir(parents=True, exist_ok=True)
            atomic_write(self.path(kind, key), seal(kind, key, value))
        except OSError:
            pass  # a cache that cannot be written only costs time

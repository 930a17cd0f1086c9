"""Caches shared by the points of a sweep.

Two levels: a bounded in-process LRU (what one Ray worker has computed) and a directory of
small JSON files (``DIR/cache``, shared by the workers of one machine, kept across re-runs).
Every key includes :func:`code_key`, the hash of the sources that shape a cached result (the
spec, the compiler, the simulator, the activity counts), so a result computed by other code is
never reused (STYLE.md 16). Files are written atomically (temporary file, then rename), so two
workers writing the same entry cannot leave a torn file.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from collections import OrderedDict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CODE_SOURCES = ("vdla_hw/*.py", "vdla_sim/**/*.py", "compiler/**/*.py", "driver/*.py", "dse/activity.py",
                "dse/evaluate.py")


def sources_key(patterns) -> str:
    """sha256 (16 hex digits) of the project files matching ``patterns`` (names and contents)."""
    h = hashlib.sha256()
    for pattern in patterns:
        for path in sorted(ROOT.glob(pattern)):
            h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


@functools.cache
def code_key() -> str:
    """The key of the sources a cached layer result depends on."""
    return sources_key(CODE_SOURCES)


def digest(*parts) -> str:
    """A short stable hash of JSON-able or bytes ``parts`` (with the code key)."""
    h = hashlib.sha256(code_key().encode())
    for part in parts:
        h.update(part if isinstance(part, bytes) else json.dumps(part, sort_keys=True, default=str).encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


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


class DiskCache:
    """JSON values under ``root/<kind>/<key>.json``; ``root`` None disables it."""

    def __init__(self, root: str | Path | None):
        self.root = Path(root) if root else None

    def get(self, kind: str, key: str):
        if self.root is None:
            return None
        try:
            return json.loads((self.root / kind / f"{key}.json").read_text())
        except (OSError, ValueError):
            return None

    def put(self, kind: str, key: str, value) -> None:
        if self.root is None:
            return
        folder = self.root / kind
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
            with os.fdopen(fd, "w") as fh:
                json.dump(value, fh)
            os.replace(tmp, folder / f"{key}.json")
        except OSError:
            pass  # a cache that cannot be written only costs time

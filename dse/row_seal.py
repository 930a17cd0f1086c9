"""The seal of a ``points.csv`` row: HMAC-SHA256 under this user's sweep key.

A resumed sweep reuses the rows it finds in ``DIR/points.csv`` and ranks configurations by them;
a row anyone could write (a forged latency) would become "the fastest configuration". So every
row carries, in its ``row_mac`` column, the HMAC-SHA256 of its cells under a key only this user
can read, and a row whose seal does not verify is never used (:class:`dse.store.PointStore`
drops it and the sweep computes the point again): unlike the checksums of the sweep's cache
(:mod:`dse.cache`), which anyone who edits an entry can recompute, the seal cannot be forged
without the key.

The key is 32 random bytes in ``$XDG_CONFIG_HOME/vdla/sweep.key`` (default
``~/.config/vdla/sweep.key``), made on first use with the checks of ``vdla serve``'s key
(:mod:`driver.auth`: mode 0600, in a folder only this user may write; a symbolic link, a file
of another user or one others may read is refused with one line). Rows written by another user
or on another machine (another key) are therefore recomputed too.

What is sealed: the row's non-empty cells as ``points.csv`` holds them (:func:`dse.store.cell`
of each value), by column name, so columns added to the file later do not change a row's seal.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path

COLUMN = "row_mac"


def key_file() -> Path:
    """``sweep.key`` beside ``vdla serve``'s key (:func:`driver.auth.default_key_file`)."""
    from driver.auth import default_key_file

    return default_key_file().with_name("sweep.key")


def sweep_key() -> bytes:
    """This user's sweep key, made on first use (:class:`driver.auth.AuthError`, one line, when
    the file or its folder is unsafe)."""
    from driver.auth import AuthError, load_key, server_key

    path = key_file()
    try:
        return server_key(path)[0]
    except AuthError:
        if path.exists():  # another sweep made it at the same moment (O_EXCL): read that one
            return load_key(path)
        raise


def row_mac(key: bytes, cells: dict[str, str]) -> str:
    """The seal (64 hex digits) of a row given as ``{column: cell text}``."""
    canonical = json.dumps({c: v for c, v in cells.items() if v != "" and c != COLUMN}, sort_keys=True,
                           separators=(",", ":"), ensure_ascii=False)
    return hmac.new(key, b"vdla-points-row\0" + canonical.encode(), hashlib.sha256).hexdigest()


def verifies(key: bytes, cells: dict[str, str]) -> bool:
    """Whether a row's ``row_mac`` cell is the seal of its other cells."""
    return hmac.compare_digest(str(cells.get(COLUMN) or ""), row_mac(key, cells))

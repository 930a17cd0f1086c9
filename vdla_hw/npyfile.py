"""Reading ``.npy`` and ``.npz`` data that came from outside (bundle files, deployment packages)
with bounded memory and no pickles.

numpy decompresses whole zip members and allocates the array a ``.npy`` header announces before
it reads the data, so a small damaged or hostile file could make it ask for gigabytes. These
readers first check the zip directory (the members' sizes) against a limit and every array
header against the bytes actually present; only then does numpy read. Every defect is a
BundleError naming the file (and the member).
"""

from __future__ import annotations

import io
import tokenize
import zipfile
import zlib
from pathlib import Path

import numpy as np

from vdla_hw.errors import BundleError, FileRefused
from vdla_hw.files import open_checked
from vdla_hw.limits import MAX_DRAM_BYTES, mib

NPY_MAGIC, ZIP_MAGIC = b"\x93NUMPY", b"PK\x03\x04"
EMPTY_ZIP_MAGIC = b"PK\x05\x06"  # an archive of no members (np.savez of no arrays) is its end record alone
_HEADER_ERRORS = (ValueError, SyntaxError, tokenize.TokenError, TypeError, OverflowError, EOFError, KeyError)


def _check_header(fp, available: int, where: str, name: str) -> None:
    """The array the .npy header in ``fp`` announces fits in ``available`` bytes, holds no objects."""
    try:
        version = np.lib.format.read_magic(fp)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(fp)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(fp)
        else:
            raise BundleError(where, f"{name}: .npy format version {version} is not read here")
    except _HEADER_ERRORS as err:
        raise BundleError(where, f"{name}: not a readable .npy header ({' '.join(str(err).split())})") from None
    if dtype.hasobject:
        raise BundleError(where, f"{name}: holds Python objects (pickles are never read)")
    nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if nbytes > available:
        raise BundleError(where, f"{name}: its header announces {nbytes} bytes of data, the file holds {available}")


def read_npy(data: bytes, where: str) -> np.ndarray:
    """The array of a ``.npy`` file's bytes."""
    _check_header(io.BytesIO(data), len(data), where, "array")
    try:
        return np.load(io.BytesIO(data), allow_pickle=False)
    except (*_HEADER_ERRORS, OSError) as err:
        raise BundleError(where, f"not a readable .npy array ({err})") from None


def read_npz(source: str | Path | bytes, where: str, max_total: int = MAX_DRAM_BYTES) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file (a path, or its bytes), after checking, before anything is
    decompressed, that its members hold at most ``max_total`` bytes (default: one DRAM image of
    the documented limit, plus 64 kB for small keys and headers) and each header fits its member."""
    with io.BytesIO(source) if isinstance(source, bytes) else _open_npz(source, where, max_total) as fh:
        return _read_npz(fh, where, max_total)


def _open_npz(path: str | Path, where: str, max_total: int):
    """The file ``path`` opened by files.open_checked: a regular file (a FIFO would hang the
    read) of at most ``max_total`` plus deflate's worst-case growth and the zip's own records."""
    try:
        fh = open_checked(path, "bundle file", max_total + (max_total >> 8) + (1 << 20),
                          "vdla_hw.limits.MAX_DRAM_BYTES" if max_total == MAX_DRAM_BYTES else "the array limit")
    except FileRefused as err:
        raise BundleError(where, {"no such bundle file": "no such file",
                                  "the bundle file is a directory, not a regular file":
                                  "is a directory, not a bundle file"}.get(err.why, err.why)) from None
    return fh


def _read_npz(source, where: str, max_total: int) -> dict[str, np.ndarray]:
    try:
        magic = source.read(6)
        source.seek(0)
    except OSError as err:
        raise BundleError(where, f"cannot read ({err.strerror or err})") from None
    if magic == NPY_MAGIC:
        raise BundleError(where, "is a single .npy array, not a bundle (a .npz of dram, insn_offset, insn_count, "
                          "config, ...; write one with vdla asm or vdla compile)")
    if not magic.startswith((ZIP_MAGIC, EMPTY_ZIP_MAGIC)):
        raise BundleError(where, "not a readable .npz file (corrupt or truncated: no zip header)")
    try:
        with zipfile.ZipFile(source) as archive:
            members = archive.infolist()
            total = sum(info.file_size for info in members)
            if total > max_total + (64 << 10):
                raise BundleError(where, f"its arrays hold {mib(total)}, more than the {mib(max_total)} limit "
                                  "(vdla_hw/limits.py)")
            for info in members:
                with archive.open(info) as member:
                    _check_header(member, info.file_size, where, info.filename)
        source.seek(0)
        with np.load(source, allow_pickle=False) as npz:
            return {key: npz[key] for key in npz.files}
    except BundleError:
        raise
    except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError, zlib.error, *_HEADER_ERRORS) as err:
        raise BundleError(where, f"not a readable .npz file (corrupt or truncated: {' '.join(str(err).split())})") \
            from None

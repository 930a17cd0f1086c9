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

from vdla_hw.errors import BundleError
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
    try:
        if isinstance(source, bytes):
            magic, source = source[:6], io.BytesIO(source)
        else:
            with open(source, "rb") as fh:
                magic = fh.read(6)
    except FileNotFoundError:
        raise BundleError(where, "no such file") from None
    except IsADirectoryError:
        raise BundleError(where, "is a directory, not a bundle file") from None
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
        if not isinstance(source, (str, Path)):
            source.seek(0)
        with np.load(source, allow_pickle=False) as npz:
            return {key: npz[key] for key in npz.files}
    except BundleError:
        raise
    except (zipfile.BadZipFile, OSError, RuntimeError, NotImplementedError, zlib.error, *_HEADER_ERRORS) as err:
        raise BundleError(where, f"not a readable .npz file (corrupt or truncated: {' '.join(str(err).split())})") \
            from None

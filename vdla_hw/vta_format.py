"""VTA's standalone case format (onera/standalone-vta) to and from a program bundle (docs/vta.md).

A *case directory* holds one file per DRAM object, each at a VTA physical address given by
``memory_addresses.csv``: ``input.bin`` (inp elements), ``weight.bin`` (wgt), ``accumulator.bin``
and ``add_accumulator.bin`` (acc, int32 little-endian), ``out.bin`` (out), ``uop.bin`` (32-bit
little-endian micro-ops) and ``instructions.bin`` (16-byte little-endian instructions, the same
bits as :mod:`vdla_hw.isa`). ``expected_out.bin`` and ``expected_out_sram.bin`` (results the
producer expects) are not DRAM: they travel in the bundle's meta and come back on export.

A *flat directory* holds ``dram.bin`` (the whole image from VTA physical address 0x1000),
``instructions.bin`` and a ``memory_addresses.csv`` naming where the stream sits (``INSN``).

The one address rewrite: VTA's DRAM leaves its first 4 KiB page unmapped (its virtual memory
manager maps page k at physical ``(k + 1) << 12``: standalone-vta
src/simulators/functional_simulator/src/virtual_memory.cc, apache/tvm-vta src/vmem/virtual_memory.cc),
so byte 0 of our image is VTA physical address :data:`VTA_BASE`, and every LOAD/STORE that moves
data has ``dram_base`` (in elements of its memory type) lowered by ``VTA_BASE // element bytes``
on import and raised by as much on export. Nothing else changes.
"""

from __future__ import annotations

import base64
import csv
import io
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from vdla_hw import isa, program
from vdla_hw.bundle import Bundle, Symbol
from vdla_hw.config import Config, load_config
from vdla_hw.errors import VdlaError
from vdla_hw.files import atomic_write, read_checked
from vdla_hw.limits import MAX_DRAM_BYTES, mib

VTA_PAGE = 0x1000       # VTA's DRAM page (kPageBits 12 in virtual_memory.h)
VTA_BASE = VTA_PAGE     # VTA physical address of byte 0 of our image: the first mapped page
DEFAULT_CONFIG = "vta-pynq"  # VTA's default configuration (vta_config.json), which its fsim builds

# The DRAM files of a case, in the order VTA's fsim allocates them (functional_simulator.cc):
# file stem, memory type, the names memory_addresses.csv may give it.
CASE_FILES = (("input", "inp", ("INP", "inp")), ("weight", "wgt", ("WGT", "wgt")),
              ("accumulator", "acc", ("ACC", "acc")), ("add_accumulator", "acc", ("ACC_BIS", "add_acc")),
              ("out", "out", ("OUT", "out")), ("uop", "uop", ("UOP", "uop")))
STEM_OF_MEM = {"inp": "input", "wgt": "weight", "acc": "accumulator", "out": "out", "uop": "uop"}
EXTRA_FILES = ("expected_out.bin", "expected_out_sram.bin")  # kept verbatim in meta["vta_files"]
CSV_NAME, INSN_FILE, FLAT_IMAGE = "memory_addresses.csv", "instructions.bin", "dram.bin"
# Every name import_dir reads: what an export writes and replaces as one set.
CASE_NAMES = frozenset({CSV_NAME, INSN_FILE, FLAT_IMAGE, *EXTRA_FILES, *(f"{stem}.bin" for stem, _, _ in CASE_FILES)})
_CSV_KEYS = {key: stem for stem, _, keys in CASE_FILES for key in keys} | {"INSN": "instructions",
                                                                           "DRAM": "dram"}
_MEM_OF = {stem: mem for stem, mem, _ in CASE_FILES}
_CSV_TYPE = {stem: keys[0] for stem, _, keys in CASE_FILES}
_MAX_CSV_BYTES = 64 * 1024


class VtaFormatError(VdlaError):
    """A VTA case or flat directory that cannot be read or written (names the file and why)."""


# --- reading -------------------------------------------------------------------------------
def _read(path: Path, what: str, required: bool = True) -> bytes | None:
    """The bytes of a case file, at most an image's worth; None for an optional file that is not
    there. Read with files.read_checked inside the case folder: a regular file, and a symbolic
    link that leads out of the folder is refused (issue 45 finding 8: a case's link to
    /etc/passwd ended up in the bundle)."""
    if not path.exists():
        if required:
            raise VtaFormatError(f"{path}: missing {what}")
        return None
    return read_checked(path.name, what, MAX_DRAM_BYTES, "vdla_hw.limits.MAX_DRAM_BYTES", inside=path.parent)


def read_addresses(path: Path) -> dict[str, int]:
    """memory_addresses.csv as file stem -> VTA physical address. Rows are ``TYPE,0xPHYS[,0xLOGICAL]``
    (VTA's compiler) or ``type,0xADDR`` (the cycle-accurate simulator's cases); ``//`` starts a comment."""
    raw = _read(path, "memory_addresses.csv")
    if len(raw) > _MAX_CSV_BYTES:
        raise VtaFormatError(f"{path}: {len(raw)} bytes is too long for an address table")
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as err:
        raise VtaFormatError(f"{path}: not ASCII text (byte {err.start})") from None
    out: dict[str, int] = {}
    for line_no, row in enumerate(csv.reader(io.StringIO(text)), 1):
        if not row or not "".join(row).strip() or row[0].strip().startswith("//"):
            continue
        where = f"{path} line {line_no}"
        key = row[0].strip()
        if key not in _CSV_KEYS:
            raise VtaFormatError(f"{where}: unknown object {key!r} (known: {', '.join(_CSV_KEYS)})")
        if len(row) < 2:
            raise VtaFormatError(f"{where}: {key} has no address")
        values = []
        for cell in row[1:3]:
            try:
                values.append(int(cell.strip(), 16))
            except ValueError:
                raise VtaFormatError(f"{where}: {cell.strip()!r} is not a hexadecimal address") from None
        stem = _CSV_KEYS[key]
        if stem in out:
            raise VtaFormatError(f"{where}: {key} is given twice")
        if values[0] < 0 or values[0] > MAX_DRAM_BYTES + VTA_BASE:
            raise VtaFormatError(f"{where}: address {row[1].strip()} is outside the {mib(MAX_DRAM_BYTES)} image limit")
        out[stem] = values[0]
    return out


def _rewrite(data: bytes, config: Config, shift: int, where: str, first_config: Config | None = None) -> bytes:
    """The stream with every data-moving LOAD/STORE's dram_base moved by ``shift`` bytes (a
    multiple of every element size), decoded with ``first_config`` (default ``config``) and
    encoded with ``config``; x_size-0 carriers keep their (unused) dram_base."""
    if len(data) % 16 or not data:
        raise VtaFormatError(f"{where}: {len(data)} bytes is not a whole number of 16-byte instructions")
    try:
        insns = isa.decode_program(data, first_config or config)
        out = []
        for index, insn in enumerate(insns):
            if insn.kind in ("LOAD", "STORE") and insn.x_size > 0:
                base = insn.dram_base + shift // config.elem_bytes(insn.mem)
                if base < 0:
                    raise VtaFormatError(f"{where}: instruction {index} ({insn.kind} {insn.mem}) dram_base "
                                         f"{insn.dram_base} is VTA physical address "
                                         f"{hex(insn.dram_base * config.elem_bytes(insn.mem))}, in VTA's unmapped "
                                         f"first page")
                insn = insn.replace(dram_base=base)
            out.append(isa.encode(insn, config, index))
    except VtaFormatError:
        raise
    except VdlaError as err:
        raise VtaFormatError(f"{where}: {err}") from None
    return b"".join(out)


def _check_fits(bundle: Bundle, where: str) -> None:
    """Every transfer and micro-op range inside the configuration's SRAMs and the image."""
    try:
        for index, insn in enumerate(bundle.insns()):
            if insn.kind in ("LOAD", "STORE"):
                program.check_transfer(insn, bundle.config, bundle.dram.size, index)
            elif insn.kind in ("GEMM", "ALU"):
                program.check_uop_range(insn, bundle.config, index)
    except VdlaError as err:
        raise VtaFormatError(f"{where}: does not fit configuration {bundle.config.name}: {err}") from None


def import_dir(folder: str | Path, config: str | Config | None = None) -> Bundle:
    """The bundle of a case or flat directory (a flat one has ``dram.bin``)."""
    folder = Path(folder)
    config = load_config(config or DEFAULT_CONFIG)
    if not folder.is_dir():
        raise VtaFormatError(f"{folder}: not a directory (a VTA case has {INSN_FILE}, {CSV_NAME} and data files)")
    if (folder / FLAT_IMAGE).exists():
        return _import_flat(folder, config)
    addresses = read_addresses(folder / CSV_NAME)
    insn_vta = _read(folder / INSN_FILE, "instruction stream")
    regions, extras = [], {}
    for name in EXTRA_FILES:
        data = _read(folder / name, name, required=False)
        if data is not None:
            extras[name] = base64.b64encode(data).decode("ascii")
    for stem, mem, _ in CASE_FILES:
        data = _read(folder / f"{stem}.bin", f"{stem}.bin", required=False)
        if data is None and stem == "out":  # VTA's fsim zero-fills OUT, sized by the expected results
            sized = next((extras[n] for n in EXTRA_FILES[::-1] if n in extras), None)
            data = bytes(len(base64.b64decode(sized))) if sized is not None else None
        if data is None:
            if stem in addresses:
                raise VtaFormatError(f"{folder / CSV_NAME}: gives an address for {stem}.bin, which is missing")
            continue
        if not data:  # an empty object: VTA allocates no page for it
            continue
        size = config.elem_bytes(mem)
        if len(data) % size:
            raise VtaFormatError(f"{folder / stem}.bin: {len(data)} bytes is not a whole number of {size}-byte {mem} "
                                 f"elements of configuration {config.name} (shape {config.elem_shape(mem)})")
        regions.append([stem, mem, addresses.get(stem, 0), data])
    # a file without an address (or with 0: page 0 is never mapped, the cycle-accurate cases'
    # "preloaded into SRAM" mark) goes on the next free page, in VTA's allocation order
    cursor = VTA_BASE
    for region in regions:
        if region[2] == 0:
            region[2] = cursor
        cursor = max(cursor, -(-(region[2] + len(region[3])) // VTA_PAGE) * VTA_PAGE)
    insn_at = addresses.get("instructions") or cursor
    spans = [(r[2], r[2] + len(r[3]), f"{r[0]}.bin") for r in regions] + [(insn_at, insn_at + len(insn_vta), INSN_FILE)]
    _check_spans(spans, config, folder, {r[0]: r[1] for r in regions})
    end = max(hi for _, hi, _ in spans)
    if end - VTA_BASE > MAX_DRAM_BYTES:
        raise VtaFormatError(f"{folder}: the image would be {mib(end - VTA_BASE)}, past the "
                             f"{mib(MAX_DRAM_BYTES)} limit (vdla_hw/limits.py)")
    dram = np.zeros(end - VTA_BASE, dtype=np.uint8)
    symbols = {}
    for stem, mem, phys, data in regions:
        dram[phys - VTA_BASE:phys - VTA_BASE + len(data)] = np.frombuffer(data, dtype=np.uint8)
        count = len(data) // config.elem_bytes(mem)
        symbols[stem] = Symbol(mem, (phys - VTA_BASE) // config.elem_bytes(mem), count,
                               (count, *config.elem_shape(mem)))
    ours = _rewrite(insn_vta, config, -VTA_BASE, f"{folder / INSN_FILE} (read for configuration {config.name})")
    dram[insn_at - VTA_BASE:insn_at - VTA_BASE + len(ours)] = np.frombuffer(ours, dtype=np.uint8)
    meta = {"producer": "vdla import-vta", **({"vta_files": extras} if extras else {})}
    bundle = Bundle(dram=dram, insn_offset=insn_at - VTA_BASE, insn_count=len(ours) // 16, config=config,
                    symbols=symbols, meta=meta)
    _check_fits(bundle, str(folder))
    return bundle


def _check_spans(spans, config: Config, folder: Path, mems: dict[str, str]) -> None:
    for lo, hi, name in spans:
        stem = name[:-4]
        align = config.elem_bytes(mems[stem]) if stem in mems else 16
        if lo < VTA_BASE:
            raise VtaFormatError(f"{folder}: {name} at {hex(lo)} lies in VTA's unmapped first page (below {hex(VTA_BASE)})")
        if lo % align:
            raise VtaFormatError(f"{folder}: {name} at {hex(lo)} is not on a {align}-byte element boundary")
    ordered = sorted(spans)
    for (lo0, hi0, a), (lo1, hi1, b) in zip(ordered, ordered[1:]):
        if lo1 < hi0:
            raise VtaFormatError(f"{folder}: {a} ({hex(lo0)}..{hex(hi0 - 1)}) and {b} ({hex(lo1)}..{hex(hi1 - 1)}) overlap")


def _import_flat(folder: Path, config: Config) -> Bundle:
    image = _read(folder / FLAT_IMAGE, "DRAM image")
    insn_vta = _read(folder / INSN_FILE, "instruction stream")
    addresses = read_addresses(folder / CSV_NAME)
    if addresses.get("dram", VTA_BASE) != VTA_BASE:
        raise VtaFormatError(f"{folder / CSV_NAME}: DRAM must start at {hex(VTA_BASE)}, VTA's first mapped page")
    if "instructions" not in addresses:
        raise VtaFormatError(f"{folder / CSV_NAME}: no INSN row (where the stream sits in {FLAT_IMAGE})")
    at = addresses["instructions"] - VTA_BASE
    if at < 0 or at % 16 or at + len(insn_vta) > len(image):
        raise VtaFormatError(f"{folder / CSV_NAME}: INSN at {hex(at + VTA_BASE)} is not a 16-byte boundary inside "
                             f"{FLAT_IMAGE} ({len(image)} bytes from {hex(VTA_BASE)})")
    if image[at:at + len(insn_vta)] != insn_vta:
        raise VtaFormatError(f"{folder / INSN_FILE}: differs from the stream at INSN in {FLAT_IMAGE}")
    dram = np.frombuffer(image, dtype=np.uint8).copy()
    ours = _rewrite(insn_vta, config, -VTA_BASE, f"{folder / INSN_FILE} (read for configuration {config.name})")
    dram[at:at + len(ours)] = np.frombuffer(ours, dtype=np.uint8)
    bundle = Bundle(dram=dram, insn_offset=at, insn_count=len(ours) // 16, config=config,
                    meta={"producer": "vdla import-vta"})
    _check_fits(bundle, str(folder))
    return bundle


# --- writing -------------------------------------------------------------------------------
def target_config(bundle: Bundle, vta_config: str | Config | None) -> Config:
    """The VTA configuration to encode for: ``vta_config`` (default: the bundle's own), which must
    have the bundle's element shapes and types and SRAMs at least as deep (every index still fits)."""
    target = bundle.config if vta_config is None else load_config(vta_config)
    src = bundle.config
    for key in ("LOG_INP_WIDTH", "LOG_WGT_WIDTH", "LOG_ACC_WIDTH", "LOG_BATCH", "LOG_BLOCK"):
        if src.params[key] != target.params[key]:
            raise VtaFormatError(f"the bundle's configuration {src.name} has {key} {src.params[key]}, VTA configuration "
                                 f"{target.name} {target.params[key]}: recompile for {target.name}")
    for mem in ("uop", "inp", "wgt", "acc"):
        if target.depth(mem) < src.depth(mem):
            raise VtaFormatError(f"VTA configuration {target.name} has a {mem} SRAM of {target.depth(mem)} elements, "
                                 f"smaller than the bundle's {src.name} ({src.depth(mem)}): recompile for {target.name}")
    return target


def _vta_image(bundle: Bundle, target: Config) -> tuple[np.ndarray, bytes]:
    """(image, stream) as VTA reads them: instructions re-encoded for ``target`` with dram_base
    raised, and micro-ops re-encoded where ``target``'s micro-op layout differs."""
    dram = bundle.dram.copy()
    stream = _rewrite(bundle.insn_bytes, target, VTA_BASE, "the bundle's instructions", bundle.config)
    if [f.lo for f in isa.uop_layout(target).values()] != [f.lo for f in isa.uop_layout(bundle.config).values()]:
        words = dram[: dram.size // 4 * 4].view("<u4")
        done = set()
        for insn in bundle.insns():
            if insn.kind == "LOAD" and insn.mem == "uop" and program.moves_data(insn):
                for k in range(insn.dram_base, insn.dram_base + insn.x_size):
                    if k not in done:
                        done.add(k)
                        words[k] = isa.encode_uops(isa.decode_uops(words[k:k + 1], bundle.config), target)[0]
    at = bundle.insn_offset
    dram[at:at + len(stream)] = np.frombuffer(stream, dtype=np.uint8)
    return dram, stream


def _csv_text(rows: list[tuple[str, int, int]]) -> str:
    return "".join(f"{name},{hex(phys)},{hex(logical)}\n" for name, phys, logical in rows)


def export_dir(bundle: Bundle, folder: str | Path, *, flat: bool = False,
               vta_config: str | Config | None = None) -> list[Path]:
    """Write ``bundle`` as a case directory (or a flat one); returns the files written."""
    folder = Path(folder)
    target = target_config(bundle, vta_config)
    dram, stream = _vta_image(bundle, target)
    insn_phys = VTA_BASE + bundle.insn_offset
    files: dict[str, bytes] = {INSN_FILE: stream}
    if flat:
        files[FLAT_IMAGE] = dram.tobytes()
        files[CSV_NAME] = _csv_text([("DRAM", VTA_BASE, VTA_BASE), ("INSN", insn_phys, insn_phys // 16)]).encode()
    else:
        files.update(_case_files(bundle, dram, target, insn_phys))
    return _replace_folder(folder, files)


def _replace_folder(folder: Path, files: dict[str, bytes]) -> list[Path]:
    """Make ``files`` the whole content of ``folder``, as one set: they are written into a new
    folder beside it, which then takes its place (an earlier one is renamed aside first and
    removed after). A reader sees the earlier set, no folder, or the new set, never a mix: files
    of an earlier export that this one does not write (its ``dram.bin``, which import reads
    first, or an object this bundle lacks) would be read with the new ones. A folder holding
    anything a case does not have (:data:`CASE_NAMES`) is refused, as is the current folder:
    the swap would lose the one and leave the shell in a removed folder."""
    folder = Path(folder).resolve()
    if folder.exists():
        if not folder.is_dir():
            raise VtaFormatError(f"{folder}: exists and is not a folder")
        others = sorted(p.name for p in folder.iterdir()
                        if p.name not in CASE_NAMES or p.is_symlink() or not p.is_file())
        if others:
            raise VtaFormatError(f"{folder}: holds {', '.join(others[:3])}{', ...' if len(others) > 3 else ''}, which "
                                 "a VTA case does not; an export replaces its folder, so name a new or empty one")
        if folder == Path.cwd().resolve():
            raise VtaFormatError(f"{folder}: is the current folder; an export replaces its folder, so name another")
        mode = folder.stat().st_mode & 0o7777
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o777 & ~umask
    folder.parent.mkdir(parents=True, exist_ok=True)
    new = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".new", dir=folder.parent))
    old = new.with_suffix(".old")
    try:
        for name, data in files.items():
            atomic_write(new / name, data)
        os.chmod(new, mode)
        if folder.exists():
            os.rename(folder, old)
        os.rename(new, folder)
    except BaseException:
        shutil.rmtree(new, ignore_errors=True)
        if old.exists() and not folder.exists():
            os.rename(old, folder)  # the earlier set back in place
        raise
    shutil.rmtree(old, ignore_errors=True)
    return [folder / name for name in files]


def _case_files(bundle: Bundle, dram: np.ndarray, target: Config, insn_phys: int) -> dict[str, bytes]:
    spans: dict[str, list[int]] = {}
    for name, sym in bundle.symbols.items():
        stem = name if name in _MEM_OF and _MEM_OF[name] == sym.mem else STEM_OF_MEM[sym.mem]
        lo, hi = sym.byte_range(bundle.config)
        if hi > lo:
            old = spans.get(stem, [lo, hi])
            spans[stem] = [min(old[0], lo), max(old[1], hi)]
    covered = np.zeros(dram.size, dtype=bool)
    covered[bundle.insn_offset:bundle.insn_offset + bundle.insn_count * 16] = True
    ordered = sorted((lo, hi, stem) for stem, (lo, hi) in spans.items())
    for (lo0, hi0, a), (lo1, _, b) in zip(ordered, ordered[1:]):
        if lo1 < hi0:
            raise VtaFormatError(f"the bundle's {a} and {b} data interleave in its image (a case file holds one "
                                 f"contiguous range): export it with --flat")
    for lo, hi, _ in ordered:
        if covered[lo:hi].any():
            raise VtaFormatError("the bundle's instructions lie inside a data range: export it with --flat")
        covered[lo:hi] = True
    stray = np.flatnonzero((dram != 0) & ~covered)
    if stray.size:
        raise VtaFormatError(f"image byte {int(stray[0])} is in no symbol, so no case file would hold it: "
                             "export the bundle with --flat")
    files, rows = {}, []
    for stem, mem, _ in CASE_FILES:
        if stem in spans:
            lo, hi = spans[stem]
            files[f"{stem}.bin"] = dram[lo:hi].tobytes()
            rows.append((_CSV_TYPE[stem], VTA_BASE + lo, (VTA_BASE + lo) // target.elem_bytes(mem)))
    rows.append(("INSN", insn_phys, insn_phys // 16))
    files[CSV_NAME] = _csv_text(rows).encode()
    for name, text in (bundle.meta.get("vta_files") or {}).items():
        if name in EXTRA_FILES:
            files[name] = base64.b64decode(text)
    return files

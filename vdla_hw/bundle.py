"""The program bundle every backend runs, and the builder that lays one out.

A bundle is a DRAM image, the byte offset and count of the instruction stream inside it, and
the configuration. Inputs, weights, uops, bias and outputs live in the image at element
indices recorded as named symbols, so nobody computes addresses by hand.

On disk (``.npz``; keys documented in the README):

=============  ===============================================================================
key            contents
=============  ===============================================================================
format         ``"vdla-bundle"`` (str)
version        bundle format version (int)
dram           the DRAM image (uint8, 1-D)
insn_offset    byte offset of the first instruction in ``dram`` (multiple of 16)
insn_count     number of 16-byte instructions
config         the configuration as JSON (``Config.to_json``)
fingerprint    the configuration fingerprint (checked against ``config`` on load)
symbols        JSON: name -> {"mem", "index" (element index), "count", "shape"}
meta           JSON: free-form description written by the producer (compiler, assembler)
=============  ===============================================================================
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vdla_hw import isa
from vdla_hw.config import MEM_TYPES, Config, load_config
from vdla_hw.presets import PRESETS
from vdla_hw.errors import BundleError, VdlaError
from vdla_hw.files import atomic_write, json_loads
from vdla_hw.limits import MAX_DRAM_BYTES, mib
from vdla_hw.npyfile import read_npz

FORMAT = "vdla-bundle"
FORMAT_VERSION = 1
KEYS = ("format", "version", "dram", "insn_offset", "insn_count", "config", "fingerprint", "symbols", "meta")
# Every allocation starts on this byte boundary: a multiple of every element size up to 256 B
# would waste space for big weights, so allocations align to max(element bytes, ALIGN).
ALIGN = 64


@dataclass
class Symbol:
    """A named array in the DRAM image: ``count`` elements of memory type ``mem`` from ``index``."""

    mem: str
    index: int
    count: int
    shape: tuple[int, ...]

    def byte_range(self, config: Config) -> tuple[int, int]:
        size = config.elem_bytes(self.mem)
        return self.index * size, (self.index + self.count) * size


# What the bytes a driver moves between host and device are, by category (driver.session counts
# them; the executor and the reports sum them in this order).
BYTE_CATEGORIES = ("weights", "uops", "insns", "activations_in", "activations_out", "other")


@dataclass
class Bundle:
    """A program ready to run: DRAM image, instruction stream location, configuration."""

    dram: np.ndarray
    insn_offset: int
    insn_count: int
    config: Config
    symbols: dict[str, Symbol] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        self.dram = np.ascontiguousarray(self.dram, dtype=np.uint8).reshape(-1)
        self.check()

    def check(self, where: str = "bundle") -> None:
        """Raise BundleError unless the instruction stream and symbols lie inside the image."""
        if self.insn_offset < 0 or self.insn_offset % self.config.insn_bytes:
            raise BundleError(where, f"insn_offset {self.insn_offset} is not a non-negative multiple of 16")
        if self.insn_count < 1:
            raise BundleError(where, f"insn_count {self.insn_count}: a program has at least its FINISH")
        end = self.insn_offset + self.insn_count * self.config.insn_bytes
        if end > self.dram.size:
            raise BundleError(where, f"instructions end at byte {end}, past the {self.dram.size}-byte DRAM image")
        if self.dram.size > MAX_DRAM_BYTES:
            raise BundleError(where, f"the DRAM image of {mib(self.dram.size)} exceeds the {mib(MAX_DRAM_BYTES)} "
                              "limit (vdla_hw/limits.py)")
        for name, sym in self.symbols.items():
            if sym.mem not in MEM_TYPES:
                raise BundleError(where, f"symbol {name!r} has unknown memory type {sym.mem!r}")
            lo, hi = sym.byte_range(self.config)
            if lo < 0 or sym.count < 0 or hi > self.dram.size:
                raise BundleError(where, f"symbol {name!r} ({sym.mem} {sym.index}+{sym.count}) lies outside the image")
            per = int(np.prod(self.config.elem_shape(sym.mem), dtype=np.int64))
            if any(d < 0 for d in sym.shape) or int(np.prod(sym.shape, dtype=object)) != sym.count * per:
                raise BundleError(where, f"symbol {name!r}: shape {sym.shape} does not hold {sym.count} {sym.mem} "
                                  f"elements of {per} values")

    @property
    def insn_bytes(self) -> bytes:
        start = self.insn_offset
        return self.dram[start:start + self.insn_count * self.config.insn_bytes].tobytes()

    def insns(self) -> list[isa.Insn]:
        """The decoded instruction stream (EncodingError names the bad instruction)."""
        return isa.decode_program(self.insn_bytes, self.config)

    def with_dram(self, dram: np.ndarray) -> Bundle:
        """The same program, symbols and meta over another image (a run's final image, or inputs
        written into a prebuilt bundle)."""
        return Bundle(dram=dram, insn_offset=self.insn_offset, insn_count=self.insn_count, config=self.config,
                      symbols=self.symbols, meta=self.meta)

    def input_bytes(self, name: str, packed: np.ndarray, where: str) -> tuple[int, np.ndarray]:
        """(byte offset, raw bytes) of ``packed`` written as the input symbol ``name``; VdlaError
        (naming ``where``) if there is no such symbol or ``packed`` is not exactly its size."""
        if name not in self.symbols:
            raise VdlaError(f"{where}: the bundle has no input symbol {name!r}")
        lo, hi = self.symbols[name].byte_range(self.config)
        raw = np.ascontiguousarray(packed).view(np.uint8).reshape(-1)
        if raw.size != hi - lo:
            raise VdlaError(f"{where}: input of {raw.size} bytes does not fit the bundle's {name!r} symbol "
                            f"({hi - lo} bytes); the bundle is for another graph")
        return lo, raw

    def read(self, name: str, dram: np.ndarray | None = None) -> np.ndarray:
        """The symbol ``name`` as a typed array of its shape, from ``dram`` (default: this image)."""
        if name not in self.symbols:
            raise VdlaError(f"bundle has no symbol {name!r} (symbols: {', '.join(self.symbols) or 'none'})")
        sym = self.symbols[name]
        lo, hi = sym.byte_range(self.config)
        image = self.dram if dram is None else dram
        return image[lo:hi].view(self.config.elem_dtype(sym.mem)).reshape(sym.shape).copy()

    # --- files ----------------------------------------------------------------------------
    def save(self, path) -> None:
        """Write the bundle file to ``path``, whole or not at all (a temporary name renamed onto
        it: :func:`vdla_hw.files.atomic_write`), or to an open binary file."""
        if hasattr(path, "write"):
            self._write(path)
            return
        try:
            atomic_write(path, self._write)
        except OSError as err:  # name the bundle, not the temporary file beside it
            raise OSError(err.errno, err.strerror or str(err), str(path)) from None

    def to_bytes(self) -> bytes:
        """The bundle file's bytes (what :meth:`save` writes; :meth:`from_bytes` reads them)."""
        buf = io.BytesIO()
        self._write(buf)
        return buf.getvalue()

    def _write(self, fh) -> None:
        symbols = {k: {"mem": s.mem, "index": s.index, "count": s.count, "shape": list(s.shape)}
                   for k, s in self.symbols.items()}
        np.savez_compressed(
            fh, format=np.array(FORMAT), version=np.array(FORMAT_VERSION), dram=self.dram,
            insn_offset=np.array(self.insn_offset, dtype=np.int64),
            insn_count=np.array(self.insn_count, dtype=np.int64),
            config=np.array(self.config.to_json()), fingerprint=np.array(self.config.fingerprint),
            symbols=np.array(json.dumps(symbols)), meta=np.array(json.dumps(self.meta)))

    @classmethod
    def load(cls, path: str | Path, config: str | Config | None = None) -> Bundle:
        """Read a bundle file; every defect is a BundleError naming the file and the key.

        ``config`` (optional) must match the bundle's own configuration fingerprint.
        """
        return cls._from_arrays(read_npz(path, str(path)), str(path), config)

    @classmethod
    def from_bytes(cls, data: bytes, where: str, config: str | Config | None = None) -> Bundle:
        """A bundle from the bytes of a bundle file (``where`` names it in errors)."""
        return cls._from_arrays(read_npz(data, where), where, config)

    @classmethod
    def _from_arrays(cls, data: dict[str, np.ndarray], where: str, config) -> Bundle:
        for key in ("format", "version", "dram", "insn_offset", "insn_count", "config"):
            if key not in data:
                raise BundleError(where, f"missing key {key!r} (a bundle has {', '.join(KEYS)})")
        if data["format"].shape != () or str(data["format"]) != FORMAT:
            raise BundleError(where, f"key 'format' is {_short(data['format'])}, not {FORMAT!r}: not a program bundle")
        if data["version"].shape != () or data["version"].dtype.kind not in "iu" or int(data["version"]) != FORMAT_VERSION:
            raise BundleError(where, f"bundle format version {_short(data['version'])}; this vdla reads version "
                              f"{FORMAT_VERSION} (rebuild the bundle with this vdla)")
        dram = data["dram"]
        if dram.dtype != np.uint8 or dram.ndim != 1:
            raise BundleError(where, f"key 'dram' must be a 1-D uint8 array, got {dram.dtype} {dram.shape}")
        text = str(data["config"]) if data["config"].shape == () else ""
        if not (text.lstrip().startswith("{") or text in PRESETS):
            raise BundleError(where, "key 'config' must hold the configuration as JSON (Config.to_json)")
        try:
            own = load_config(text)
        except VdlaError as err:
            raise BundleError(where, f"key 'config': {err}") from None
        if "fingerprint" in data and (data["fingerprint"].shape != () or str(data["fingerprint"]) != own.fingerprint):
            raise BundleError(where, f"fingerprint {_short(data['fingerprint'])} does not match its config "
                              f"({own.fingerprint})")
        if config is not None:
            wanted = load_config(config)
            if wanted.fingerprint != own.fingerprint:
                raise BundleError(where, f"bundle was built for configuration {own.fingerprint} ({own.name}), "
                                  f"not {wanted.fingerprint} ({wanted.name}); recompile it for this configuration")
        texts = {}
        for key in ("symbols", "meta"):
            if key in data and (data[key].shape != () or data[key].dtype.kind != "U"):
                raise BundleError(where, f"key {key!r} must hold a JSON text, got {data[key].dtype} {data[key].shape}")
            try:
                texts[key] = json_loads(str(data[key]) if key in data else "{}", f"key {key!r}")
            except VdlaError as err:  # nested too deeply, an integer of thousands of digits, ...
                raise BundleError(where, str(err)) from None
        try:
            symbols = {str(k): Symbol(str(v["mem"]), int(v["index"]), int(v["count"]), tuple(int(d) for d in v["shape"]))
                       for k, v in texts["symbols"].items()}
            meta = texts["meta"]
            if not isinstance(meta, dict):
                raise TypeError("meta is not a JSON object")
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise BundleError(where, f"keys 'symbols'/'meta' are not valid bundle JSON ({err})") from None
        for key in ("insn_offset", "insn_count"):
            if data[key].shape != () or data[key].dtype.kind not in "iu":
                raise BundleError(where, f"key {key!r} must be a scalar integer")
        bundle = cls.__new__(cls)
        bundle.dram, bundle.config, bundle.symbols, bundle.meta = dram.copy(), own, symbols, meta
        bundle.insn_offset, bundle.insn_count = int(data["insn_offset"]), int(data["insn_count"])
        bundle.check(where)
        return bundle


def _short(value: np.ndarray) -> str:
    text = repr(value.item()) if value.shape == () else f"an array of shape {value.shape}"
    return text if len(text) < 60 else text[:57] + "..."


class BundleBuilder:
    """Lays out arrays, micro-op tables and an instruction stream into a :class:`Bundle`.

    ``alloc``/``array``/``uops`` return the element index to put in instructions' ``dram_base``;
    ``emit`` appends an instruction and returns its index. ``build`` places the instructions
    after the data and encodes them.
    """

    def __init__(self, config: Config | str | None = None):
        self.config = load_config(config)
        self._chunks: list[tuple[int, bytes]] = []
        self._size = 0
        self.symbols: dict[str, Symbol] = {}
        self.insns: list[isa.Insn] = []
        self.meta: dict = {}

    def check_count(self, name: str, mem: str, count: int) -> None:
        """Raise VdlaError unless ``count`` elements of ``mem`` can still be placed (before anyone
        allocates them): a known memory type, a count >= 0, the image within MAX_DRAM_BYTES."""
        if mem not in MEM_TYPES:
            raise VdlaError(f"symbol {name!r}: unknown memory type {mem!r} (known: {', '.join(MEM_TYPES)})")
        if count < 0:
            raise VdlaError(f"symbol {name!r}: element count {count} is negative")
        end = self._size + count * self.config.elem_bytes(mem)
        if end > MAX_DRAM_BYTES:
            raise VdlaError(f"symbol {name!r}: {count} {mem} elements would grow the DRAM image to {mib(end)}, past "
                            f"the {mib(MAX_DRAM_BYTES)} limit (vdla_hw/limits.py)")

    def _place(self, name: str, mem: str, count: int, shape: tuple[int, ...], payload: bytes | None) -> int:
        self.check_count(name, mem, count)
        if name in self.symbols:
            raise VdlaError(f"symbol {name!r} is defined twice")
        size = self.config.elem_bytes(mem)
        align = max(size, ALIGN)
        start = -(-self._size // align) * align
        self._size = start + count * size
        if payload is not None:
            self._chunks.append((start, payload))
        self.symbols[name] = Symbol(mem, start // size, count, shape)
        return start // size

    def alloc(self, name: str, mem: str, count: int) -> int:
        """Reserve ``count`` zeroed elements of ``mem``; returns their element index."""
        return self._place(name, mem, int(count), (int(count), *self.config.elem_shape(mem)), None)

    def array(self, name: str, mem: str, data) -> int:
        """Place ``data`` as elements of ``mem`` (shape (n, *element shape) or anything of n*size values)."""
        elem_shape = self.config.elem_shape(mem)
        dtype = np.dtype(self.config.elem_dtype(mem))
        arr = np.asarray(data)
        per = int(np.prod(elem_shape))
        if arr.size % per:
            raise VdlaError(f"symbol {name!r}: {arr.size} values are not whole {mem} elements of {per}")
        info = np.iinfo(dtype)
        if arr.size and (arr.min() < info.min or arr.max() > info.max):
            raise VdlaError(f"symbol {name!r}: values outside {dtype.name} range for {mem}")
        typed = arr.astype(dtype).reshape(-1, *elem_shape)
        return self._place(name, mem, typed.shape[0], arr.shape if arr.ndim > 1 else typed.shape, typed.tobytes())

    def uops(self, name: str, rows) -> int:
        """Place a micro-op table given as (dst_idx, src_idx, wgt_idx) rows; returns its uop index."""
        words = isa.encode_uops(rows, self.config)
        return self._place(name, "uop", len(words), (len(words), 1), words.tobytes())

    def emit(self, kind: str | isa.Insn, **fields: int) -> int:
        """Append an instruction (an Insn, or a kind and its fields); returns its index."""
        insn = kind if isinstance(kind, isa.Insn) else isa.Insn(kind, **fields)
        isa.encode(insn, self.config, len(self.insns))  # fail now, naming the instruction and field
        self.insns.append(insn)
        return len(self.insns) - 1

    def build(self, add_finish: bool = True) -> Bundle:
        """The bundle; appends FINISH unless the stream ends with one or ``add_finish`` is False."""
        if add_finish and (not self.insns or self.insns[-1].kind != "FINISH"):
            self.emit("FINISH")
        if not self.insns:
            raise VdlaError("the program has no instructions (it needs at least FINISH)")
        insn_offset = -(-self._size // ALIGN) * ALIGN
        stream = isa.encode_program(self.insns, self.config)
        dram = np.zeros(insn_offset + len(stream), dtype=np.uint8)
        for start, payload in self._chunks:
            dram[start:start + len(payload)] = np.frombuffer(payload, dtype=np.uint8)
        dram[insn_offset:] = np.frombuffer(stream, dtype=np.uint8)
        return Bundle(dram=dram, insn_offset=insn_offset, insn_count=len(self.insns), config=self.config,
                      symbols=dict(self.symbols), meta=dict(self.meta))

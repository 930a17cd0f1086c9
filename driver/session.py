"""A loaded model: program bundles resident in device buffers, run again and again.

What VTA's runtime does (weights and activations in buffers allocated once; per run only what
changes is copied), for our bundles, whose weights, micro-ops and instruction streams are all
static: :meth:`LoadedModel.load` allocates one buffer per bundle and writes its whole image
once; :meth:`LoadedModel.run` writes only the byte ranges of the input symbols it is given,
starts the program with DRAM_BASE at the bundle's buffer (every address of a program is relative
to DRAM_BASE, ``vdla_hw/regmap.py``), and reads back only the byte ranges of the output symbols
asked for. Each layer keeps its own buffer, so its image offsets, and with them its bursts and
cycles, are those the compiler planned.

Bytes are counted by category (:data:`CATEGORIES`), separately for the loads and for the runs:

- ``weights``: every static data symbol of the image that is neither an input nor an output
  (weights, bias, per-channel shifts);
- ``uops``: symbols of memory type ``uop``;  ``insns``: the instruction stream;
- ``activations_in`` / ``activations_out``: input symbols written / output symbols read;
- ``other``: the rest of an image written at load (input and output regions, alignment gaps),
  so that the buffer starts equal to the bundle's image.

A run of a loaded model writes only ``activations_in`` and reads only ``activations_out``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import numpy as np

from vdla_hw.bundle import BYTE_CATEGORIES, Bundle
from vdla_hw.errors import VdlaError

CATEGORIES = BYTE_CATEGORIES


# The files of a package that change from run to run (not part of the loaded model).
RUN_FILES = ("input.npy",)


def model_digest(files: dict[str, bytes], manifest: dict | None = None) -> str:
    """The identity of a package's loaded model. ``manifest``: the package's manifest as
    ``driver.package.check`` returned it (its file list tied to the bytes of ``files``): the
    SHA-256 of the files it lists except the run's (:data:`RUN_FILES`), plus its fields but the
    file list (model, configuration, fingerprint) as canonical JSON. Not the manifest's own bytes:
    its file list names the input's hash, so a package differing only in its input has the same
    digest, and a server keeps the model loaded (weights, micro-ops, programs) across inputs.
    Without a manifest, every file of ``files`` but the run's is hashed."""
    names = (manifest or {}).get("files", files)
    h = hashlib.sha256()
    for name in sorted(names):
        if name not in RUN_FILES:
            h.update(f"{name}\0{len(files[name])}\0".encode())
            h.update(files[name])
    fields = {key: value for key, value in (manifest or {}).items() if key != "files"}
    h.update(b"\0manifest\0" + json.dumps(fields, sort_keys=True).encode())
    return h.hexdigest()


def zero_counts() -> dict[str, int]:
    return dict.fromkeys(CATEGORIES, 0)


def add_counts(total: dict[str, int], more: dict[str, int]) -> dict[str, int]:
    """``total`` += ``more``, category by category (returns ``total``)."""
    for key, value in more.items():
        total[key] = total.get(key, 0) + int(value)
    return total


def image_categories(bundle: Bundle, inputs, outputs) -> dict[str, int]:
    """The bundle's image bytes by category, ``inputs``/``outputs`` (symbol names) counted as ``other``
    (at load they are placeholders: the runs write and read them)."""
    c = bundle.config
    counts = zero_counts()
    counts["insns"] = bundle.insn_count * c.insn_bytes
    for name, sym in bundle.symbols.items():
        lo, hi = sym.byte_range(c)
        if name in inputs or name in outputs:
            continue
        counts["uops" if sym.mem == "uop" else "weights"] += hi - lo
    counts["other"] = int(bundle.dram.size) - sum(counts.values())
    return counts


@dataclass
class Resident:
    """One bundle in its device buffer."""

    bundle: Bundle
    buffer: object
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]


@dataclass
class Moved:
    """Bytes moved between host and device, by category: at load, and by the runs."""

    load: dict = field(default_factory=zero_counts)
    runs: dict = field(default_factory=zero_counts)


class LoadedModel:
    """Bundles resident on ``device`` under names (``compiler.network.vdla_ops.bundle_key``: one
    per accelerator op, or per group of a grouped conv), ``key`` naming
    the model (a package digest; None: whoever holds the object owns it)."""

    def __init__(self, device, key: str | None = None):
        self.device, self.key = device, key
        self.resident: dict[str, Resident] = {}
        self.moved = Moved()

    def __contains__(self, name: str) -> bool:
        return name in self.resident

    def bundle(self, name: str) -> Bundle:
        return self.resident[name].bundle

    def load(self, name: str, bundle: Bundle, inputs, outputs) -> dict[str, int]:
        """Allocate a buffer for ``bundle`` and write its whole image once; ``inputs``/``outputs``
        are the symbols the runs will write/read. Returns the bytes written by category."""
        if name in self.resident:
            raise VdlaError(f"loaded model: {name!r} is loaded already")
        for symbol in (*inputs, *outputs):
            if symbol not in bundle.symbols:
                raise VdlaError(f"loaded model: bundle {name!r} has no symbol {symbol!r}")
        self.device.check_bundle(bundle)
        buffer = self.device.allocate(bundle.dram.size)
        try:
            self.device.write(buffer, bundle.dram)
        except BaseException:
            self.device.free(buffer)
            raise
        self.resident[name] = Resident(bundle, buffer, tuple(inputs), tuple(outputs))
        counts = image_categories(bundle, inputs, outputs)
        add_counts(self.moved.load, counts)
        return counts

    def run(self, name: str, writes: dict[str, np.ndarray], *, timeout_s: float | None = None,
            timeout_cycles: int | None = None):
        """Write ``writes`` (symbol -> packed array, exactly the symbol's bytes) into the resident
        bundle ``name``, run it and read its output symbols back. Returns (RunResult whose
        ``dram`` is an image of the bundle's size holding only the output symbols' bytes (zero
        elsewhere), bytes moved by category)."""
        res = self.resident[name]
        c = res.bundle.config
        counts = zero_counts()
        for symbol in res.inputs:
            if symbol not in writes:
                raise VdlaError(f"loaded model: run of {name!r} without its input {symbol!r}")
        for symbol, packed in writes.items():
            if symbol not in res.inputs:
                raise VdlaError(f"loaded model: {symbol!r} is not an input of {name!r} ({', '.join(res.inputs)})")
            lo, raw = res.bundle.input_bytes(symbol, packed, f"node {name!r}")
            self.device.write(res.buffer, raw, lo)
            counts["activations_in"] += raw.size
        try:
            self.device.start(res.bundle, res.buffer)
            result = self.device.wait(timeout_s=timeout_s, timeout_cycles=timeout_cycles, read_back=False)
        except BaseException:
            self.unload(name)  # a failed program may have written anywhere in its buffer
            raise
        image = np.zeros(res.bundle.dram.size, dtype=np.uint8)
        for symbol in res.outputs:
            lo, hi = res.bundle.symbols[symbol].byte_range(c)
            image[lo:hi] = self.device.read(res.buffer, lo, hi - lo)
            counts["activations_out"] += hi - lo
        result.dram = image
        add_counts(self.moved.runs, counts)
        return result, counts

    def unload(self, name: str) -> None:
        res = self.resident.pop(name, None)
        if res is not None:
            self.device.free(res.buffer)

    def close(self) -> None:
        """Free every buffer."""
        for name in list(self.resident):
            self.unload(name)

"""Disassembler: a bundle as assembly text that :func:`vdla_hw.asm.assemble` turns back into it.

:func:`disassemble` prints every field a bundle file holds, so for every bundle ``b`` whose
symbol names are words, ``assemble(disassemble(b)).to_bytes() == b.to_bytes()``. The directives
it writes are described in :mod:`vdla_hw.asm` and docs/asm.md; large images stay readable as
hex rows of :data:`ROW_BYTES` with zero rows left out and repeated rows counted.
"""

from __future__ import annotations

import json

import numpy as np

from vdla_hw import isa
from vdla_hw.annotate import explain
from vdla_hw.asm import NAME, SYMBOL, assemble_insn, format_insn
from vdla_hw.bundle import Bundle
from vdla_hw.config import MEM_TYPES, Config, load_config
from vdla_hw.errors import AsmError, EncodingError, VdlaError
from vdla_hw.presets import PRESETS

ROW_BYTES = 32                               # bytes per .bytes row
UOPS_PER_LINE = 8                            # micro-ops per line of a .uops table


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of every run of True in ``mask``."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], mask.view(np.int8), [0]))))
    return list(zip(edges[0::2].tolist(), edges[1::2].tolist()))


def _byte_rows(dram: np.ndarray, done: np.ndarray, lo: int, hi: int, width: int) -> list[str]:
    """``.bytes`` rows of the not yet printed, non-zero bytes of ``dram[lo:hi]`` (marked printed):
    rows of ROW_BYTES from the start of each stretch, zero rows left out, repeated rows as ``*N``."""
    lines = []
    for a, b in _runs(~done[lo:hi]):
        a, b = a + lo, b + lo
        done[a:b] = True
        chunk = dram[a:b]
        full = (b - a) // ROW_BYTES
        rows = chunk[:full * ROW_BYTES].reshape(full, ROW_BYTES)
        nonzero = np.flatnonzero(rows.any(axis=1))
        same = np.zeros(full, dtype=bool)
        same[1:] = (rows[1:] == rows[:-1]).all(axis=1)
        i = 0
        while i < len(nonzero):
            j = i + 1
            while j < len(nonzero) and nonzero[j] == nonzero[j - 1] + 1 and same[nonzero[j]]:
                j += 1
            r = int(nonzero[i])
            lines.append(f".bytes 0x{a + r * ROW_BYTES:0{width}x} {rows[r].tobytes().hex()}"
                         + (f" *{j - i}" if j - i > 1 else ""))
            i = j
        tail = chunk[full * ROW_BYTES:]
        if tail.any():
            lines.append(f".bytes 0x{a + full * ROW_BYTES:0{width}x} {tail.tobytes().hex()}")
    return lines


def _uop_lines(name: str, options: str, rows: np.ndarray) -> list[str]:
    items = [f"{d},{s},{w}" for d, s, w in rows.tolist()]
    if len(items) <= UOPS_PER_LINE:
        return [f".uops {name} {options} {' '.join(items)}"]
    lines = [f".uops {name} {options} \\"]
    for i in range(0, len(items), UOPS_PER_LINE):
        more = " \\" if i + UOPS_PER_LINE < len(items) else ""
        lines.append("    " + " ".join(items[i:i + UOPS_PER_LINE]) + more)
    return lines


def _label(insn: isa.Insn, labels: dict[str, list[tuple[int, int, str]]]) -> str | None:
    """A LOAD's or STORE's ``dram_base`` as the symbol holding that element (``name+off``), or None."""
    if insn.kind not in ("LOAD", "STORE"):
        return None
    base = insn.dram_base
    for lo, hi, name in labels.get(MEM_TYPES[insn.memory_type], ()):
        if lo <= base < hi:
            return name if base == lo else f"{name}+{base - lo}"
    return None


def _labelled(text: str, insn: isa.Insn, label: str | None) -> str:
    """``text`` with a LOAD/STORE's ``dram=N`` written as ``label``, when there is one."""
    if label is None:
        return text
    return " ".join(f"dram={label}" if w == f"dram={insn.dram_base}" else w for w in text.split(" "))


def _insn_line(word: bytes, config: Config, index: int) -> tuple[str, isa.Insn | None, str]:
    """(assembly, decoded instruction or None, note) of one 16-byte instruction: its text form if
    that assembles back to the same bytes, else ``.insn`` with the raw word."""
    raw = f".insn 0x{int.from_bytes(word, 'little'):032x}"
    try:
        insn = isa.decode(word, config, index)
    except EncodingError as err:
        return raw, None, f"  undecodable: {err.field}: {err.why}"
    text = format_insn(insn, config)
    try:
        same = assemble_insn(text, config) == word
    except AsmError:
        same = False
    if not same:
        return raw, None, f"  {text}, and bits outside its fields"
    return text, insn, ""


def disassemble(bundle: Bundle, annotate: bool = False) -> str:
    """The whole bundle as assembly text: ``assemble`` of it writes the same bundle file.
    ``annotate``: each instruction's comment also says what it does
    (:func:`vdla_hw.annotate.explain`); the text assembles to the same bundle either way.

    Configuration (preset name or inline JSON), image size, meta, every symbol in order
    (``.uops`` for a micro-op table, else ``.data`` and its non-zero bytes as ``.bytes`` rows),
    non-zero bytes outside the symbols, then ``.text`` and one instruction per line (``.insn``
    for a word the text form cannot hold). A VdlaError names a symbol whose name is not a word.
    """
    config = bundle.config
    dram = bundle.dram
    size = dram.size
    first, end = bundle.insn_offset, bundle.insn_offset + bundle.insn_count * config.insn_bytes
    preset = config.name in PRESETS and load_config(config.name).to_json() == config.to_json()
    lines = [f"# vdla disasm of a bundle for configuration {config.fingerprint}:",
             f"# {bundle.insn_count} instructions at byte {first} of a {size}-byte DRAM image",
             f".config {config.name if preset else config.to_json()}",
             f".image {size}",
             f".meta {json.dumps(bundle.meta)}"]
    done = np.zeros(size, dtype=bool)
    done[first:end] = True  # the instruction stream is printed as instructions
    width = max(4, len(f"{size:x}"))
    labels: dict[str, list[tuple[int, int, str]]] = {}
    for name, sym in bundle.symbols.items():
        if not NAME.fullmatch(name):
            raise VdlaError(f"symbol {name!r} cannot be written as assembly (a name holds no space, '#' or '\\')")
        if SYMBOL.fullmatch(name):
            labels.setdefault(sym.mem, []).append((sym.index, sym.index + sym.count, name))
        lo, hi = sym.byte_range(config)
        default = (sym.count, *config.elem_shape(sym.mem))
        options = f"at={sym.index}" + ("" if tuple(sym.shape) == default else f" shape={','.join(map(str, sym.shape))}")
        if sym.mem == "uop" and sym.count and not done[lo:hi].any():
            words = dram[lo:hi].view("<u4")
            rows = isa.decode_uops(words, config)
            if np.array_equal(isa.encode_uops(rows, config), words):
                lines += _uop_lines(name, options, rows)
                done[lo:hi] = True
                continue
        lines.append(f".data {name} {sym.mem} {sym.count} {options}")
        lines += _byte_rows(dram, done, lo, hi, width)
    rest = _byte_rows(dram, done, 0, size, width)
    if rest:
        lines += ["# bytes outside every symbol", *rest]
    lines.append(f".text {first}")
    stream = bundle.insn_bytes
    for index in range(bundle.insn_count):
        text, insn, note = _insn_line(stream[16 * index:16 * index + 16], config, index)
        if insn is not None:
            label = _label(insn, labels)
            text = _labelled(text, insn, label)
            if annotate:
                note += f"  {explain(insn, config, label)}"
        lines.append(f"{text:<72} # {index}{note}")
    return "\n".join(lines) + "\n"

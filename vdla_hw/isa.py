"""The instruction set: one field table per instruction kind, and everything derived from it.

Each kind's fields are listed once in :func:`field_table` (docs/spec.md sections 3-4, VTA's packing:
fields packed from bit 0 upward; a field that would cross bit 64 starts at bit 64). The bit
layout, encoding, decoding, the rules of :func:`check_insn`, the assembler's text form
(``vdla_hw.asm``) and the RTL's field slices all come from this table.

An instruction is an :class:`Insn`: its kind and a value for every field of the kind except
``opcode``. Unused bits of a 128-bit instruction are ignored on decode.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from vdla_hw.alu import NAMES as ALU_NAMES
from vdla_hw.errors import ConfigError, EncodingError, ProgramError


class Config(Protocol):
    """What the ISA reads of a configuration (``vdla_hw.config.Config`` is the one there is). The
    configuration builds on this module (its constructor checks that every layout fits), so this
    module does not import it, not even for type checking: the spec's imports have no cycle."""

    name: str
    params: Mapping[str, int]

    def index_bits(self, mem: str) -> int: ...


# The memory types of the ISA, by their encoding (docs/spec.md section 3).
MEM_TYPES = ("uop", "wgt", "inp", "acc", "out")

INSN_BITS = 128
WORD_BITS = 64
OPCODES = {"LOAD": 0, "STORE": 1, "GEMM": 2, "FINISH": 3, "ALU": 4}
KINDS = {code: kind for kind, code in OPCODES.items()}
ALU_OPS = ALU_NAMES  # by alu_opcode: the ALU table (vdla_hw/alu.py)
FLAGS = ("pop_prev", "pop_next", "push_prev", "push_next")
ITER_BITS = 14

# The module topology, declared once (docs/spec.md section 1): fetch routes each instruction to one
# of the executing modules, a chain; each pair of neighbours has a token queue either way, named
# by their initials (load -> compute: "l2c"), numbered in this order (l2c, c2l, c2s, s2c).
MODULES = ("fetch", "load", "compute", "store")
EXEC_MODULES = MODULES[1:]
# token queue -> (the module that pushes it, the module that pops it)
TOKEN_ENDS = {f"{a[0]}2{b[0]}": (a, b) for pair in zip(EXEC_MODULES, EXEC_MODULES[1:])
              for a, b in (pair, pair[::-1])}
TOKEN_QUEUES = tuple(TOKEN_ENDS)


def _flag_queues() -> dict[tuple[str, str], str]:
    """(module, flag) -> the token queue that flag pops or pushes: a module pushes to and pops
    from its prev (earlier in the chain) or next neighbour; in module, then FLAGS order."""
    def side(module, peer):
        return "next" if EXEC_MODULES.index(peer) > EXEC_MODULES.index(module) else "prev"
    table = {}
    for queue, (pusher, popper) in TOKEN_ENDS.items():
        table[pusher, f"push_{side(pusher, popper)}"] = queue
        table[popper, f"pop_{side(popper, pusher)}"] = queue
    return dict(sorted(table.items(), key=lambda kv: (MODULES.index(kv[0][0]), FLAGS.index(kv[0][1]))))


FLAG_QUEUE = _flag_queues()


@dataclass(frozen=True)
class Field:
    """One field of an instruction: ``width`` bits at bit ``lo`` of the 128-bit word."""

    name: str
    width: int
    lo: int = 0
    signed: bool = False

    @property
    def low(self) -> int:
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def high(self) -> int:
        return (1 << (self.width - 1)) - 1 if self.signed else (1 << self.width) - 1


def field_table(kind: str, config: Config) -> list[tuple[str, int, bool]]:
    """The fields of ``kind`` in encoding order as (name, bits, signed): the one source of the ISA."""
    header = [("opcode", 3, False)] + [(flag, 1, False) for flag in FLAGS]
    uop_bits = config.index_bits("uop")
    acc, inp, wgt = config.index_bits("acc"), config.index_bits("inp"), config.index_bits("wgt")
    loops = [("reset", 1, False), ("uop_bgn", uop_bits, False), ("uop_end", uop_bits + 1, False),
             ("iter_out", ITER_BITS, False), ("iter_in", ITER_BITS, False)]
    if kind in ("LOAD", "STORE"):
        return header + [
            ("memory_type", 3, False), ("sram_base", 16, False), ("dram_base", 32, False),
            ("y_size", 16, False), ("x_size", 16, False), ("x_stride", 16, False),
            ("y_pad_top", 4, False), ("y_pad_bottom", 4, False),
            ("x_pad_left", 4, False), ("x_pad_right", 4, False)]
    if kind == "GEMM":
        return header + loops + [
            ("dst_factor_out", acc, False), ("dst_factor_in", acc, False),
            ("src_factor_out", inp, False), ("src_factor_in", inp, False),
            ("wgt_factor_out", wgt, False), ("wgt_factor_in", wgt, False)]
    if kind == "ALU":
        return header + loops + [
            ("dst_factor_out", acc, False), ("dst_factor_in", acc, False),
            ("src_factor_out", acc, False), ("src_factor_in", acc, False),
            ("alu_opcode", 3, False), ("use_imm", 1, False), ("imm", 16, True)]
    if kind == "FINISH":
        return header
    raise ValueError(f"unknown instruction kind {kind!r}")


def uop_table(config: Config) -> list[tuple[str, int, bool]]:
    """Fields of a 32-bit micro-op: dst (ACC index), src (INP or ACC index), wgt (WGT index)."""
    acc, inp, wgt = config.index_bits("acc"), config.index_bits("inp"), config.index_bits("wgt")
    return [("dst_idx", acc, False), ("src_idx", max(acc, inp), False), ("wgt_idx", wgt, False)]


def _place(table, total_bits: int, what: str, config: Config) -> dict[str, Field]:
    """Lay fields out from bit 0; a field crossing a 64-bit word boundary moves to the next word."""
    fields, pos = {}, 0
    for name, width, signed in table:
        if pos // WORD_BITS != (pos + width - 1) // WORD_BITS:
            pos = (pos // WORD_BITS + 1) * WORD_BITS
        fields[name] = Field(name, width, pos, signed)
        pos += width
    if pos > total_bits:
        keys = ("LOG_UOP_BUFF_SIZE", "LOG_INP_BUFF_SIZE", "LOG_WGT_BUFF_SIZE", "LOG_ACC_BUFF_SIZE")
        widths = " + ".join(f"{name} {width}" for name, width, _ in table if width > 1)
        raise ConfigError("/".join(keys), "/".join(str(config.params[k]) for k in keys),
                          f"{what} needs {pos} bits ({widths}) but has {total_bits}; "
                          "smaller buffers give narrower index fields", config.name)
    return fields


@functools.lru_cache(maxsize=64)
def layout(kind: str, config: Config) -> dict[str, Field]:
    """Field name -> :class:`Field` with bit positions, for one instruction kind."""
    return _place(field_table(kind, config), INSN_BITS, f"{kind} instruction", config)


@functools.lru_cache(maxsize=64)
def uop_layout(config: Config) -> dict[str, Field]:
    return _place(uop_table(config), 32, "micro-op", config)


def check_layout(config: Config) -> None:
    """Raise ConfigError unless every instruction kind and the micro-op fit their widths."""
    _place(uop_table(config), 32, "micro-op", config)
    for kind in OPCODES:
        _place(field_table(kind, config), INSN_BITS, f"{kind} instruction", config)


_ALL_FIELDS = ("memory_type", "sram_base", "dram_base", "y_size", "x_size", "x_stride", "y_pad_top",
               "y_pad_bottom", "x_pad_left", "x_pad_right", "reset", "uop_bgn", "uop_end", "iter_out",
               "iter_in", "dst_factor_out", "dst_factor_in", "src_factor_out", "src_factor_in",
               "wgt_factor_out", "wgt_factor_in", "alu_opcode", "use_imm", "imm", *FLAGS)


class Insn:
    """One decoded instruction: ``kind`` and a value per field (flags and fields default to 0).

    Fields are plain attributes (the given values in the instance, every ISA field's default 0
    on the class), so reading ``insn.iter_out`` in the simulator's loops is an ordinary
    attribute read, never a ``__getattr__`` call; ``fields`` keeps the values as given
    (encoding, equality and the text form use it)."""

    def __init__(self, kind: str, **fields: int):
        if kind not in OPCODES:
            raise EncodingError(str(kind), "opcode", f"unknown instruction kind (known: {', '.join(OPCODES)})")
        self._fill(kind, fields)

    def _fill(self, kind: str, fields: dict) -> None:
        memory_type = fields.get("memory_type", 0)
        known = isinstance(memory_type, (int, np.integer)) and 0 <= memory_type < len(MEM_TYPES)
        mem = MEM_TYPES[memory_type] if known else None
        _adopt(self, _variant(kind, mem), fields)

    # the field values as given: the instance's own attributes are exactly these
    fields = property(operator.attrgetter("__dict__"))

    def __setattr__(self, name, value):
        raise AttributeError("Insn is immutable; use replace()")

    def __reduce__(self):
        # an immutable object does not unpickle by setattr: rebuild from kind and fields
        return _rebuild_insn, (self.kind, self.fields)

    def replace(self, **changes: int) -> Insn:
        return Insn(self.kind, **{**self.fields, **changes})

    def __eq__(self, other):
        if not isinstance(other, Insn) or other.kind != self.kind:
            return False
        names = set(self.fields) | set(other.fields)
        mine, theirs = self.fields, other.fields
        return all(mine.get(n, 0) == theirs.get(n, 0) for n in names)

    def __hash__(self):
        return hash((self.kind, tuple(sorted((k, v) for k, v in self.fields.items() if v))))

    def __repr__(self):
        body = ", ".join(f"{k}={v}" for k, v in self.fields.items() if v)
        return f"Insn({self.kind}{', ' if body else ''}{body})"

    # ``kind``, ``mem`` (memory type name of a LOAD or STORE: 'uop', 'wgt', 'inp', 'acc', 'out';
    # None for a memory_type outside the ISA's) and ``module`` (the module that executes the
    # instruction: fetch routes it to that module's queue) are class attributes of the instance's
    # class, one subclass of Insn per (kind, mem) made by _variant, so an instruction's own
    # attributes are its fields alone, in one dict: decoding a stream builds one dict per
    # instruction and nothing else.


for _name in _ALL_FIELDS:  # the defaults every instruction reads for the fields it was not given
    setattr(Insn, _name, 0)
del _name


@functools.lru_cache(maxsize=None)
def _variant(kind: str, mem: str | None) -> type:
    """The subclass of Insn whose instances are ``kind`` instructions of memory type ``mem``."""
    module = "store" if kind == "STORE" else "load" if kind == "LOAD" and mem in ("inp", "wgt") else "compute"
    return type("Insn", (Insn,), {"__slots__": (), "__module__": __name__, "__qualname__": "Insn",
                                  "kind": kind, "mem": mem, "module": module})


_set = object.__setattr__


def _adopt(insn: Insn, cls: type, fields: dict) -> None:
    """Make ``insn`` an instance of ``cls`` whose attributes are ``fields`` (Insn is immutable
    to everyone else)."""
    _set(insn, "__class__", cls)
    _set(insn, "__dict__", fields)


def _rebuild_insn(kind: str, fields: dict) -> Insn:
    return Insn(kind, **fields)




def encode(insn: Insn, config: Config, index: int | None = None) -> bytes:
    """16 little-endian bytes of ``insn``; a value that does not fit its field is an EncodingError."""
    fields = layout(insn.kind, config)
    given = insn.fields
    for name in given:
        if name not in fields:
            raise EncodingError(insn.kind, name, f"not a field of {insn.kind} (fields: {', '.join(list(fields)[1:])})", index)
    word = OPCODES[insn.kind]
    for name, f in fields.items():
        if name == "opcode":
            continue
        value = given.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise EncodingError(insn.kind, name, f"value {value!r} is not an integer", index)
        if not f.low <= value <= f.high:
            raise EncodingError(insn.kind, name, f"value {value} does not fit {f.width} bits "
                                f"({'signed ' if f.signed else ''}range {f.low}..{f.high})", index)
        word |= (int(value) & ((1 << f.width) - 1)) << f.lo
    return word.to_bytes(16, "little")


def decode(data: bytes, config: Config, index: int | None = None) -> Insn:
    """The instruction in 16 little-endian bytes; an unknown opcode or memory type is an error."""
    if len(data) != 16:
        raise EncodingError("instruction", "length", f"{len(data)} bytes, expected 16", index,
                            error_bit="bad_opcode")
    word = int.from_bytes(data, "little")
    opcode = word & 0b111
    if opcode not in KINDS:
        raise EncodingError("instruction", "opcode", f"unknown opcode {opcode} (known: "
                            + ", ".join(f"{k}={v}" for k, v in OPCODES.items()) + ")", index, error_bit="bad_opcode")
    kind = KINDS[opcode]
    values = {}
    for name, f in layout(kind, config).items():
        if name == "opcode":
            continue
        value = (word >> f.lo) & ((1 << f.width) - 1)
        if f.signed and value >> (f.width - 1):
            value -= 1 << f.width
        values[name] = value
    if kind in ("LOAD", "STORE") and values["memory_type"] >= len(MEM_TYPES):
        raise EncodingError(kind, "memory_type", f"unknown memory type {values['memory_type']} "
                            f"(known: {', '.join(f'{m}={i}' for i, m in enumerate(MEM_TYPES))})", index,
                            error_bit="bad_memory_type")
    if kind == "ALU" and values["alu_opcode"] >= len(ALU_OPS):
        raise EncodingError(kind, "alu_opcode", f"unknown ALU opcode {values['alu_opcode']} "
                            f"(known: {', '.join(f'{m}={i}' for i, m in enumerate(ALU_OPS))})", index,
                            error_bit="bad_opcode")
    return Insn(kind, **values)


def encode_program(insns: list[Insn], config: Config) -> bytes:
    return b"".join(encode(insn, config, i) for i, insn in enumerate(insns))


def decode_program(data: bytes, config: Config) -> list[Insn]:
    """Every instruction of a stream, equal to :func:`decode` of each (vectorised per kind);
    the first bad instruction in program order raises :func:`decode`'s error."""
    if len(data) % 16:
        raise EncodingError("instruction stream", "length", f"{len(data)} bytes is not a multiple of 16",
                            error_bit="bad_opcode")
    n = len(data) // 16
    words = np.frombuffer(data, dtype="<u8").reshape(n, 2)  # (low, high) 64-bit words
    opcodes = words[:, 0] & 0b111
    bad = [np.flatnonzero(~np.isin(opcodes, list(KINDS)))]
    columns = {}
    for code, kind in KINDS.items():  # every instruction of one kind at once, field by field
        rows = np.flatnonzero(opcodes == code)
        if not rows.size:
            continue
        values = {}
        for name, f in layout(kind, config).items():
            if name == "opcode":
                continue
            v = ((words[rows, f.lo // WORD_BITS] >> np.uint64(f.lo % WORD_BITS))
                 & np.uint64((1 << f.width) - 1)).astype(np.int64)   # fields never cross a word
            if f.signed:
                v -= (v >> (f.width - 1)) << f.width
            values[name] = v
        if "memory_type" in values:
            bad.append(rows[values["memory_type"] >= len(MEM_TYPES)])
        if "alu_opcode" in values:
            bad.append(rows[values["alu_opcode"] >= len(ALU_OPS)])
        columns[kind] = (rows.tolist(), list(values), [v.tolist() for v in values.values()])
    first_bad = min((int(b[0]) for b in bad if b.size), default=-1)
    if first_bad >= 0:  # the one-instruction decoder names the error
        decode(data[16 * first_bad:16 * first_bad + 16], config, first_bad)
    out: list[Insn] = [None] * n  # type: ignore[list-item]
    new = object.__new__
    for kind, (rows, names, cols) in columns.items():
        if kind in ("LOAD", "STORE"):  # every memory type is known here
            classes = {m: _variant(kind, MEM_TYPES[m]) for m in range(len(MEM_TYPES))}
            variants = [classes[m] for m in cols[names.index("memory_type")]]
        else:
            variants = [_variant(kind, MEM_TYPES[0])] * len(rows)  # memory_type 0 by default
        for i, vals, cls in zip(rows, zip(*cols), variants):
            insn = out[i] = new(cls)
            _set(insn, "__dict__", dict(zip(names, vals)))
    return out


def encode_uops(uops, config: Config) -> np.ndarray:
    """uint32 words of micro-ops given as rows (dst_idx, src_idx, wgt_idx); checks each field."""
    arr = np.asarray(uops, dtype=np.int64).reshape(-1, 3)
    words = np.zeros(len(arr), dtype=np.uint64)
    for col, f in enumerate(uop_layout(config).values()):
        bad = np.flatnonzero((arr[:, col] < 0) | (arr[:, col] > f.high))
        if bad.size:
            raise EncodingError("micro-op", f.name, f"uop {bad[0]}: value {arr[bad[0], col]} does not fit "
                                f"{f.width} bits (range 0..{f.high})")
        words |= arr[:, col].astype(np.uint64) << np.uint64(f.lo)
    return words.astype(np.uint32)


def decode_uops(words, config: Config) -> np.ndarray:
    """(n, 3) int64 array of (dst_idx, src_idx, wgt_idx) from uint32 micro-op words."""
    w = np.asarray(words, dtype=np.uint32).astype(np.int64)
    return np.stack([(w >> f.lo) & f.high for f in uop_layout(config).values()], axis=1).reshape(-1, 3)


def check_insn(insn: Insn, config: Config, index: int) -> None:
    """Static rules of docs/spec.md section 4 that do not depend on memory contents.

    Flags a module cannot use, memory types an instruction cannot address, padding where none
    is allowed, a 2-D UOP load, an empty uop range bound. Raises ProgramError naming the field.
    """
    kind, module, given = insn.kind, insn.module, insn.fields
    if kind in ("LOAD", "STORE"):
        mem = insn.mem
        if kind == "STORE" and mem != "out":
            raise ProgramError(index, kind, "memory_type", f"STORE must use memory type out, not {mem}",
                               error_bit="bad_memory_type")
        if kind == "LOAD" and mem == "out":
            raise ProgramError(index, kind, "memory_type", "LOAD cannot write the out buffer",
                               error_bit="bad_memory_type")
        pads = ("y_pad_top", "y_pad_bottom", "x_pad_left", "x_pad_right")
        if mem not in ("inp", "acc"):
            for pad in pads:
                if given.get(pad, 0):
                    raise ProgramError(index, kind, pad, f"padding is allowed only for inp and acc, not {mem}",
                                       error_bit="bad_flag")
        if mem == "uop" and insn.y_size > 1:
            raise ProgramError(index, kind, "y_size", f"uop loads are 1-D (y_size 1), got {insn.y_size}",
                               error_bit="dram_range")
        if insn.x_size and insn.y_size > 1 and insn.x_stride < insn.x_size:
            raise ProgramError(index, kind, "x_stride", f"stride {insn.x_stride} is smaller than x_size {insn.x_size}",
                               error_bit="dram_range")
    if kind in ("GEMM", "ALU") and insn.uop_end < insn.uop_bgn:
        raise ProgramError(index, kind, "uop_end", f"uop range {insn.uop_bgn}:{insn.uop_end} is reversed",
                           error_bit="sram_range")
    for flag in FLAGS:
        if given.get(flag, 0) and (module, flag) not in FLAG_QUEUE:
            raise ProgramError(index, kind, flag, f"the {module} module cannot use {flag}",
                               error_bit="bad_flag")
    if kind == "FINISH" and (insn.push_prev or insn.push_next):
        raise ProgramError(index, kind, "push_prev" if insn.push_prev else "push_next", "FINISH may pop but not push",
                           error_bit="bad_flag")


def pops(insn: Insn) -> list[str]:
    """Token queues this instruction pops before it starts."""
    given = insn.fields
    return [FLAG_QUEUE[(insn.module, f)] for f in ("pop_prev", "pop_next") if given.get(f, 0)]


def pushes(insn: Insn) -> list[str]:
    """Token queues this instruction pushes when it completes."""
    given = insn.fields
    return [FLAG_QUEUE[(insn.module, f)] for f in ("push_prev", "push_next") if given.get(f, 0)]

"""How often each basic block runs and how the kernel's memory accesses meet the caches.

The optimised IR of a kernel (the one :mod:`.target` compiled for the CPU, blocks named
``b<i>``) is instrumented as text and run once on this machine with MCJIT:

- at the top of every block (after its phis) a counter ``@vdla.counts[i]`` is incremented;
  the counts are properties of the IR's execution, so they hold for the CPU's machine code too;
- before every load and store whose address derives from a kernel argument (not from a stack
  ``alloca``: scratch rows live in L1) a call ``@vdla.touch(addr, bytes, is_store)`` feeds the
  two-level cache simulator of :mod:`.cachesim`.

The inputs are zero-filled buffers of the spec's argument shapes, page-aligned one after the
other (:func:`arena`), so the simulated caches see the same layout in every run: every kernel's
control flow depends on shapes and parameters only, never on values. The IR is not optimised again, so the
instrumented module executes exactly the optimised kernel's blocks, loads and stores.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass

import llvmlite.binding as llvm
import numpy as np

from vdla_hw.errors import VdlaError

from .cachesim import STATS, simulator_ir

_LABEL = re.compile(r"^(b\d+):")
_DEF = re.compile(r"^\s*(%[-\w.$]+)\s*=\s*(.*)$")
_GEP = re.compile(r"^getelementptr\s+(?:(?:inbounds|nuw|nusw|inrange\(\S+\))\s+)*[^,]+,\s*ptr\s+(%[-\w.$]+)")
_PHI = re.compile(r"^phi\s+ptr\s+\[\s*(%[-\w.$]+)")
_SELECT = re.compile(r"^select\s+i1\s+[^,]+,\s*ptr\s+(%[-\w.$]+)")
_TYPE = r"(<\d+\s+x\s+\w+>|\w+)"
_LOAD = re.compile(rf"^load\s+{_TYPE},\s*ptr\s+(%[-\w.$]+)\s*,\s*align")
_STORE = re.compile(rf"^\s*store\s+{_TYPE}\s+.*,\s*ptr\s+(%[-\w.$]+)\s*,\s*align")
_VECTOR = re.compile(r"^<(\d+)\s+x\s+(\w+)>$")
_SCALAR_BYTES = {"i8": 1, "i16": 2, "i32": 4, "i64": 8, "float": 4, "double": 8, "half": 2}
_MEMORY_CALLS = re.compile(r"@llvm\.(mem\w+|masked\.\w+|\w+\.neon\.\w+)\b")


class ProfileError(RuntimeError, VdlaError):
    """The generated IR has a memory operation the profiler cannot follow (a kernel the cost
    model does not support yet; the message names it)."""


@dataclass(frozen=True)
class Profile:
    """Executions per IR block and the cache simulator's counters for one kernel call."""

    counts: dict
    accesses: int
    l1_misses: int
    l2_misses: int
    l2_store_misses: int


def type_bytes(text: str) -> int:
    text = text.strip()
    vector = _VECTOR.match(text)
    if vector:
        return int(vector.group(1)) * _SCALAR_BYTES[vector.group(2)]
    if text in _SCALAR_BYTES:
        return _SCALAR_BYTES[text]
    if text == "ptr":
        return 8
    raise ProfileError(f"cannot size the IR type {text!r}")


def _root(name: str, defs: dict, args: set, seen=None) -> str:
    """'arg', 'stack' or 'unknown': where pointer ``name`` points."""
    if name in args:
        return "arg"
    seen = seen or set()
    if name in seen or name not in defs:
        return "unknown"
    seen.add(name)
    rhs = defs[name]
    if rhs.startswith("alloca"):
        return "stack"
    for pattern in (_GEP, _PHI, _SELECT):
        match = pattern.match(rhs)
        if match:
            return _root(match.group(1), defs, args, seen)
    return "unknown"


def instrument(ir_text: str, symbol: str) -> tuple[str, list[str]]:
    """(instrumented IR text, block names in counter order) for function ``symbol``."""
    lines = ir_text.splitlines()
    define = next((i for i, line in enumerate(lines) if line.startswith("define") and f"@{symbol}(" in line), None)
    if define is None:
        raise ProfileError(f"the IR has no function {symbol}")
    end = next(i for i in range(define, len(lines)) if lines[i] == "}")
    body = lines[define + 1:end]
    args = set(re.findall(r"ptr\s+(?:[a-z_()0-9]+\s+)*(%[-\w.$]+)", lines[define]))
    defs = {}
    for line in body:
        match = _DEF.match(line)
        if match:
            defs[match.group(1)] = match.group(2)
        call = _MEMORY_CALLS.search(line)
        if call and " call " in f" {line} ":
            raise ProfileError(f"{symbol}: the cost model cannot follow the memory intrinsic @llvm.{call.group(1)}")
    blocks = [m.group(1) for m in (_LABEL.match(line) for line in body) if m]
    counters = f"[{len(blocks)} x i64]"
    out, pending, serial = [], None, 0
    for line in body:
        label = _LABEL.match(line)
        if label:
            out.append(line)
            pending = blocks.index(label.group(1))
            continue
        if pending is not None and " = phi " not in line:
            slot = f"getelementptr inbounds ({counters}, ptr @vdla.counts, i64 0, i64 {pending})"
            out += [f"  %vdla.c{pending} = load i64, ptr {slot}",
                    f"  %vdla.c{pending}.n = add i64 %vdla.c{pending}, 1",
                    f"  store i64 %vdla.c{pending}.n, ptr {slot}"]
            pending = None
        match = _DEF.match(line)
        load = _LOAD.match(match.group(2)) if match else None
        store = None if load else _STORE.match(line)
        access = load or store
        if access and _root(access.group(2), defs, args) != "stack":
            serial += 1
            size = type_bytes(access.group(1))
            out += [f"  %vdla.a{serial} = ptrtoint ptr {access.group(2)} to i64",
                    f"  call void @vdla.touch(i64 %vdla.a{serial}, i64 {size}, i1 {'true' if store else 'false'})"]
        out.append(line)
    header = [line for line in lines[:define] if not line.startswith(("target datalayout", "target triple"))]
    text = "\n".join(header + [f"@vdla.counts = global {counters} zeroinitializer",
                               "declare void @vdla.touch(i64, i64, i1)", lines[define]] + out + lines[end:])
    return text, blocks


ARENA_ALIGN = 1 << 20  # above every simulated cache's set span, so set indices are reproducible
PAGE = 4096


def arena(args) -> list[np.ndarray]:
    """Zeroed buffers for ``args``, page-aligned one after another in one 1 MiB-aligned block:
    the cache simulation sees the same addresses (modulo the alignment) in every process."""
    sizes = [-(-arg.nbytes // PAGE) * PAGE for arg in args]
    block = np.zeros(sum(sizes) + ARENA_ALIGN, dtype=np.uint8)
    offset = -block.ctypes.data % ARENA_ALIGN
    buffers = []
    for arg, size in zip(args, sizes):
        buffers.append(block[offset:offset + arg.nbytes].view(arg.dtype).reshape(arg.shape))
        offset += size
    return buffers


def run_profile(ir_text: str, spec, cpu) -> Profile:
    """Instrument ``spec``'s optimised IR, run it once on zero inputs, read the counters."""
    from ..jit import host_target_machine

    host_machine = host_target_machine()  # the engine below takes ownership of it
    text, blocks = instrument(ir_text, spec.symbol)
    kernel = llvm.parse_assembly(text)
    kernel.link_in(llvm.parse_assembly(simulator_ir(cpu)))
    kernel.triple = host_machine.triple
    kernel.data_layout = str(host_machine.target_data)
    kernel.verify()
    engine = llvm.create_mcjit_compiler(kernel, host_machine)
    engine.finalize_object()
    buffers = arena(spec.args())
    function = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(buffers))(engine.get_function_address(spec.symbol))
    function(*[b.ctypes.data for b in buffers])
    counts = np.ctypeslib.as_array((ctypes.c_int64 * len(blocks)).from_address(
        engine.get_global_value_address("vdla.counts")))
    stats = np.ctypeslib.as_array((ctypes.c_int64 * len(STATS)).from_address(
        engine.get_global_value_address("vdla.stats")))
    result = Profile({name: int(n) for name, n in zip(blocks, counts)}, *(int(s) for s in stats))
    del engine
    return result

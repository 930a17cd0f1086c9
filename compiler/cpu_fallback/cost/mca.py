"""Steady-state cycles per execution of machine basic blocks, from ``llvm-mca``.

Every block becomes one llvm-mca code region (``LLVM-MCA-BEGIN``/``END``); llvm-mca runs each
region ``ITERATIONS`` times back to back on the CPU's scheduling model and reports the total
cycles, so ``TotalCycles / ITERATIONS`` is the block's cycles per execution in steady state
(loop-carried dependencies and issue limits included; every load hits L1, branches are free).
One llvm-mca process serves all blocks of a kernel.

Two resource bounds from the CPU data complete LLVM's machine models where they are coarse:

- ``neon_datapath_bits`` (64 on the Cortex-A9): a quad-register NEON data-processing
  instruction occupies the 64-bit NEON pipe twice as long as its double-register form. The
  machine model gives both one slot, so a block's NEON time is at least the sum over its NEON
  data-processing instructions of llvm-mca's reciprocal throughput, doubled for Q forms.
- ``load_store_bits_per_cycle`` (64 on the A9): one load/store unit moving 64 bits per cycle,
  so a block takes at least (bytes it loads and stores) / 8 cycles. The A9 model charges NEON
  VLDn/VSTn to no unit at all.

A block's cycles are the largest of llvm-mca's figure and these bounds.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass

from ..errors import ToolchainError

TOOL = "llvm-mca"
PACKAGE = "llvm"
ITERATIONS = 100


_UNSUPPORTED = re.compile(r"unsupported instruction.*?\n\s*note: instruction:\s*(.+)", re.S)
MAX_STAND_INS = 20


@dataclass(frozen=True)
class BlockTiming:
    """Cycles of one block execution and what bounds it."""

    cycles: float
    mca_cycles: float
    neon_cycles: float
    load_store_cycles: float

    @property
    def bound(self) -> str:
        values = {"schedule": self.mca_cycles, "neon": self.neon_cycles, "load/store": self.load_store_cycles}
        return max(values, key=values.get)


def tool_path() -> str:
    path = shutil.which(TOOL)
    if path is None:
        raise ToolchainError(f"'{TOOL}' was not found on PATH; the CPU cost model needs it. "
                             f"Install it with: apt-get install -y {PACKAGE}")
    return path


_version = None


def version() -> str:
    """``llvm-mca --version`` text (part of every analysis cache key)."""
    global _version
    if _version is None:
        done = subprocess.run([tool_path(), "--version"], capture_output=True, text=True, check=False)
        _version = " ".join(line.strip() for line in done.stdout.splitlines() if "version" in line.lower())
        if done.returncode != 0 or not _version:
            raise ToolchainError(f"{TOOL} --version failed (exit {done.returncode}): {done.stderr.strip()}")
    return _version


_Q_REG = re.compile(r"\bq\d+\b")
_D_REG = re.compile(r"\bd\d+\b(?!\[)")
_V128 = re.compile(r"\bv\d+\.(16b|8h|4s|2d)\b")
_V64 = re.compile(r"\bv\d+\.(8b|4h|2s|1d)\b")
_ARM_MEMORY = re.compile(r"^v(ld|st)\d|^v(ldr|str|ldm|stm|push|pop)|^(ldr|str|ldm|stm|push|pop)")


def is_quad_form(code: str) -> bool:
    """A vector data-processing instruction whose every vector operand is 128 bits wide."""
    mnemonic, _, operands = code.partition(" ")
    if mnemonic.startswith(("vld", "vst", "vldr", "vstr", "vpush", "vpop", "ld", "st")):
        return False
    if _Q_REG.search(operands):
        return not _D_REG.search(operands)
    if _V128.search(operands):
        return not _V64.search(operands)
    return False


def _is_vector(code: str) -> bool:
    mnemonic, _, operands = code.partition(" ")
    return mnemonic.startswith("v") or bool(_V128.search(operands) or _V64.search(operands))


_SIZES = {"r": 4, "s": 4, "d": 8, "q": 16}
_REGS = re.compile(r"([rsdq])(\d+)(\[\d*\])?(?:-[rsdq](\d+))?")


def memory_bytes(code: str) -> int:
    """Bytes an AArch32 load/store instruction moves (0 for other instructions)."""
    mnemonic, _, operands = code.partition(" ")
    base, _, suffix = mnemonic.partition(".")
    if not _ARM_MEMORY.match(base):
        return 0
    if base in ("ldrb", "strb", "ldrsb"):
        return 1
    if base in ("ldrh", "strh", "ldrsh"):
        return 2
    if base in ("ldrd", "strd"):
        return 8
    if "{" not in operands:
        first = _REGS.match(operands.strip())
        return _SIZES[first.group(1)] if first else 4
    element = int(suffix) // 8 if suffix.isdigit() else 4
    total = 0
    for item in operands[operands.index("{") + 1:operands.index("}")].split(","):
        match = _REGS.fullmatch(item.strip())
        if not match:
            total += 4  # lr, pc, sp in push/pop lists
            continue
        count = int(match.group(4)) - int(match.group(2)) + 1 if match.group(4) else 1
        total += count * (element if match.group(3) else _SIZES[match.group(1)])
    return total


_MULTIPLE = re.compile(r"^(push|pop|vpush|vpop|ldm\w*|stm\w*|vldm\w*|vstm\w*)\s+(?:(\w+)!?,\s*)?\{([^}]*)\}")


def _register_list(text: str) -> list[str]:
    registers = []
    for item in (part.strip() for part in text.split(",")):
        span = re.fullmatch(r"([rsd])(\d+)-[rsd](\d+)", item)
        registers += [f"{span.group(1)}{i}" for i in range(int(span.group(2)), int(span.group(3)) + 1)] \
            if span else [item]
    return registers


def for_mca(code: str) -> list[str]:
    """``code`` as llvm-mca can schedule it. The Cortex-A9 model resolves load/store-multiple
    timing from the register count of a MachineInstr, which llvm-mca does not have ("unable to
    resolve scheduling class for write variant"); such an instruction becomes one single-register
    load or store per register (its load/store-unit time is kept by the load/store bound)."""
    match = _MULTIPLE.match(code)
    if not match:
        return [code]
    mnemonic, base, registers = match.group(1), match.group(2) or "sp", _register_list(match.group(3))
    loads = mnemonic.startswith(("pop", "vpop", "ldm", "vldm"))
    out = []
    for offset, register in enumerate(registers):
        if register == "pc":
            out.append("bx\tlr")
            continue
        vector = register[0] in "ds"
        op = ("vldr" if loads else "vstr") if vector else ("ldr" if loads else "str")
        out.append(f"{op}\t{register}, [{base}, #{(8 if vector else 4) * offset}]")
    return out


def time_blocks(blocks: dict[str, list[str]], cpu) -> tuple[dict[str, BlockTiming], dict[str, str]]:
    """Cycles per execution of each named block of instructions on ``cpu`` (one llvm-mca run),
    and the stand-ins used for instructions the scheduling model has no data for."""
    from .blocks import comment_char

    arm = comment_char(cpu.mca.triple) == "@"
    cc = "@" if arm else "#"  # llvm-mca finds its region markers in these comments
    names = [name for name, code in blocks.items() if code]
    scheduled = {name: [part for line in blocks[name] for part in (for_mca(line) if arm else [line])]
                 for name in names}
    source = []
    for name in names:
        source.append(f"{cc} LLVM-MCA-BEGIN {name}")
        source += [f"\t{line}" for line in scheduled[name]]
        source.append(f"{cc} LLVM-MCA-END")
    timings = {name: BlockTiming(0.0, 0.0, 0.0, 0.0) for name, code in blocks.items() if not code}
    if not names:
        return timings, {}
    regions, stand_ins = _run(source, cpu)
    if len(regions) != len(names):
        raise ToolchainError(f"{TOOL} returned {len(regions)} regions for {len(names)} blocks")
    for name, region in zip(names, regions):
        summary = region["SummaryView"]
        mca_cycles = summary["TotalCycles"] / summary["Iterations"]
        info = region["InstructionInfoView"]["InstructionList"]
        neon = 0.0
        if cpu.neon_datapath_bits:
            for line, entry in zip(scheduled[name], info):
                if _is_vector(line) and not (entry["mayLoad"] or entry["mayStore"]):
                    widen = 128 // cpu.neon_datapath_bits if is_quad_form(line) else 1
                    neon += float(entry["RThroughput"]) * widen
        load_store = 0.0
        if cpu.load_store_bits_per_cycle:
            load_store = sum(memory_bytes(line) for line in blocks[name]) * 8 / cpu.load_store_bits_per_cycle
        timings[name] = BlockTiming(max(mca_cycles, neon, load_store), mca_cycles, neon, load_store)
    return timings, stand_ins


def stand_in(code: str) -> str:
    """An instruction the scheduling model knows, for one it has no data for: a move that keeps
    the first (destination) and second register operands, so dependencies are kept."""
    mnemonic, _, operands = code.partition(" ")
    registers = re.findall(r"\b(r\d+|lr|ip|fp|[wx]\d+|[dq]\d+|v\d+\.\w+)\b", operands)
    if not registers:
        return "nop"
    vector = registers[0][0] in "dqv"
    source = registers[1] if len(registers) > 1 else registers[0]
    if registers[0][0] == "v":
        return f"mov\t{registers[0].split('.')[0]}.16b, {source.split('.')[0]}.16b"
    return f"{'vmov' if vector else 'mov'}\t{registers[0]}, {source}"


def _run(source: list[str], cpu) -> tuple[list, dict]:
    """llvm-mca's regions for ``source``; instructions its model lacks are replaced by
    :func:`stand_in` moves (returned as {instruction: stand-in}) and the run repeated."""
    command = [tool_path(), f"-mtriple={cpu.mca.triple}", f"-mcpu={cpu.mca.cpu}", f"-mattr={cpu.mca.features}",
               f"-iterations={ITERATIONS}", "--json", "--resource-pressure=false"]
    stand_ins = {}
    for _ in range(MAX_STAND_INS + 1):
        done = subprocess.run(command, input="\n".join(source) + "\n", capture_output=True, text=True, check=False)
        if done.returncode == 0:
            return json.loads(done.stdout)["CodeRegions"], stand_ins
        unsupported = _UNSUPPORTED.search(done.stderr)
        if not unsupported:
            break
        bad = " ".join(unsupported.group(1).splitlines()[0].split())
        if bad in stand_ins:
            break
        stand_ins[bad] = stand_in(bad)
        source = [f"\t{stand_ins[bad]}" if " ".join(line.split()) == bad else line for line in source]
    raise ToolchainError(f"{TOOL} failed on the generated code for {cpu.name} (exit {done.returncode}): "
                         f"{done.stderr.strip()[:2000]}")

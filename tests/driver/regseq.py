"""The shared corpus of register sequences: what a driver (or a confused one) may do to the
control slave. ``tests/rtl/test_register_corpus.py`` runs every sequence on the RTL's AXI-lite
slave and on the register model (``driver/regmodel.py``, timed) and compares every read.

Ops: ``("wr", register, value)`` or ``("wr", register, value, strobe)`` (WSTRB: the bytes
written; the bench drives the value on every byte lane), ``("rd", register)``, ``("wait", cycles)``, ``("wait_irq", cycles)``
(until irq rises, at most that long); ``register`` is a name or a byte offset (an offset that
holds no register is answered SLVERR). Values ``$base``, ``$bytes``, ``$iaddr`` and
``$count`` stand for the program's DRAM base, image size, instruction offset and count.
Sequences read the per-module counters only when no run is in progress (mid-run counters are
not part of the register model) and read CYCLES of a failed program only when the failure is a
START check (a program error stops the RTL mid-run, the model before cycle 0).
"""

from __future__ import annotations

from tests.driver.device_cases import deadlocking_bundle, out_of_range_bundle
from tests.hw import programs
from vdla_hw import regmap

START, CLEAR = regmap.CTRL_START, regmap.CTRL_CLEAR
STATUS_REGS = ("STATUS", "ERROR", "ERROR_INSN", "CYCLES_LO", "CYCLES_HI")
EVERYTHING = tuple(r.name for r in regmap.REGISTERS)


def setup(count="$count", iaddr="$iaddr", base="$base"):
    return [("wr", "DRAM_BASE", base), ("wr", "DRAM_BYTES", "$bytes"), ("wr", "INSN_ADDR", iaddr),
            ("wr", "INSN_COUNT", count)]


def reads(*names):
    return [("rd", n) for n in names]


def run_to_end():
    return [("wr", "CTRL", START), ("wait_irq", 20_000)]


def matmul():
    return programs.blocked_matmul("tiny")[0]


SEQUENCES = {
    "run_reading_status_and_cycles_on_the_way": (matmul, [
        *setup(), *reads("ID_ISA", "ID_CONFIG", "DRAM_BASE", "INSN_COUNT"), ("wr", "CTRL", START),
        *reads("STATUS", "CYCLES_LO", "CYCLES_HI", "ERROR", "ERROR_INSN"), ("wait", 37),
        *reads("STATUS", "CYCLES_LO", "CYCLES_HI"), ("wait_irq", 20_000), *reads(*EVERYTHING),
        ("wr", "CTRL", CLEAR), *reads(*EVERYTHING)]),
    "start_after_done_without_clear": (matmul, [
        *setup(), *run_to_end(), *reads("STATUS", "CYCLES_LO"), ("wr", "CTRL", START),
        *reads("STATUS", "ERROR", "CYCLES_LO"), ("wait_irq", 20_000), *reads(*EVERYTHING), ("wr", "CTRL", CLEAR)]),
    "zero_count_freezes_until_clear": (matmul, [
        *setup(count=0), ("wr", "CTRL", START), *reads(*STATUS_REGS), ("wr", "INSN_COUNT", "$count"),
        ("wr", "CTRL", START), ("wait", 50), *reads(*STATUS_REGS), ("wr", "CTRL", CLEAR), *reads(*STATUS_REGS),
        *run_to_end(), *reads(*EVERYTHING), ("wr", "CTRL", CLEAR)]),
    "misaligned_and_out_of_range_streams": (matmul, [
        *setup(iaddr=8), ("wr", "CTRL", START), *reads(*STATUS_REGS), ("wr", "CTRL", CLEAR),
        *setup(iaddr="$bytes"), ("wr", "CTRL", START), *reads(*STATUS_REGS), ("wr", "CTRL", CLEAR),
        *setup(count=1 << 20), ("wr", "CTRL", START), *reads(*STATUS_REGS), ("wr", "CTRL", CLEAR),
        *reads(*STATUS_REGS)]),
    "dram_base_not_4k_aligned": (matmul, [
        *setup(base=0x1000_0040), ("wr", "CTRL", START), *reads(*STATUS_REGS), ("wr", "CTRL", START | CLEAR),
        *reads("STATUS", "ERROR"), ("wr", "CTRL", CLEAR), *setup(), *run_to_end(), *reads(*EVERYTHING),
        ("wr", "CTRL", CLEAR)]),
    "start_while_busy_stops_the_run": (matmul, [
        *setup(), ("wr", "CTRL", START), ("wait", 20), ("wr", "CTRL", START), *reads(*STATUS_REGS),
        ("wait", 100), *reads("STATUS", "CYCLES_LO"), ("wr", "CTRL", START), *reads("STATUS", "ERROR"),
        ("wr", "CTRL", CLEAR), *reads(*EVERYTHING), *run_to_end(), *reads(*EVERYTHING), ("wr", "CTRL", CLEAR)]),
    "clear_during_a_run": (matmul, [
        *setup(), ("wr", "CTRL", START), ("wait", 30), ("wr", "CTRL", CLEAR), *reads(*EVERYTHING), ("wait", 40),
        *reads("STATUS", "CYCLES_LO"), *run_to_end(), *reads(*EVERYTHING), ("wr", "CTRL", CLEAR)]),
    "clear_and_start_in_one_write": (matmul, [
        *setup(), *run_to_end(), ("wr", "CTRL", CLEAR | START), *reads("STATUS", "CYCLES_LO", "ERROR"),
        ("wait_irq", 20_000), *reads(*EVERYTHING), ("wr", "CTRL", CLEAR)]),
    "read_only_registers_ignore_writes": (matmul, [
        *setup(), ("wr", "STATUS", 7), ("wr", "ERROR", 0xFFFF), ("wr", "CYCLES_LO", 123), ("wr", "ID_ISA", 9),
        ("wr", "LOAD_BUSY", 5), *reads(*EVERYTHING), ("wr", "DRAM_BYTES", 0x1234_5678),
        *reads("DRAM_BYTES", "CTRL"), ("wr", "CTRL", 0), *reads("STATUS")]),
    "deadlock_stays_busy_until_clear": (deadlocking_bundle, [
        *setup(), ("wr", "CTRL", START), ("wait", 300), *reads("STATUS", "ERROR", "CYCLES_LO"),
        ("wr", "CTRL", CLEAR), *reads(*EVERYTHING)]),
    "program_error_then_clear": (out_of_range_bundle, [
        *setup(), ("wr", "CTRL", START), ("wait_irq", 20_000), *reads("STATUS", "ERROR", "ERROR_INSN"),
        ("wr", "CTRL", START), *reads("STATUS", "ERROR", "ERROR_INSN"), ("wr", "CTRL", CLEAR),
        *reads(*EVERYTHING)]),
    # WSTRB: a write changes only the strobed bytes; CTRL acts only on its strobed bytes
    "partial_writes_keep_the_other_bytes": (matmul, [
        *setup(), ("wr", "DRAM_BYTES", 0xAABBCCDD, 0b0010), ("wr", "INSN_COUNT", 0x11223344, 0b1100),
        ("wr", "INSN_ADDR", 0x55667788, 0b0101), *reads("DRAM_BYTES", "INSN_COUNT", "INSN_ADDR"),
        ("wr", "DRAM_BASE", 0, 0b1111), ("wr", "DRAM_BASE", "$base", 0b0011), *reads("DRAM_BASE"),
        ("wr", "DRAM_BASE", "$base", 0b1100), *setup(count=0), ("wr", "INSN_COUNT", "$count", 0b0001),
        ("wr", "DRAM_BYTES", "$bytes", 0b0011), ("wr", "INSN_ADDR", "$iaddr", 0b0111), *reads(*EVERYTHING),
        ("wr", "CTRL", START, 0b0001), ("wait_irq", 20_000), *reads(*EVERYTHING), ("wr", "CTRL", CLEAR)]),
    "ctrl_bits_outside_the_strobe_do_nothing": (matmul, [
        *setup(), ("wr", "CTRL", START, 0b1110), *reads(*STATUS_REGS), ("wait", 40), *reads("STATUS", "CYCLES_LO"),
        ("wr", "CTRL", 0xFFFFFF00 | START, 0b1110), *reads("STATUS"), *run_to_end(), *reads("STATUS", "CYCLES_LO"),
        ("wr", "CTRL", CLEAR, 0b0010), *reads("STATUS", "CYCLES_LO"), ("wr", "CTRL", CLEAR, 0b0001),
        *reads(*EVERYTHING)]),
    # full address decode: offsets without a register answer SLVERR and change nothing
    "unmapped_offsets_answer_slverr": (matmul, [
        *setup(), *reads(0x30, 0x3C, 0x90, 0x100, 0x110, 0x120, 0x128, 0x800, 0xFFC),
        ("wr", 0x110, 0x1234_5000), ("wr", 0x114, 0x40), ("wr", 0x30, 7), ("wr", 0xFFC, 0xFFFF_FFFF),
        ("wr", 0x100, START), *reads(*STATUS_REGS, "DRAM_BASE", "DRAM_BYTES"), ("wait", 40), *reads("STATUS"),
        *run_to_end(), ("wr", 0x100, CLEAR), *reads(0x120, 0x124, "CYCLES_LO", "CYCLES_HI", "STATUS"),
        ("wr", "CTRL", CLEAR), *reads(*EVERYTHING)]),
    # an image that passes 4 GiB would wrap the bus address: START refuses it, naming no instruction
    "image_passing_4gib_is_refused": (matmul, [
        *setup(base=0xFFFF_F000), ("wr", "DRAM_BYTES", 0x2000), ("wr", "CTRL", START), *reads(*STATUS_REGS),
        ("wr", "CTRL", CLEAR), *setup(base=0xFFFF_F000), ("wr", "DRAM_BYTES", 0x1001), ("wr", "CTRL", START),
        *reads(*STATUS_REGS), ("wr", "CTRL", CLEAR), *setup(), *run_to_end(), *reads(*EVERYTHING),
        ("wr", "CTRL", CLEAR)]),
}


def resolve(ops: list, bundle, base: int) -> list:
    """The ops with the program's values in place of the ``$`` names."""
    values = {"$base": base, "$bytes": bundle.dram.size, "$iaddr": bundle.insn_offset, "$count": bundle.insn_count}
    return [tuple(values.get(x, x) if isinstance(x, str) and x.startswith("$") else x for x in op) for op in ops]

"""The shared corpus of register sequences: what a driver (or a confused one) may do to the
control slave. ``tests/rtl/test_register_corpus.py`` runs every sequence on the RTL's AXI-lite
slave and on the register model (``driver/regmodel.py``, timed) and compares every read.

Ops: ``("wr", register, value)``, ``("rd", register)``, ``("wait", cycles)``, ``("wait_irq",
cycles)`` (until irq rises, at most that long). Values ``$base``, ``$bytes``, ``$iaddr`` and
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
}


def resolve(ops: list, bundle, base: int) -> list:
    """The ops with the program's values in place of the ``$`` names."""
    values = {"$base": base, "$bytes": bundle.dram.size, "$iaddr": bundle.insn_offset, "$count": bundle.insn_count}
    return [tuple(values.get(x, x) if isinstance(x, str) and x.startswith("$") else x for x in op) for op in ops]

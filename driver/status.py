"""What a device reports, in people's words: ERROR bits, per-module counters, timeouts.

Every backend describes a stopped or stuck device the same way, from the register map's
STATUS/ERROR/ERROR_INSN registers and the per-module counters (``vdla_hw.regmap``), so a
timeout on the board reads like a timeout on the simulator.
"""

from __future__ import annotations

from vdla_hw import regmap
from vdla_hw.errors import VdlaError
from vdla_hw.isa import MODULES

NO_INSN = 0xFFFFFFFF


def error_bits_for(err: VdlaError) -> tuple[int, int]:
    """(ERROR bits, ERROR_INSN) the hardware reports for a simulator or semantics error: the bit
    the error carries (``error_bit``, given where it was detected) and its instruction index.
    An error of a check the hardware lacks (``error_bit`` None: the simulator's race and
    uninitialised-read checks) stops the sim device with ``bad_flag``."""
    index = getattr(err, "index", None)
    return regmap.ERROR_BITS[err.error_bit or "bad_flag"], NO_INSN if index is None else int(index)


def describe_error(bits: int, index: int) -> str:
    """``dram_range at instruction 3`` from ERROR and ERROR_INSN."""
    names = [name for name, bit in regmap.ERROR_BITS.items() if bits & bit] or [f"bits {bits:#x}"]
    where = f" at instruction {index}" if index != NO_INSN else ""
    return "+".join(names) + where


def describe_status(status: int) -> str:
    flags = [name for name, bit in (("busy", regmap.STATUS_BUSY), ("done", regmap.STATUS_DONE),
                                    ("error", regmap.STATUS_ERROR)) if status & bit]
    return "+".join(flags) or "idle"


def empty_modules() -> dict:
    return {m: {c: 0 for c in regmap.MODULE_COUNTERS} for m in MODULES}


def read_modules(read_register) -> dict:
    """Every per-module counter through ``read_register(name) -> int``."""
    return {m: {c: int(read_register(regmap.counter_name(m, c))) for c in regmap.MODULE_COUNTERS} for m in MODULES}


def describe_modules(modules: dict) -> str:
    """One clause per module: instructions retired, busy and stall cycles."""
    parts = []
    for module, c in modules.items():
        stalls = ", ".join(f"{k.replace('stall_', '')} {v}" for k, v in c.items() if k.startswith("stall_") and v)
        parts.append(f"{module}: {c.get('insns', 0)} insns retired, busy {c.get('busy', 0)} cycles"
                     + (f", stalled ({stalls})" if stalls else ""))
    return "; ".join(parts)


def timeout_message(target: str, limit: str, status: int, cycles: int | None, modules: dict) -> str:
    at = f" at cycle {cycles}" if cycles is not None else ""
    return (f"{target} device timed out after {limit}: STATUS {describe_status(status)}{at}; "
            f"{describe_modules(modules)}. The program probably deadlocks (a token that is never pushed) "
            "or needs a longer timeout")

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


def modules_from_sim(result) -> dict:
    """MODULE_COUNTERS per module from a ``vdla_sim.SimResult`` (what the counter registers hold)."""
    return modules_from_parts(result.busy, result.stall, result.retire, result.bytes.get("insn", 0))


def modules_from_parts(busy: dict, stall: dict, retire: list, insn_bytes: int) -> dict:
    out = empty_modules()
    for module in MODULES:
        out[module]["busy"] = int(busy.get(module, 0))
        s = stall.get(module, {})
        out[module]["stall_token"] = int(s.get("token", 0))
        out[module]["stall_mem"] = int(s.get("memory", 0))
        out[module]["stall_queue"] = int(s.get("queue", 0))
    for entry in retire:
        if entry is not None and entry[0] in out:
            out[entry[0]]["insns"] += 1
    out["fetch"]["insns"] = insn_bytes // 16
    return out


def modules_from_engine(engine) -> dict:
    """MODULE_COUNTERS per module from a ``vdla_sim.engine.Engine`` that stopped (or finished)."""
    busy = {"fetch": engine.f_busy}
    stall = {"fetch": {"token": 0, "memory": engine.f_stall_memory, "queue": engine.f_stall_queue}}
    for name, mod in engine.mods.items():
        busy[name] = mod.busy
        stall[name] = {"token": mod.stall_token, "memory": mod.stall_memory, "queue": 0}
    return modules_from_parts(busy, stall, engine.retire, engine.f_bytes)


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

"""The bring-up check of a device (``vdla board check``): what to run on a freshly programmed
board before trusting a result. Four checks, in order, each bounded by a wall-clock timeout:

1. ``identify``: ID_ISA and ID_CONFIG (``Device.identify``) equal the driver's ISA version and
   the fingerprint hash of the configuration the bitstream was built for;
2. ``registers``: every read-write register of the map (``vdla_hw.regmap``, access ``rw``) holds
   each of :data:`PATTERNS` (all zeros, all ones, alternating bits, a walking one), and the
   registers do not alias (each holds its own value while the others hold theirs); their values
   are restored afterwards. Needs register access (:class:`driver.registers.RegisterDevice`:
   the board); a backend without it (sim, rtl) reports ``skip``;
3. ``dma``: a program built with the bundle builder (:func:`dma_program`) LOADs known bytes
   (every byte value, across 4 kB boundaries), passes them through the GEMM unchanged (identity
   weights) and STOREs them; the whole image read back must equal the expected one byte for
   byte (computed with numpy here, not by a simulator), so a lost, changed or stray byte fails;
4. ``program``: a known program (:func:`known_program`: GEMM over two-level loops, then ALU
   SHR/MAX/MIN, every module and token queue in use) must give exactly the simulator's CYCLES,
   every per-module counter and the final image (``vdla_sim.simulate`` of the same bundle, run
   here).

A check that fails says what it expected and what it got; one that does not answer within its
timeout fails and the rest are not run (the device may hang: reload the bitstream). A failed
``identify`` skips ``dma`` and ``program``: their programs are built for the expected
configuration. :func:`run_checks` returns one :class:`CheckResult` per check.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass

import numpy as np

from driver.device import Device, DeviceError
from vdla_hw import alu, regmap
from vdla_hw.bundle import Bundle, BundleBuilder
from vdla_hw.config import ISA_VERSION, Config
from vdla_hw.isa import MEM_TYPES, MODULES

OK, FAIL, SKIP = "ok", "FAIL", "skip"
DEFAULT_TIMEOUT_S = 60.0
RW_REGISTERS = tuple(r.name for r in regmap.REGISTERS if r.access == "rw")
PATTERNS = ((0x0000_0000, "all zeros"), (0xFFFF_FFFF, "all ones"), (0xAAAA_AAAA, "0xaaaaaaaa"),
            (0x5555_5555, "0x55555555"))
PATTERNS += tuple((1 << bit, f"walking one, bit {bit}") for bit in range(regmap.REG_BITS))
BOUNDARY = 4096  # bursts split at 4 kB boundaries (regmap.DRAM_BASE_ALIGN): the DMA data straddles two
INP, WGT, OUT, UOP, ACC = (MEM_TYPES.index(m) for m in ("inp", "wgt", "out", "uop", "acc"))


@dataclass
class CheckResult:
    name: str
    status: str    # OK, FAIL or SKIP
    detail: str    # what was expected and what the device gave (or why the check did not run)
    seconds: float = 0.0

    def as_dict(self) -> dict:
        return asdict(self)


class CheckFailed(Exception):
    """A check's finding: the device did not give what was expected (the message says both)."""


# --- the programs -----------------------------------------------------------------------
def _sync_store(b: BundleBuilder, **store) -> None:
    """Hand compute's results to store and wait for it: a no-op LOAD on compute pushes the
    compute -> store token, STORE pops it and pushes back, FINISH pops that."""
    b.emit("LOAD", memory_type=ACC, push_next=1)
    b.emit("STORE", memory_type=OUT, pop_prev=1, push_prev=1, **store)
    b.emit("FINISH", pop_next=1)


def dma_program(config: Config) -> tuple[Bundle, np.ndarray]:
    """(bundle, the image it must leave): INP elements holding every byte value (a permutation
    of 0..255, repeated) straddle the 4 kB boundary, are LOADed with identity weights and a
    micro-op table, multiplied through the GEMM (out = inp) and STOREd across the 8 kB boundary.
    The expected image is the bundle's with the output range replaced by the input's bytes."""
    b = BundleBuilder(config)
    c = b.config
    inp_bytes, out_bytes = c.elem_bytes("inp"), c.elem_bytes("out")
    width = min(c.block_in, c.block_out)
    n = -(-256 // (c.batch * width))  # elements so that every byte value passes through
    data = ((np.arange(n * c.batch * c.block_in) * 167 + 13) % 256).astype(np.uint8).view(np.int8)
    data = data.reshape(n, c.batch, c.block_in)
    b.alloc("gap_in", "inp", max(0, (BOUNDARY - n * inp_bytes // 2) // inp_bytes))
    src = b.array("data", "inp", data)
    ident = b.array("identity", "wgt", np.eye(c.block_out, c.block_in, dtype=np.int8)[None])
    k = b.uops("k", [(0, 0, 0)])
    end = max(s.byte_range(c)[1] for s in b.symbols.values())
    gap_out = (2 * BOUNDARY - end - n * out_bytes // 2) // out_bytes
    b.alloc("gap_out", "out", max(0, gap_out))
    dst = b.alloc("copy", "out", n)
    b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=1, x_stride=1)
    b.emit("LOAD", memory_type=WGT, dram_base=ident, y_size=1, x_size=1, x_stride=1)
    b.emit("LOAD", memory_type=INP, dram_base=src, y_size=1, x_size=n, x_stride=n, push_next=1)
    loop = dict(uop_end=1, iter_out=n, iter_in=1, dst_factor_out=1, src_factor_out=1)
    b.emit("GEMM", reset=1, **loop)
    b.emit("GEMM", pop_prev=1, **loop)
    _sync_store(b, dram_base=dst, y_size=1, x_size=n, x_stride=n)
    bundle = b.build()
    copy = np.zeros((n, c.batch, c.block_out), dtype=np.int8)
    copy[:, :, :width] = data[:, :, :width]
    expected = bundle.dram.copy()
    lo, hi = bundle.symbols["copy"].byte_range(c)
    expected[lo:hi] = copy.reshape(-1).view(np.uint8)
    return bundle, expected


def known_program(config: Config, m_blocks: int = 3, k_blocks: int = 3, n_blocks: int = 2) -> Bundle:
    """A GEMM of two-level loops over multi-uop kernels (reset, then accumulate over k blocks),
    requantized by ALU SHR, MAX and MIN, then STOREd: load, compute and store all work and wait
    on each other's tokens. Deterministic data (a fixed seed)."""
    b = BundleBuilder(config)
    c = b.config
    rng = np.random.default_rng(30)
    a = rng.integers(-128, 128, size=(m_blocks * k_blocks, c.batch, c.block_in))
    w = rng.integers(-128, 128, size=(n_blocks * k_blocks, c.block_out, c.block_in))
    src, wts = b.array("a", "inp", a), b.array("w", "wgt", w)
    n_out = m_blocks * n_blocks
    dst = b.alloc("out", "out", n_out)
    # the GEMM kernel's uops (one per block row of A), then the ALU's (0, 0, 0)
    k = b.uops("k", [(m, m * k_blocks, 0) for m in range(m_blocks)] + [(0, 0, 0)])
    b.emit("LOAD", memory_type=UOP, dram_base=k, y_size=1, x_size=m_blocks + 1, x_stride=m_blocks + 1)
    b.emit("LOAD", memory_type=WGT, dram_base=wts, y_size=1, x_size=n_blocks * k_blocks, x_stride=n_blocks * k_blocks)
    b.emit("LOAD", memory_type=INP, dram_base=src, y_size=1, x_size=m_blocks * k_blocks,
           x_stride=m_blocks * k_blocks, push_next=1)
    b.emit("GEMM", reset=1, uop_end=m_blocks, iter_out=n_blocks, iter_in=1, dst_factor_out=m_blocks)
    b.emit("GEMM", pop_prev=1, uop_end=m_blocks, iter_out=n_blocks, iter_in=k_blocks, dst_factor_out=m_blocks,
           src_factor_in=1, wgt_factor_out=k_blocks, wgt_factor_in=1)
    loop = dict(uop_bgn=m_blocks, uop_end=m_blocks + 1, iter_out=n_out, iter_in=1, dst_factor_out=1,
               src_factor_out=1, use_imm=1)
    for op, imm in (("shr", 9), ("max", -100), ("min", 100)):
        b.emit("ALU", alu_opcode=alu.OPCODE[op], imm=imm, **loop)
    _sync_store(b, dram_base=dst, y_size=1, x_size=n_out, x_stride=n_out)
    return b.build()


# --- the checks -------------------------------------------------------------------------
def config_name_of(fingerprint_hash: int) -> str:
    """The preset whose fingerprint hash is ``fingerprint_hash`` (``"no preset"`` if none)."""
    from vdla_hw.config import load_config
    from vdla_hw.presets import PRESETS, VARIANTS

    for name in (*PRESETS, *VARIANTS):
        config = load_config(name)
        if config.fingerprint_hash == fingerprint_hash:
            return f"{name}, {config.fingerprint}"
    return "no preset"


def check_identify(device: Device, config: Config, timeout_s: float) -> str:
    isa, fingerprint = device.identify()
    want = f"ISA v{ISA_VERSION}, ID_CONFIG {config.fingerprint_hash:08x} ({config.name}, {config.fingerprint})"
    if isa != ISA_VERSION or fingerprint != config.fingerprint_hash:
        raise CheckFailed(f"expected {want}; the device reports ISA v{isa}, ID_CONFIG {fingerprint:08x} "
                          f"({config_name_of(fingerprint)}): the loaded hardware is another configuration "
                          "(load the bitstream built for this one)")
    return f"ID_ISA {isa}, ID_CONFIG {fingerprint:08x}: {config.name} ({config.fingerprint})"


def register_plan() -> list[tuple]:
    """The register check's accesses, in order: ``("wr", name, value)`` and ``("rd", name,
    expected, what was written)``. Each RW register with each pattern, written then read; then
    every RW register given its own value before any is read back (aliasing)."""
    plan = []
    for name in RW_REGISTERS:
        for value, what in PATTERNS:
            plan += [("wr", name, value), ("rd", name, value, f"wrote {value:#010x} ({what})")]
    distinct = {name: 0xC0DE_0000 | regmap.offset(name) << 4 | k for k, name in enumerate(RW_REGISTERS)}
    plan += [("wr", name, value) for name, value in distinct.items()]
    plan += [("rd", name, value, f"wrote {value:#010x} with every RW register holding its own value")
             for name, value in distinct.items()]
    return plan


def _first_wrong_read(plan: list[tuple], values: list[int]) -> None:
    """Raise CheckFailed for the first read of ``plan`` whose value (``values``, in order) is not
    the one written."""
    for (_, name, want, what), got in zip((op for op in plan if op[0] == "rd"), values):
        if got != want:
            alias = " (an aliased address?)" if "its own value" in what else ""
            raise CheckFailed(f"{name} ({regmap.offset(name):#04x}): {what}, read {got:#010x}{alias}")


def check_registers(device: Device, config: Config, timeout_s: float) -> str:
    """:func:`register_plan` through ``read_register``/``write_register`` (the board), values
    restored afterwards; or as one sequence (``register_ops``: the RTL, a fresh simulation whose
    registers start from reset, so nothing to restore)."""
    plan = register_plan()
    what = f"{len(RW_REGISTERS)} RW registers ({', '.join(RW_REGISTERS)}) x {len(PATTERNS)} patterns read back"
    if hasattr(device, "register_ops"):
        _first_wrong_read(plan, device.register_ops([op[:3] if op[0] == "wr" else op[:2] for op in plan]))
        return f"{what}, no aliasing (one simulation of the control slave)"
    read, write = getattr(device, "read_register", None), getattr(device, "write_register", None)
    if read is None or write is None:
        raise _Skip(f"the {device.target} backend has no control registers to access (its runs do not go "
                    "through the register map here)")
    status = read("STATUS")
    if status & regmap.STATUS_BUSY:
        raise CheckFailed(f"STATUS {status:#x}: the device is busy before any program ran (reload the bitstream)")
    saved = {name: read(name) for name in RW_REGISTERS}
    values = []
    try:
        for op in plan:
            if op[0] == "wr":
                write(op[1], op[2])
            else:
                values.append(read(op[1]))
    finally:
        for name, value in saved.items():
            write(name, value)
    _first_wrong_read(plan, values)
    restored = {name: read(name) for name in RW_REGISTERS}
    if restored != saved:
        bad = next(name for name in RW_REGISTERS if restored[name] != saved[name])
        raise CheckFailed(f"{bad} not restored: wrote back {saved[bad]:#010x}, read {restored[bad]:#010x}")
    return f"{what}, no aliasing, values restored"


def _first_difference(got: np.ndarray, want: np.ndarray, bundle: Bundle) -> str:
    if got.size != want.size:
        return f"{got.size} bytes read back, {want.size} expected"
    wrong = np.flatnonzero(got != want)
    where = next((name for name, s in bundle.symbols.items()
                  if s.byte_range(bundle.config)[0] <= wrong[0] < s.byte_range(bundle.config)[1]), "no symbol")
    return (f"{wrong.size} of {want.size} bytes differ, the first at image offset {wrong[0]:#x} ({where}): expected "
            f"{want[wrong[0]]:#04x}, got {got[wrong[0]]:#04x}")


def check_dma(device: Device, config: Config, timeout_s: float) -> str:
    bundle, expected = dma_program(config)
    result = device.run(bundle, timeout_s=timeout_s)
    got = np.asarray(result.dram, dtype=np.uint8)
    if got.size != expected.size or np.any(got != expected):
        raise CheckFailed(f"round trip LOAD -> STORE: {_first_difference(got, expected, bundle)}")
    lo, hi = bundle.symbols["copy"].byte_range(bundle.config)
    return (f"LOAD inp/wgt/uop, STORE of {hi - lo} bytes (every byte value, across 4 kB boundaries): the "
            f"{expected.size}-byte image read back equals the expected byte for byte")


def check_program(device: Device, config: Config, timeout_s: float) -> str:
    import vdla_sim

    bundle = known_program(config)
    reference = vdla_sim.simulate(bundle)
    result = device.run(bundle, timeout_s=timeout_s, timeout_cycles=10 * reference.cycles)
    total = len(MODULES) * len(regmap.MODULE_COUNTERS)
    wrong = [] if result.cycles == reference.cycles else [f"CYCLES {result.cycles} (simulator {reference.cycles})"]
    modules = result.counters.get("modules", {})
    for module in MODULES:
        for counter in regmap.MODULE_COUNTERS:
            got, want = modules.get(module, {}).get(counter), reference.modules[module][counter]
            if got != want:
                wrong.append(f"{regmap.counter_name(module, counter)} {got} (simulator {want})")
    if wrong:
        raise CheckFailed(f"{len(wrong)} of {1 + total} counters differ from the simulator's: {', '.join(wrong)}")
    image = np.asarray(result.dram, dtype=np.uint8)
    if not np.array_equal(image, reference.dram):
        raise CheckFailed(f"counters equal the simulator's, but the image differs: "
                          f"{_first_difference(image, reference.dram, bundle)}")
    return (f"{bundle.insn_count} instructions: CYCLES {result.cycles} and all {total} module counters equal the "
            "simulator's, image equal")


class _Skip(Exception):
    """A check that cannot run on this device (the message says why)."""


CHECKS = (("identify", check_identify), ("registers", check_registers), ("dma", check_dma),
          ("program", check_program))
NEEDS_IDENTITY = ("dma", "program")  # their programs are built for the expected configuration


def _bounded(check, device, config, timeout_s: float):
    """``check(device, config, timeout_s / 2)`` on a daemon thread (the check's device waits get
    half: a program that never finishes is reported by the device, with each module's state, before
    the deadline): (status, detail), or None when it did not return within ``timeout_s`` (the
    thread is left behind: a hung bus access cannot be interrupted)."""
    box = {}

    def body():
        try:
            box["result"] = (OK, check(device, config, timeout_s / 2))  # the device's own waits
        except CheckFailed as err:
            box["result"] = (FAIL, str(err))
        except _Skip as err:
            box["result"] = (SKIP, str(err))
        except DeviceError as err:
            box["result"] = (FAIL, f"the device said: {err}")
        except BaseException as err:  # noqa: BLE001 - handed to the caller's thread, raised there
            box["error"] = err

    thread = threading.Thread(target=body, name="vdla-board-check", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        return None
    if "error" in box:
        raise box["error"]
    return box["result"]


def run_checks(device: Device, config: Config, *, timeout_s: float = DEFAULT_TIMEOUT_S,
               report=None) -> list[CheckResult]:
    """Run :data:`CHECKS` on ``device`` (opened for ``config``), each within ``timeout_s``
    seconds; ``report(CheckResult)`` is called as each ends. The device's own waits get half the
    timeout, so a program that stops or hangs is reported with its module states."""
    results: list[CheckResult] = []
    stopped = None  # why the remaining checks do not run
    for name, check in CHECKS:
        start = time.perf_counter()
        unidentified = any(r.name == "identify" and r.status == FAIL for r in results)
        if stopped is None and name in NEEDS_IDENTITY and unidentified:
            outcome = (SKIP, "not run: the device is not the configuration its program is built for")
        elif stopped is not None:
            outcome = (SKIP, f"not run: {stopped}")
        else:
            outcome = _bounded(check, device, config, timeout_s)
            if outcome is None:
                outcome = (FAIL, f"no answer within {timeout_s:g} s: the device hangs (reload the bitstream)")
                stopped = f"the device did not answer the {name} check"
        result = CheckResult(name, *outcome, seconds=round(time.perf_counter() - start, 3))
        results.append(result)
        if report is not None:
            report(result)
    return results


def passed(results: list[CheckResult]) -> bool:
    return not any(r.status == FAIL for r in results)

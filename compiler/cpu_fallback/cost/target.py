"""The code a CPU runs for one kernel spec: optimised LLVM IR and the machine code LLVM emits.

The IR comes from the same ``codegen.build_ir`` + ``codegen.optimise`` (O3, vectorisers on) as
the board library, for the CPU's triple/CPU/features; for the Cortex-A9 that is exactly
``arm.py``'s target, so the code analysed is the code that runs on the PYNQ-Z1. Before machine
code is emitted every basic block is renamed ``b<i>``: the verbose assembly then names, for
each machine basic block, the IR block it came from (``@ %b7`` / ``// %b7``), which is how the
profiler's per-IR-block counts reach the machine code. Names do not change code generation.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import llvmlite.binding as llvm

from ..codegen import build_ir, optimise


@dataclass(frozen=True)
class Generated:
    """One kernel's code: the optimised IR (blocks named b0, b1, ...) and its verbose assembly."""

    symbol: str
    ir_text: str
    asm_text: str


@functools.lru_cache(maxsize=None)
def target_machine(triple: str, cpu: str, features: str):
    """An O3, position-independent TargetMachine with verbose assembly (comments name IR blocks)."""
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    machine = llvm.Target.from_triple(triple).create_target_machine(
        cpu=cpu, features=features, opt=3, reloc="pic", codemodel="default")
    machine.set_asm_verbosity(True)
    return machine


def generate(spec, cpu) -> Generated:
    """Optimise ``spec``'s kernel for ``cpu`` and emit its assembly."""
    machine = target_machine(cpu.codegen.triple, cpu.codegen.cpu, cpu.codegen.features)
    module = optimise(build_ir([spec]), machine)
    function = module.get_function(spec.symbol)
    for index, block in enumerate(function.blocks):
        block.name = f"b{index}"
    ir_text = str(module)  # before emission: code generation rewrites the module in place
    return Generated(spec.symbol, ir_text, machine.emit_assembly(module))

"""Kernel specs -> LLVM IR text -> optimised module for one target machine.

The IR is target-independent (i32 indexing, opaque pointers, no intrinsics that need a
particular ISA); only the triple, data layout and the optimisation pipeline differ between the
host JIT and the Cortex-A9 build. The pipeline is LLVM's O3 (new pass manager) with loop and SLP
vectorisation and unrolling switched on explicitly.
"""

import re

import llvmlite.binding as llvm
from llvmlite import ir

from . import ir as L

MODULE_NAME = "vdla_cpu_fallback"


def build_ir(specs):
    """LLVM IR text of a module defining one ``void @symbol(ptr...)`` per spec (duplicates once)."""
    module = ir.Module(name=MODULE_NAME)
    seen = set()
    for spec in specs:
        if spec.symbol in seen:
            continue
        seen.add(spec.symbol)
        args = spec.args()
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [L.PTR] * len(args)), spec.symbol)
        fn.attributes.add("nounwind")
        for value, arg in zip(fn.args, args):
            value.name = arg.name
            for attribute in ("noalias", "nonnull", "nofree", "captures(none)"):
                value.add_attribute(attribute)
        builder = ir.IRBuilder(fn.append_basic_block("entry"))
        spec.emit(builder, fn.args)
        builder.ret_void()
    # "no-builtins" stops LLVM from turning fill/copy loops into memset/memcpy calls, so the
    # Cortex-A9 library needs no libc (it is linked with --no-undefined).
    text, marker = str(module), ") nounwind\n{"
    if text.count(marker) != len(seen):
        raise RuntimeError("codegen: cannot place the no-builtins attribute; llvmlite's IR "
                           "printing changed")
    return _loop_ids(text.replace(marker, ") nounwind \"no-builtins\"\n{"))


_LOOP_ID = re.compile(r'^(!\d+) = !\{ !"' + re.escape(L.LOOP_ID_MARKER) + r'", !"\d+", (!\d+) \}$', re.M)


def _loop_ids(text):
    """Loop metadata placeholders of ``ir.loop(..., unroll=False)`` -> real loop IDs: LLVM only
    reads a distinct node whose first operand is the node itself (llvmlite cannot write one)."""
    return _LOOP_ID.sub(r"\1 = distinct !{ \1, \2 }", text)


def optimise(ir_text, target_machine, speed_level=3):
    """Parse ``ir_text``, retarget it to ``target_machine`` and run the O3 pipeline on it."""
    module = llvm.parse_assembly(ir_text)
    module.triple = target_machine.triple
    module.data_layout = str(target_machine.target_data)
    module.verify()
    tuning = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    tuning.loop_vectorization = True
    tuning.slp_vectorization = True
    tuning.loop_unrolling = True
    tuning.loop_interleaving = True
    builder = llvm.create_pass_builder(target_machine, tuning)
    builder.getModulePassManager().run(module, builder)
    module.verify()
    return module

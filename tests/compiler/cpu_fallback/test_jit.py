"""Host JIT engine: cache by shape, argument checking, vectorised code, lazy initialisation."""

import re
import subprocess
import sys

import numpy as np
import pytest

import compiler.cpu_fallback as cf
from compiler.cpu_fallback.codegen import build_ir


def test_kernel_cache_by_shape():
    jit = cf.HostJit()
    spec = cf.ReluSpec(size=33)
    first = jit.kernel(spec)
    assert jit.kernel(cf.ReluSpec(size=33)) is first
    assert spec in jit and len(jit) == 1
    other = jit.kernel(cf.ReluSpec(size=34))
    assert other is not first and len(jit) == 2
    assert first.compile_seconds > 0


def test_ops_use_the_given_jit():
    jit = cf.HostJit()
    cf.relu(np.zeros((2, 3), np.int8), jit=jit)
    assert cf.ReluSpec(size=6) in jit


def test_compiled_kernel_checks_arguments():
    kernel = cf.host_jit().kernel(cf.AddSpec(size=4))
    a = np.zeros(4, np.int8)
    with pytest.raises(cf.KernelShapeError, match="add: expected 2 inputs"):
        kernel(a)
    with pytest.raises(cf.KernelShapeError,
                       match=r"add: input 'b' must have shape \(4,\), got \(5,\)"):
        kernel(a, np.zeros(5, np.int8))
    with pytest.raises(cf.KernelDtypeError, match="add: input 'a' must be int8, got int16"):
        kernel(a.astype(np.int16), a)


def test_non_contiguous_input_jit_vs_numpy():
    x = np.arange(-64, 64, dtype=np.int8).reshape(8, 16)[:, ::2]
    np.testing.assert_array_equal(cf.relu(x), np.maximum(x, 0))


def test_symbols_are_stable_and_distinct():
    a = cf.Conv2dSpec(n=1, c=3, h=8, w=8, oc=4, kh=3, kw=3, shift=1)
    b = cf.Conv2dSpec(n=1, c=3, h=8, w=8, oc=4, kh=3, kw=3, shift=2)
    assert a.symbol == cf.Conv2dSpec(n=1, c=3, h=8, w=8, oc=4, kh=3, kw=3, shift=1).symbol
    assert a.symbol != b.symbol and a.symbol.startswith("vdla_cpu_conv2d_")
    assert build_ir([a, a]).count("define void") == 1


@pytest.mark.parametrize("spec", [
    cf.Conv2dSpec(n=1, c=3, h=224, w=224, oc=64, kh=7, kw=7, stride=2, pad=3, shift=8),
    cf.MaxPool2dSpec(n=1, c=64, h=112, w=112, kh=3, kw=3, stride=2, pad=1),
    cf.AddSpec(size=200704, shift=1, relu=True),
    cf.DenseSpec(n=1, k=512, m=1000, out_dtype="int32"),
    cf.QuantizeSpec(size=150528, frac=6),
], ids=lambda s: s.family)
def test_hot_loops_are_vectorised_on_host(spec):
    """The optimised host IR of the benchmarked kernels contains vector arithmetic."""
    text = cf.host_jit().optimised_ir(spec)
    assert re.search(r"<\d+ x i(8|16|32)>", text) or re.search(r"<\d+ x float>", text), text[:2000]


def test_loops_marked_not_to_unroll_carry_a_loop_id():
    """``ir.loop(unroll=False)`` becomes a distinct, self-referential llvm.loop node that LLVM
    reads (the stem conv's 4-column tap loop stays a loop after O3)."""
    spec = cf.Conv2dSpec(n=1, c=3, h=224, w=224, oc=64, kh=7, kw=7, stride=2, pad=3, shift=8)
    text = build_ir([spec])
    ids = re.findall(r"^(!\d+) = distinct !\{ (!\d+), (!\d+) \}$", text, re.M)
    assert ids and all(node == first for node, first, _ in ids)
    assert "vdla.loop.id" not in text
    assert "llvm.loop.unroll.disable" in cf.host_jit().optimised_ir(spec)


def test_scratch_buffers_are_allocated_per_kernel_not_passed():
    """A kernel's workspace is the caller's (CompiledKernel's) and its contents do not matter."""
    spec = cf.Conv2dSpec(n=2, c=5, h=9, w=11, oc=6, kh=3, kw=3, stride=2, pad=1, shift=5)
    assert [a.name for a in spec.args() if a.scratch] == ["work"]
    kernel = cf.HostJit().kernel(spec)
    rng = np.random.default_rng(4)
    inputs = [rng.integers(-128, 128, a.shape).astype(a.dtype) for a in spec.args() if a.is_input]
    first = kernel(*inputs)
    for buffer in kernel._workspace():
        buffer[...] = rng.integers(-2**15, 2**15, buffer.shape)
    np.testing.assert_array_equal(kernel(*inputs), first)
    with pytest.raises(cf.KernelShapeError, match="conv2d: expected 3 inputs"):
        kernel(*inputs, kernel._workspace()[0])


def test_import_does_no_llvm_work():
    code = ("import compiler.cpu_fallback as cf, compiler.cpu_fallback.jit as j; "
            "assert j._default is None; print('ok')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=False)
    assert result.stdout.strip() == "ok", result.stderr

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


def _conv_inputs(spec):
    rng = np.random.default_rng(7)
    return [rng.integers(-128, 128, a.shape).astype(a.dtype) for a in spec.args() if a.is_input]


CACHED_SPEC = cf.Conv2dSpec(n=1, c=5, h=9, w=11, oc=6, kh=3, kw=3, stride=2, pad=1, shift=5)


def test_object_code_comes_from_the_disk_cache_in_a_new_engine(cache_folder):
    """A second engine (a later process) loads the object the first one compiled instead of
    compiling again, and its kernel computes the same bytes."""
    from vdla_hw import cache

    inputs = _conv_inputs(CACHED_SPEC)
    first = cf.HostJit().kernel(CACHED_SPEC)(*inputs)
    assert cache.stats["cpu-kernel"]["miss"] == 1 and cache.stats["cpu-kernel"]["stored"] == 1
    again = cf.HostJit().kernel(CACHED_SPEC)(*inputs)
    assert cache.stats["cpu-kernel"]["hit"] == 1
    np.testing.assert_array_equal(again, first)
    uncached = cf.HostJit(cache=False).kernel(CACHED_SPEC)(*inputs)
    np.testing.assert_array_equal(uncached, first)
    assert cache.stats["cpu-kernel"]["hit"] == 1 and cache.stats["cpu-kernel"]["miss"] == 1


def test_a_damaged_object_entry_is_compiled_again(cache_folder, capsys):
    from vdla_hw import cache

    inputs = _conv_inputs(CACHED_SPEC)
    first = cf.HostJit().kernel(CACHED_SPEC)(*inputs)
    (entry,) = (cache_folder / "cpu-kernel").glob("*.pkl")
    data = bytearray(entry.read_bytes())
    data[-40] ^= 0xFF  # a flipped byte inside the machine code
    entry.write_bytes(bytes(data))
    again = cf.HostJit().kernel(CACHED_SPEC)(*inputs)
    np.testing.assert_array_equal(again, first)
    assert cache.stats["cpu-kernel"]["bad"] == 1 and cache.stats["cpu-kernel"]["miss"] == 2
    assert "fails its checksum" in capsys.readouterr().err


def test_object_key_names_the_ir_tools_and_target():
    from compiler.cpu_fallback import jit

    host = cf.HostJit(cache=False)  # owns its target machine: kept alive while it is used
    machine = host.target_machine
    text = build_ir([CACHED_SPEC])
    parts = jit.object_key_parts(text, machine)
    assert text in parts and machine.triple in parts and jit.OPT_LEVEL in parts
    import llvmlite
    import llvmlite.binding as llvm
    assert llvmlite.__version__ in parts and llvm.get_host_cpu_name() in parts
    assert llvm.get_host_cpu_features().flatten() in parts
    other = jit.object_key_parts(build_ir([cf.ReluSpec(size=3)]), machine)
    from vdla_hw.cache import key_of
    assert key_of(jit.CACHE_KIND, parts, jit.code_digest()) != key_of(jit.CACHE_KIND, other, jit.code_digest())

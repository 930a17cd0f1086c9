"""CPU fallback: LLVM kernels (llvmlite) for the operators that stay on the ARM CPU.

Operators (numpy in, numpy out, compiled on first use and cached by shape)::

    conv2d, max_pool2d, global_avg_pool, add, relu, dense, quantize, dequantize, pack, unpack

and the kernel specs the network executor uses for the rest of the graph: ``LutSpec``,
``MulAddSpec``, ``MulSpec``, ``AvgPool2dSpec``, ``ConcatSpec``, ``GatherSpec``, ``ResizeSpec``, ``SoftmaxSpec``, ``LayerNormSpec``, ``MatMulSpec``.

Lower level: kernel specs (``Conv2dSpec``, ...), ``HostJit``/``host_jit`` (host MCJIT),
``arm.build_arm_library`` (Cortex-A9 shared library), ``call.load_library`` (ctypes loader for
the board) and ``cost`` (modelled CPU seconds from the generated code). See docs/cpu_fallback.md.
Importing this package does no work and does not import llvmlite: the specs and
``load_library`` (ctypes) are what the board needs, and llvmlite has no ARMv7 wheel. The host JIT
(module ``__getattr__`` below), the numpy-level operators and the cost model's analysis load
llvmlite on first use.
"""

import importlib

from .call import CompiledKernel, load_library
from .conv import Conv2dSpec
from .dense import DenseSpec
from .elementwise import AddSpec, DequantizeSpec, QuantizeSpec, ReluSpec
from .errors import (KernelDtypeError, KernelError, KernelLimitError, KernelParamError, KernelShapeError,
                     KernelValueError, ToolchainError)
from .layernorm import LayerNormSpec
from .layout import PackSpec, UnpackSpec
from .lut import LutSpec, MulAddSpec
from .matmul import MatMulSpec
from .movement import ConcatSpec, GatherSpec
from .ops import (add, conv2d, dense, dequantize, global_avg_pool, max_pool2d, pack, quantize,
                  relu, unpack)
from .product import MulSpec
from .pool import AvgPool2dSpec, GlobalAvgPoolSpec, MaxPool2dSpec
from .resize import ResizeSpec
from .softmax import SoftmaxSpec
from .spec import ArgSpec, KernelSpec, Work

# Every kernel family, by its ``family`` name (a deployment rebuilds specs from this).
FAMILIES = {cls.family: cls for cls in (
    AddSpec, AvgPool2dSpec, ConcatSpec, Conv2dSpec, DenseSpec, DequantizeSpec, GatherSpec, GlobalAvgPoolSpec,
    LayerNormSpec, LutSpec, MatMulSpec, MaxPool2dSpec, MulAddSpec, MulSpec, PackSpec, QuantizeSpec, ReluSpec, ResizeSpec, SoftmaxSpec, UnpackSpec)}

__all__ = [
    "AddSpec", "ArgSpec", "AvgPool2dSpec", "CompiledKernel", "ConcatSpec", "Conv2dSpec", "DenseSpec",
    "DequantizeSpec", "FAMILIES", "GatherSpec", "LayerNormSpec", "LutSpec", "MatMulSpec", "MulAddSpec", "MulSpec", "ResizeSpec", "SoftmaxSpec",
    "GlobalAvgPoolSpec", "HostJit", "KernelDtypeError", "KernelError", "KernelLimitError", "KernelParamError",
    "KernelShapeError", "KernelSpec", "KernelValueError", "MaxPool2dSpec", "PackSpec", "QuantizeSpec", "ReluSpec",
    "ToolchainError", "UnpackSpec", "Work", "add", "conv2d", "dense", "dequantize",
    "global_avg_pool", "host_jit", "load_library", "max_pool2d", "pack", "quantize", "relu",
    "unpack",
]

_LAZY = {"HostJit": ".jit", "host_jit": ".jit"}


def __getattr__(name):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

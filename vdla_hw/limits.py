"""The documented bounds on the memory and work a program, a layer or a network may ask for.

Every tool checks these before it allocates or starts work, so a small malicious or mistaken
input (a 112-byte program with a 16383 x 16383 loop, a 4096 x 4096 x 512 convolution, a
resolution of 100000) ends in one clear error instead of exhausting the host or the board.

* ``MAX_DRAM_BYTES``: the largest DRAM image a device takes, 128 MiB. pynq allocates every DMA
  buffer from the PYNQ-Z1 kernel's contiguous-memory (CMA) pool, which is 128 MB (Xilinx/PYNQ,
  "CMA - Memory Management" notebook), a quarter of the board's 512 MB DDR3. The assembler,
  the bundle loader and the compiler refuse larger images; ``vdla serve`` takes it as its
  default frame-size limit.
* ``MAX_TENSOR_BYTES``: the largest tensor of a network, as float32 for one image (the host
  keeps a few of them per calibration image while quantizing): 128 MiB as well. For the
  built-in ResNets this is the stem's output, 64 x R/2 x R/2 floats, so R <= 1440.
* ``DEFAULT_MAX_CYCLES``: the simulator's and the reference semantics' default work bound,
  2**29 cycles (2.7 s of accelerator time at 200 MHz, about 500 times the largest ResNet-18
  layer at 224 x 224 on ``osdi18``). ``--max-cycles`` raises it. An instruction whose own cost
  would pass the bound is refused before it runs, naming it.
* ``LOOP_CHUNK_BYTES``: the simulator turns a GEMM/ALU loop nest into index arrays and int64
  products; a loop needing more than this (32 MiB: 262,144 uops at BATCH x BLOCK 1 x 16) runs
  in pieces, so memory does not grow with trip counts.
"""

from __future__ import annotations

import math

MAX_DRAM_BYTES = 128 << 20
MAX_TENSOR_BYTES = 128 << 20
DEFAULT_MAX_CYCLES = 1 << 29
LOOP_CHUNK_BYTES = 32 << 20
# The built-in ResNets' largest tensor is the stem's output, 64 channels at half the resolution.
RESNET_MAX_RESOLUTION = 2 * math.isqrt(MAX_TENSOR_BYTES // (64 * 4)) // 32 * 32


def mib(nbytes: int) -> str:
    """``nbytes`` for messages: '128 MiB', '3.2 GiB'."""
    if nbytes >= 1 << 30:
        return f"{nbytes / (1 << 30):.1f} GiB"
    return f"{nbytes / (1 << 20):.0f} MiB" if nbytes % (1 << 20) == 0 else f"{nbytes / (1 << 20):.1f} MiB"


# --- CPU kernels (compiler/cpu_fallback): the work and memory of one kernel call ----------
# ``MAX_CPU_KERNEL_OPS``: multiply-accumulates plus other element operations of one kernel call
# (``KernelSpec.work()``), 2**33 (8.6 G). The largest kernel of the built-in networks at the
# largest resolution MAX_TENSOR_BYTES admits (RESNET_MAX_RESOLUTION, 1440) is a ResNet stem or
# 3x3 conv of about 4.9 G MACs (ResNet's 115.6 M-MAC convs at 224, times (1440/224)**2); the
# bound is 1.75 times that: 11 to 14 s at the 0.6 to 0.8 G MAC/s the TVM paper's Fig. 21 shows for
# the Cortex-A9 (ResNet-18's convs, compiler/data/tvm_fig21_resnet18.csv). ``MAX_CPU_KERNEL_BYTES``:
# all buffers of one call together (inputs, output, workspace), twice MAX_TENSOR_BYTES: a
# kernel reads one tensor and writes one (the conv's int16 workspace is about twice its input).
# The host JIT and the board's library check both before any native code runs.
MAX_CPU_KERNEL_OPS = 1 << 33
MAX_CPU_KERNEL_BYTES = 2 * MAX_TENSOR_BYTES

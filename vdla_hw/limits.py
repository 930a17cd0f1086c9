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
* ``MAX_MODEL_BYTES``: the largest ONNX model file, and the most external data one model reads,
  1 GiB: about twice VGG-16's 528 MB of float32 weights (the largest network of torchvision's
  classification zoo; its first classifier weight alone is 411 MB, so weights are not bound by
  ``MAX_TENSOR_BYTES``).
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
MAX_MODEL_BYTES = 1 << 30
DEFAULT_MAX_CYCLES = 1 << 29
LOOP_CHUNK_BYTES = 32 << 20
# The built-in ResNets' largest tensor is the stem's output, 64 channels at half the resolution.
RESNET_MAX_RESOLUTION = 2 * math.isqrt(MAX_TENSOR_BYTES // (64 * 4)) // 32 * 32


def mib(nbytes: int) -> str:
    """``nbytes`` for messages: '128 MiB', '3.2 GiB'."""
    if nbytes >= 1 << 30:
        return f"{nbytes / (1 << 30):.1f} GiB"
    return f"{nbytes / (1 << 20):.0f} MiB" if nbytes % (1 << 20) == 0 else f"{nbytes / (1 << 20):.1f} MiB"

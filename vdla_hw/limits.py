"""The documented bounds on the memory and work a program, a layer or a network may ask for.

Every tool checks these before it allocates or starts work, so a small malicious or mistaken
input (a 112-byte program with a 16383 x 16383 loop, a 4096 x 4096 x 512 convolution, a
resolution of 100000) ends in one clear error instead of exhausting the host or the board.

* ``MAX_DRAM_BYTES``: the largest DRAM image a device takes, 128 MiB. pynq allocates every DMA
  buffer from the PYNQ-Z1 kernel's contiguous-memory (CMA) pool, which is 128 MB (Xilinx/PYNQ,
  "CMA - Memory Management" notebook), a quarter of the board's 512 MB DDR3. The assembler,
  the bundle loader and the compiler refuse larger images; ``vdla serve`` takes it as its
  default frame-size limit.
* ``MAX_TENSOR_BYTES``: the largest tensor of a network, as float32 for one model input:
  32 MiB, what one run (import, calibration, report, execution) makes within 512 MB and about
  5 s (see "A run's tensors" below; 128 MiB before issue 45's third round, when a 140-byte
  model expanding a 1 x 1 x 1 x 1 input to 128 MiB took 21 s and 1.7 GB). For the built-in
  ResNets this is the stem's output, 64 x R/2 x R/2 floats, so R <= 704.
* ``MAX_MODEL_BYTES``: the largest ONNX model file, and the most external data one model reads,
  1 GiB: about twice VGG-16's 528 MB of float32 weights (the largest network of torchvision's
  classification zoo; its first classifier weight alone is 411 MB, so weights are not bound by
  ``MAX_TENSOR_BYTES``).
* ``MAX_IMAGE_FILE_BYTES``: the largest image file ``--images``/``--calibration`` read, 128 MiB
  (a 6000 x 4000 photo is 5-20 MB as JPEG, 72 MB as uncompressed BMP); checked before it is read.
* ``DEFAULT_MAX_CYCLES``: the simulator's bound on simulated time and the reference semantics'
  bound on serial work (every instruction's cost under the timing contract, added up), 2**29
  cycles (2.7 s of accelerator time at 200 MHz, about 500 times the largest ResNet-18 layer at
  224 x 224 on ``osdi18``). ``--max-cycles`` raises it. An instruction whose own cost would pass
  the bound is refused before it runs, naming it.

Cycles do not bound a model's own running time (a 16383 x 16383 loop of one uop is 2**28
cycles, under the bound, and kept ``vdla exec`` busy for 2.6 hours), so each model also has a
bound on its own work, counted from the instructions before anything runs (vdla_hw/work.py:
loop extents x uop ranges; a 112-byte program is refused in milliseconds, naming the first
instruction past the bound and how long the whole program would take). Each default allows a
few minutes at the measured rate and is raised by an option. Rates come from
``benchmarks/work_bounds.py`` (the slowest pattern of each model; figures and load in
docs/simulator.md, "Work bounds"):

* ``REFERENCE_MAX_UOPS`` (``vdla exec --max-uops``): interpreter steps, one per instruction, per
  micro-op and per DRAM row moved; 2**23 = 8.4 M, about 5 minutes at ``REFERENCE_UOPS_PER_S`` =
  28,000 (the rate issue 22 measured on an idle machine; 6,000-11,000 at load 4.5). The largest
  ResNet-18/-34/-50 layer at 224 is about 0.5 M steps on ``osdi18``/``vta-pynq`` (15 s) and
  7.86 M on ``tiny`` (the 3x3 512 -> 512 at 7 x 7; 4.7 minutes).
* ``SIM_MAX_WORK`` (``vdla sim --max-work``, every run on the sim backend): multiply-add
  equivalents, 2**31, about 4 minutes at ``SIM_WORK_PER_S`` = 10 M (one equivalent is 100 ns:
  the time of one multiply-add of the slowest GEMM plan as issue 22 measured it on ``osdi18``).
  Each instruction costs ``SIM_INSN_WORK`` (events, transfers, race bookkeeping: about 0.27 ms
  each at load 4.5) plus its loop priced from the plan the simulator will run
  (vdla_sim/cost.py, cheap and no simulation; issue 45). A GEMM that is certainly a few BLAS
  products (``dense``/``grouped``) costs a uop at ``SIM_GEMM_PRODUCT_UOPS_PER_S`` plus its
  BATCH x BLOCK_IN x BLOCK_OUT multiply-adds at ``SIM_GEMM_PRODUCT_MACS_PER_S``, plus
  ``SIM_GEMM_PIECE_WORK`` per piece it is planned in; a reset GEMM a uop at
  ``SIM_GEMM_RESET_UOPS_PER_S``; any other GEMM (one vector-matrix product per uop, or uops
  unknown before the run) its multiply-adds at ``SIM_WORK_PER_S`` (at least
  ``SIM_GEMM_UOP_WORK`` per uop); an ALU uop ``SIM_ALU_UOP_WORK`` (one ALU wave per uop, its
  slowest case). Those rates are the slowest ``benchmarks/work_bounds.py`` recorded for each
  plan with every instruction planned anew (benchmarks/results/work_bounds.json, load 23 on
  2 cores; tests/sim/test_work_pricing.py checks they are no faster than the record), so each
  price is an upper bound on its plan's time: the largest programs of VGG-11 at 224 and
  fcn_resnet50 at 160 (3x3 256 -> 256 at 56 x 56, 3x3 2048 -> 512 at 20 x 20, its 3x3 at
  dilation 4 as a 9x9 kernel) count 0.3-1.4 G on ``osdi18`` (1.9-8.6 G at the slowest plan); the
  3x3 256 -> 256 at 56 x 56 is priced 32 s and ran in 0.18-0.27 s of CPU, a 3x3 128 -> 128 at
  28 x 28 on ``tiny`` (176,578 instructions) 164 s and 4.3 s.
* ``RTL_MAX_CYCLES`` (``vdla rtl --max-cycles``; the rtl device's largest budget): simulated
  cycles per simulator and bench at ``RTL_CYCLES_PER_S``: Verilator's compiled bench 2**28 (4.5
  minutes at 1 M cycles/s, docs/rtl.md), Verilator under cocotb 2**23 (4.7 minutes at 30,000
  cycles/s, docs/rtl.md), Icarus under cocotb 2**17 (4.4 minutes at 500 cycles/s; measured here
  200 cycles/s at load 5-8: a 12,345-cycle and an 88,284-cycle ``tiny`` conv took 166 s and
  540 s, builds included). A program whose busiest module alone needs more cycles than the budget cannot
  finish and is refused before the RTL starts; without a caller's timeout the rtl device
  gives a run twice the program's serial cycles, at least ``RTL_MIN_BUDGET`` (2 M), so a hang
  still ends within seconds.
* ``LOOP_CHUNK_BYTES``: the simulator turns a GEMM/ALU loop nest into index arrays and int64
  products; a loop needing more than this (32 MiB: 262,144 uops at BATCH x BLOCK 1 x 16) runs
  in pieces, so memory does not grow with trip counts.
"""

from __future__ import annotations

import math

MAX_DRAM_BYTES = 128 << 20
MAX_TENSOR_BYTES = 32 << 20
MAX_MODEL_BYTES = 1 << 30
MAX_IMAGE_FILE_BYTES = 128 << 20
DEFAULT_MAX_CYCLES = 1 << 29
# Work bounds per model (vdla_hw/work.py counts the work; the docstring above gives the basis).
REFERENCE_UOPS_PER_S = 28_000
REFERENCE_MAX_UOPS = 1 << 23
SIM_WORK_PER_S = 10_000_000
SIM_GEMM_UOP_WORK = 16
SIM_ALU_UOP_WORK = 106
SIM_INSN_WORK = 4096
# Each GEMM plan's price (vdla_sim/cost.py), from benchmarks/results/work_bounds.json: the product
# plans' slowest uops/s on tiny and multiply-adds/s on osdi18, the reset rate, one 64-pattern
# plan piece (10 M / its instructions per second), the ALU's one-uop waves (10 M / uops per second).
SIM_GEMM_PRODUCT_UOPS_PER_S = 2_500_000
SIM_GEMM_PRODUCT_MACS_PER_S = 74_000_000
SIM_GEMM_RESET_UOPS_PER_S = 63_000_000
SIM_GEMM_PIECE_WORK = 19_700
SIM_MAX_WORK = 1 << 31
# RTL runs (driver/rtl_run.py) by (simulator, bench): simulated cycles per second, cycle bound.
RTL_CYCLES_PER_S = {("verilator", "compiled"): 1_000_000, ("verilator", "cocotb"): 30_000,
                    ("icarus", "cocotb"): 500}
RTL_MAX_CYCLES = {("verilator", "compiled"): 1 << 28, ("verilator", "cocotb"): 1 << 23,
                  ("icarus", "cocotb"): 1 << 17}
RTL_MIN_BUDGET = 2_000_000
LOOP_CHUNK_BYTES = 32 << 20
# The built-in ResNets' largest tensor is the stem's output, 64 channels at half the resolution.
RESNET_MAX_RESOLUTION = 2 * math.isqrt(MAX_TENSOR_BYTES // (64 * 4)) // 32 * 32


def mib(nbytes: int) -> str:
    """``nbytes`` for messages: '128 MiB', '32.01 MiB', '3.2 GiB'."""
    if nbytes >= 1 << 30:
        return f"{nbytes / (1 << 30):.1f} GiB"
    # two decimals off a whole MiB: a value just past a limit must not print as the limit itself
    return f"{nbytes / (1 << 20):.0f} MiB" if nbytes % (1 << 20) == 0 else f"{nbytes / (1 << 20):.2f} MiB"


# --- CPU kernels (compiler/cpu_fallback): the work and memory of one kernel call ----------
# ``MAX_CPU_KERNEL_OPS``: multiply-accumulates plus other element operations of one kernel call
# (``KernelSpec.work()``), 2**33 (8.6 G). The largest kernel of the built-in networks at the
# resolution of 1440 (the largest MAX_TENSOR_BYTES admitted before it became 32 MiB) is a ResNet stem or
# 3x3 conv of about 4.9 G MACs (ResNet's 115.6 M-MAC convs at 224, times (1440/224)**2); the
# bound is 1.75 times that: 11 to 14 s at the 0.6 to 0.8 G MAC/s the TVM paper's Fig. 21 shows for
# the Cortex-A9 (ResNet-18's convs, compiler/data/tvm_fig21_resnet18.csv). ``MAX_CPU_KERNEL_BYTES``:
# all buffers of one call together (inputs, output, workspace, a dense layer's weights), 256 MiB:
# weights are not bound by MAX_TENSOR_BYTES (VGG-11's first classifier layer, 25088 x 4096 int8
# weights, takes 98 MiB of buffers; its whole run is issue 45's benchmark of a real network).
# The host JIT and the board's library check both before any native code runs.
MAX_CPU_KERNEL_OPS = 1 << 33
MAX_CPU_KERNEL_BYTES = 256 << 20

# --- Import (compiler/frontend): what one layer of an imported network may ask of the host ----
# Every value onnx's shape inference gives a shape is checked against MAX_TENSOR_BYTES before
# constant folding, import, calibration or the references allocate it (compiler/frontend/fold.py).
# ``MAX_LAYER_MACS``: multiply-accumulates of one convolution as the float and quantized numpy
# references, the CPU kernels and the accelerator run it (a dilated kernel's zeros between the
# taps included, compiler/frontend/onnx_import.py), per image: the CPU kernels' bound, on the
# same basis (the largest conv of the built-in networks at RESNET_MAX_RESOLUTION is 4.9 G); the
# importer refuses a larger one before the references spend minutes on it. A 147 kB 64 -> 64
# 3x3 conv at dilation 40 on a 64 x 64 map is 110 G (issue 45 measured 77 s of CPU on such a conv before
# placement refused it).
# ``MAX_KERNEL_BYTES``: the float32 weight the importer builds for a dilated conv (the taps with
# zeros between them, trimmed to those that read the input), 128 MiB: a weight, not an activation
# (torchvision's fcn_resnet50 builds two of 81 MiB: 2048 -> 512 channels, 3x3 at dilation 4).
# ``MAX_RESIZE_MAP_BYTES``: a bilinear Resize's (H' x W', 4) int64 index map, one tensor:
# MAX_TENSOR_BYTES, an output plane of 1 M pixels (1024 x 1024).
# ``WINDOW_TAP_OPS``: what one kernel tap of a conv or pooling costs the numpy references besides
# its products (a Python step and a numpy call, a few microseconds), in operations: counted in
# MAX_LAYER_MACS too, so a 100-byte MaxPool of a 5000 x 5000 window over a padded 1 x 1 input
# (25 M taps, 25 M products) is refused, not a 25 M-step loop.
MAX_LAYER_MACS = MAX_CPU_KERNEL_OPS
WINDOW_TAP_OPS = 4096
MAX_KERNEL_BYTES = 128 << 20
MAX_RESIZE_MAP_BYTES = MAX_TENSOR_BYTES

# --- Unrolled recurrent layers (compiler/frontend/recurrent.py) ----------------------------
# An LSTM/GRU node becomes about 17 graph nodes and one recurrent product per step and direction,
# each product with its own copy of the recurrent weights (4H x H for an LSTM). torch's 2-layer
# nn.LSTM(64, 256) at sequence 16 (32 steps, 32 MiB of recurrent weights counted per step) took 22 s of CPU for a
# whole cold `vdla run` (4 s warm), so about 0.7 s per step: ``MAX_UNROLLED_STEPS`` (sequence x
# directions of one node) 1024 keeps one node's run within minutes. ``MAX_UNROLLED_WEIGHT_BYTES``:
# one node's recurrent weights as float32, counted once per step after the first and direction
# (the quantizer gives each step's product its own int8 copy, and equalization its own scaled
# float copy): MAX_DRAM_BYTES, so a 1024-hidden LSTM unrolls at most 9 steps. In a run the
# network's op count binds first: MAX_GRAPH_OPS (below) is about 240 unrolled steps in all.
MAX_UNROLLED_STEPS = 1024
MAX_UNROLLED_WEIGHT_BYTES = MAX_DRAM_BYTES

# --- A run's inputs and tensors (vdla run/deploy; issue 45) --------------------------------
# A run makes its synthetic inputs one at a time as each stage reads them (calibration, the
# quantization report, the executed input again: 4 + 4 + 1 by default) and holds none between
# stages. Making one holds its float64 buffer and its float32 copy (3 times its float32 bytes);
# the stages that read it hold at most about 3.5 tensors of its size at once (a Relu's input,
# its output, a dequantized copy, int8 codes). With the process's own ~160 MB (interpreter,
# numpy, onnx, the project's modules: 162 MB peak RSS for a 64 x 64 Relu), memory alone would
# allow 96 MiB per input (160 + 3.5 x 100.7 MB = 512 MB; a 5016 x 5016 Relu made of 1 + 1
# inputs peaked at 450 MB); time allows less: the stages pass over the whole tensor whatever
# the number of inputs, and the 5016 x 5016 run took 5.3-6.4 s of CPU. A tensor made inside the
# network costs more than an input of its size: a data-movement op's index map (fold.index_maps)
# is built at import, so a 1 x 1 x 1 x 1 input Expanded to 4096 x 4096 (64 MiB) peaked at 905 MB
# in the import alone, to 2896 x 2896 (32 MiB) at 495 MB, and its whole run took 4.1 s and 496 MB
# (load 1). ``RUN_MAX_INPUT_BYTES`` = MAX_TENSOR_BYTES = 32 MiB: an input is one of the tensors.
# ``RUN_MAX_MADE_BYTES``: all the inputs one run makes, 288 MiB (nine 32 MiB inputs: the
# 1 x 1 x 2896 x 2896 Relu's run with the default 4 + 4 took 4.0-4.2 s of CPU at load 4-5 on 2
# cores and 268 MB, 1.5 s of it start-up; benchmarks/run_data_path.py). Figures are CPU
# seconds of the run and its children at load 2-5 on 2 cores. Both are checked before any input
# is made (vdla/inputs.py check_run_inputs), the second also on the largest tensor the network
# makes of one input, which each input makes again (check_run_tensors); the 1 x 1 x 5792 x 5792
# Relu (nine 128 MiB inputs, 2.1 GB and 22.7 s before) is refused.
RUN_MAX_INPUT_BYTES = MAX_TENSOR_BYTES

# --- A model's nodes (issue 45) -------------------------------------------------------------
# Every stage of a run (calibration, the quantization report, placement, execution, the
# reference) costs about a millisecond per op however small its tensors: a chain of 4,000
# element-wise ops on a 1 x 3 x 8 x 8 input ran in 5.4 CPU s and 190 MB (load 3), one of 100,000
# (a 2.6 MB file) ran 42 s and out of 512 MB. ``MAX_GRAPH_OPS``: the ops of an imported network,
# 4,096, checked before calibration (vdla/network.py); torchvision's vit_b_16 exported by torch 2.15
# is 270 ops after import (1,088 nodes in the file), convnext_tiny 237 (454). The ONNX
# file's own nodes may be more (the exporters' shape arithmetic folds away): ``MAX_MODEL_NODES``,
# 16,384, checked as the file is parsed (compiler/frontend/onnx_read.py); importing a chain of
# 16,384 nodes took 1.9 CPU s and 95 MB.
MAX_GRAPH_OPS = 4096
MAX_MODEL_NODES = 16384
RUN_MAX_MADE_BYTES = 288 << 20

"""The CPU cost model: modelled seconds of the CPU fallback kernels from the code LLVM generates.

    from compiler.cpu_fallback.cost import CpuModel
    model = CpuModel("cortex-a9")                # or "cortex-a53"; cpu_names() lists them
    cost = model.kernel_cost(spec)                 # KernelCost: seconds, cycles, basis, parts
    host = model.offload_cost(image_bytes=..., packs=[...], unpacks=[...], accelerator_s=...,
                              runtime=RuntimeProfile(...))   # HostCost: seconds, parts

Per kernel: compile for the CPU (:mod:`.target`), count block executions and simulate the
caches on this machine (:mod:`.profile`, :mod:`.cachesim`), time each machine block with
llvm-mca (:mod:`.mca`, :mod:`.blocks`), cache the analysis on disk (:mod:`.analysis`), turn it
into seconds with the CPU's parameters (:mod:`.model`). CPUs are data (:mod:`.cpus`,
``compiler/data/cpus/*.json``). Nothing here runs at import time; llvmlite is imported only when
a kernel is analysed. See docs/cpu_fallback.md.
"""

from .cpus import Cpu, CpuError, cpu_names, load_cpu
from .model import DEFAULT_CPU, CpuModel, HostCost, KernelCost, RuntimeProfile, poll_delay

__all__ = ["DEFAULT_CPU", "Cpu", "CpuError", "CpuModel", "HostCost", "KernelCost", "RuntimeProfile",
           "cpu_names", "load_cpu", "poll_delay"]

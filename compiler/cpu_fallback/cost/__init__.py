"""The CPU cost model: modelled seconds of the CPU fallback kernels from the code LLVM generates.

    from compiler.cpu_fallback.cost import CpuModel
    model = CpuModel("cortex-a9")                # or "cortex-a53"; cpu_names() lists them
    model = CpuModel("cortex-a9", baseline="fp32", threads=2)   # baseline_names() lists them
    cost = model.kernel_cost(spec)                 # KernelCost: seconds, cycles, basis, parts
    host = model.offload_cost(image_bytes=..., packs=[...], unpacks=[...], accelerator_s=...,
                              runtime=RuntimeProfile(...))   # HostCost: seconds, parts

Per kernel: compile for the CPU (:mod:`.target`), count block executions and simulate the
caches on this machine (:mod:`.profile`, :mod:`.cachesim`), time each machine block with
llvm-mca (:mod:`.mca`, :mod:`.blocks`), cache the analysis on disk (:mod:`.analysis`), turn it
into seconds with the CPU's parameters (:mod:`.model`, :mod:`.memory`, :mod:`.threads`). CPUs
are data (:mod:`.cpus`, ``compiler/data/cpus/*.json``), and so are baselines (:mod:`.baselines`,
``compiler/data/baselines/*.json``). Nothing here runs at import time; llvmlite is imported only when
a kernel is analysed. See docs/cpu_fallback.md.
"""

from .baselines import Baseline, BaselineError, baseline_names, load_baseline
from .cpus import Cpu, CpuError, cpu_names, load_cpu
from .model import DEFAULT_BASELINE, DEFAULT_CPU, THREADS, CpuModel, HostCost, KernelCost, RuntimeProfile, poll_delay

__all__ = ["DEFAULT_BASELINE", "DEFAULT_CPU", "THREADS", "Baseline", "BaselineError", "Cpu", "CpuError", "CpuModel",
           "HostCost", "KernelCost", "RuntimeProfile", "baseline_names", "cpu_names", "load_baseline", "load_cpu",
           "poll_delay"]

"""Whole networks: place each quantized op on VDLA or the CPU, run the graph, report the time.

``partition(qgraph, config, options)`` -> placements with reasons; ``execute(...)`` runs the
graph (accelerator ops as bundles on a driver device, CPU ops through the LLVM kernels) and
returns the output with one :class:`LayerRecord` per op; ``report.summarise`` gives the totals
(CPU-only vs CPU + VDLA, the Amdahl bound).
"""

from compiler.network.executor import ExecResult, LayerRecord, execute
from compiler.network.partition import PartitionOptions, Placement, partition

__all__ = ["ExecResult", "LayerRecord", "PartitionOptions", "Placement", "execute", "partition"]

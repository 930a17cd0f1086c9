"""What a point reports: the columns of ``points.csv`` and how each is computed.

Times come from the executor's report (``compiler.network.report.summarise``): accelerator
ops take their simulated cycles at the point's clock, CPU ops and layout conversions the CPU
model's seconds — whatever the executor uses, the sweep reports. Resources come from the
resource model (or real synthesis with ``--synth``), energy from the activity counts and the
per-access table.
"""

from __future__ import annotations

from dse.activity import BUFFERS

# Objectives a search or a Pareto front may use: name -> +1 (minimise) or -1 (maximise).
OBJECTIVES = {"latency_s": 1, "energy_j": 1, "part_use": 1, "lut": 1, "ff": 1, "dsp": 1, "bram36": 1,
              "speedup": -1, "throughput_ips": -1, "gemm_utilization": -1}
DEFAULT_OBJECTIVES = ("latency_s", "part_use", "energy_j")
RESOURCES = ("lut", "ff", "dsp", "bram36")

IDENTITY = ("key", "status", "error", "model", "model_hash", "fingerprint")
PERFORMANCE = ("latency_s", "throughput_ips", "cpu_only_s", "speedup", "offloaded_speedup", "amdahl_bound",
               "accelerator_s", "accelerator_cycles", "cpu_resident_s", "gemm_utilization", "gops", "dram_bytes",
               "ops_on_vdla")
HARDWARE = ("lut", "ff", "dsp", "bram36", "resource_basis", "fmax_mhz", "clock_met", "clock_basis", "part_use",
            "verdict")
ENERGY = ("energy_j", "energy_mac_j", "energy_alu_j", *(f"energy_sram_{b}_j" for b in BUFFERS), "energy_dram_j")
TRAILER = ("config_json", "eval_s", "programs_simulated", "worker")


def columns(dimensions: list[str], parts: list[str], synth: bool = False) -> list[str]:
    """Column order of points.csv: identity, the swept dimensions, results, bookkeeping (with
    ``synth``, the resource model's own prediction beside the synthesised resources)."""
    fits = [f"fits_{p}" for p in parts]
    model = [f"{r}_model" for r in RESOURCES] if synth else []
    return [*IDENTITY, *dimensions, *PERFORMANCE, *HARDWARE, *model, *fits, *ENERGY, *TRAILER]


def performance(evaluation, config) -> dict:
    """The performance columns from an :class:`dse.evaluate.Evaluation`."""
    t = evaluation.totals
    vdla = [r for r in evaluation.records if r.placement == "vdla"]
    mac_uops = sum(r.utilization * r.cycles for r in vdla)
    cycles = t["accelerator_cycles"]
    return {
        "latency_s": t["offload_s"],
        "throughput_ips": 1.0 / t["offload_s"] if t["offload_s"] else 0.0,
        "cpu_only_s": t["cpu_only_s"],
        "speedup": t["speedup"],
        "offloaded_speedup": t["offloaded_speedup"],
        "amdahl_bound": t["amdahl_bound"],
        "accelerator_s": t["accelerator_s"],
        "accelerator_cycles": cycles,
        "cpu_resident_s": t["cpu_resident_s"],
        "gemm_utilization": mac_uops / cycles if cycles else 0.0,
        "gops": 2.0 * t["offloaded_macs"] / t["accelerator_s"] / 1e9 if t["accelerator_s"] else 0.0,
        "dram_bytes": sum(r.bytes for r in vdla),
        "ops_on_vdla": len(vdla),
    }


def energy_columns(estimate: dict) -> dict:
    parts = estimate["parts"]
    out = {"energy_j": estimate["energy_j"], "energy_mac_j": parts["mac"], "energy_alu_j": parts["alu"],
           "energy_dram_j": parts["dram"]}
    out.update({f"energy_sram_{b}_j": parts[f"sram_{b}"] for b in BUFFERS})
    return out

"""Totals of a network run: CPU-only vs CPU + VDLA, Fig. 21-style categories, the Amdahl bound.

Categories follow the TVM paper's Fig. 21: ``layer0`` is the first convolution (the stem),
``conv`` the other convolutions, ``other`` everything else; ``host`` (CPU + VDLA only) is the
host's work around every offloaded op (packing, image copies, cache maintenance, registers,
polling, unpacking). CPU and host times are modelled by the CPU model named in ``cpu_model``,
accelerator times come from the device (simulated on sim/rtl).
"""

from __future__ import annotations

from compiler.network.executor import LayerRecord, bytes_moved


def category(record: LayerRecord, first_conv: str) -> str:
    if record.name == first_conv:
        return "layer0"
    return "conv" if record.op == "conv" else "other"


CATEGORIES = ("layer0", "conv", "other", "host")


def summarise(records: list[LayerRecord], cpu_model: dict | None = None, moved: dict | None = None) -> dict:
    """Totals and categories; every time in seconds. ``cpu_model`` (name, clock, parameters
    with sources) is reported as it is given; ``moved`` (``ExecResult.bytes_moved``, default: summed
    from the records) becomes ``bytes_moved``."""
    first_conv = next((r.name for r in records if r.op == "conv"), "")
    cpu_only = dict.fromkeys(CATEGORIES, 0.0)
    offload = dict.fromkeys(CATEGORIES, 0.0)
    for r in records:
        cat = category(r, first_conv)
        cpu_only[cat] += r.cpu_seconds
        offload[cat] += r.seconds
        offload["host"] += r.host_seconds
    vdla = [r for r in records if r.placement == "vdla"]
    host = {}
    for r in vdla:
        for part, value in r.host_parts.items():
            host[part] = host.get(part, 0.0) + value
    resident = sum(r.seconds for r in records if r.placement == "cpu") + offload["host"]
    cpu_only_s, offload_s = sum(cpu_only.values()), sum(offload.values())
    offloaded_cpu = sum(r.cpu_seconds for r in vdla)
    offloaded_acc = sum(r.seconds for r in vdla)
    macs = sum(r.macs for r in vdla)
    cycles = sum(r.cycles for r in vdla)
    return {
        "cpu_only_s": cpu_only_s,
        "offload_s": offload_s,
        "speedup": cpu_only_s / offload_s if offload_s else float("inf"),
        "amdahl_bound": cpu_only_s / resident if resident else float("inf"),
        "offloaded_speedup": offloaded_cpu / offloaded_acc if offloaded_acc else 0.0,
        "accelerator_s": offloaded_acc,
        "accelerator_cycles": cycles,
        "offloaded_macs": macs,
        "cpu_resident_s": resident,
        "host_s": offload["host"],
        "host_parts": host,
        "bytes_moved": moved if moved is not None else bytes_moved(records),
        "categories": {"cpu_only": cpu_only, "cpu_plus_vdla": offload},
        "cpu_model": cpu_model,
        "time_basis": (f"CPU and host times modelled ({cpu_model['basis']}, {cpu_model['name']} at "
                       f"{cpu_model['clock_hz'] / 1e6:g} MHz); accelerator times from the device at the "
                       "configured clock") if cpu_model else
                      "CPU times not modelled; accelerator times from the device at the configured clock",
    }


def table(records: list[LayerRecord], totals: dict) -> str:
    """The per-layer table and the totals as text."""
    cpu = (totals.get("cpu_model") or {}).get("name", "CPU")
    lines = [f"{'layer':<24} {'op':<8} {'place':<5} {'MMAC':>8} {'cycles':>11} {'time ms':>9} {'host ms':>8} "
             f"{'CPU ms':>9} {'speedup':>8} {'util':>6}  reason"]
    for r in records:
        speedup = f"{r.cpu_seconds / r.seconds:8.1f}" if r.placement == "vdla" and r.seconds else f"{'':>8}"
        util = f"{r.utilization * 100:5.1f}%" if r.placement == "vdla" and r.op == "conv" else f"{'':>6}"
        host = f"{r.host_seconds * 1e3:8.3f}" if r.placement == "vdla" else f"{'':>8}"
        lines.append(f"{r.name:<24} {r.op:<8} {r.placement:<5} {r.macs / 1e6:8.2f} {r.cycles:11,d} "
                     f"{r.seconds * 1e3:9.3f} {host} {r.cpu_seconds * 1e3:9.3f} {speedup} {util}  {r.reason}")
    t = totals
    parts = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in t["host_parts"].items())
    lines += ["",
              f"{'CPU only (modelled ' + cpu + '):':<36}{t['cpu_only_s']:.3f} s",
              f"host around offloads (modelled):    {t['host_s']:.3f} s   ({parts or 'none'})",
              f"CPU + VDLA:                         {t['offload_s']:.3f} s   speedup {t['speedup']:.2f}x",
              f"offloaded ops alone:                {t['accelerator_s'] * 1e3:.2f} ms on VDLA   "
              f"speedup {t['offloaded_speedup']:.1f}x",
              f"Amdahl bound (infinitely fast VDLA): {t['amdahl_bound']:.2f}x   "
              f"(CPU-resident time {t['cpu_resident_s']:.3f} s)"]
    lines += moved_lines(t.get("bytes_moved"))
    return "\n".join(lines)


def moved_lines(moved: dict | None) -> list[str]:
    """The bytes moved between host and device, at load and per inference, by category."""
    if not moved:
        return []
    out = []
    for key, label in (("load", "bytes moved at load:"), ("per_inference", "bytes moved per inference:")):
        parts = ", ".join(f"{k} {v / 1e6:.3f} MB" for k, v in moved.get(key, {}).items() if v)
        out.append(f"{label:<36}{parts or 'none'}")
    return out

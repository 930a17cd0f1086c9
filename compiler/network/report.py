"""Totals of a network run: CPU-only vs CPU + VDLA, Fig. 21-style categories, the Amdahl bound.

Categories follow the TVM paper's Fig. 21: ``layer0`` is the first convolution (the stem),
``conv`` the other convolutions, ``other`` everything else; ``host`` (CPU + VDLA only) is the
host's work around every offloaded op (packing, image copies, cache maintenance, registers,
polling, unpacking). CPU and host times are modelled by the CPU model named in ``cpu_model``,
accelerator times come from the device (simulated on sim/rtl).

Work is counted two ways (:func:`useful_work`): ``macs``, the MACs an op executed where it ran
(on VDLA every GEMM lane, padded channels included), and ``useful_macs``, those of the unpadded
op; GOPS and utilisation are given for both. An offload slower than the CPU alone (accelerator
+ host > CPU, :func:`slower_than_cpu`) is flagged. What the device did not measure (GEMM
utilisation and DRAM bytes on the rtl and pynq targets: ``LayerRecord.measured_by``) is None in
the JSON and "not measured" in the text, never 0.
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
        **useful_totals(records),
    }


def slower_than_cpu(record: LayerRecord) -> bool | None:
    """Whether an offloaded op took longer (accelerator + host) than its kernel on the CPU alone;
    None for a CPU op or where the CPU is not modelled."""
    if record.placement != "vdla" or not record.cpu_seconds:
        return None
    return record.seconds + record.host_seconds > record.cpu_seconds


def useful_work(record: LayerRecord) -> dict:
    """GOPS and GEMM utilisation of an offloaded conv or dense, of the executed lanes' MACs
    (``macs``, padding included) and of the useful ones (``useful_macs``); zeros elsewhere.
    Useful utilisation = utilisation x useful_macs / macs (the same cycles, fewer real MACs);
    None where the device did not measure the utilisation."""
    on_gemm = record.placement == "vdla" and record.macs > 0 and record.seconds > 0
    if not on_gemm:
        return {"gops": 0.0, "useful_gops": 0.0, "useful_utilization": 0.0}
    return {"gops": 2 * record.macs / record.seconds / 1e9,
            "useful_gops": 2 * record.useful_macs / record.seconds / 1e9,
            "useful_utilization": None if record.utilization is None else
            record.utilization * record.useful_macs / record.macs}


def layer_row(record: LayerRecord) -> dict:
    """A record as the report's JSON row: its fields, its GOPS and utilisation both ways, and the
    offload comparison from the run (accelerator, host and CPU seconds; slower than the CPU?)."""
    offload = None if record.placement != "vdla" else {
        "accelerator_s": record.seconds, "host_s": record.host_seconds, "cpu_s": record.cpu_seconds,
        "slower_than_cpu": slower_than_cpu(record)}
    return {**record.as_dict(), **useful_work(record), "offload": offload}


def useful_totals(records: list[LayerRecord]) -> dict:
    """Offloaded GEMM work both ways (MACs, GOPS, utilisation; the utilisations None if a device
    did not measure one op's), the network's useful MACs and how many ops with MACs stay on the
    CPU (each with its reason in the table), what measured it (``measured_by``: the offloaded ops' distinct
    bases) and the offloads slower than the CPU."""
    gemm = [r for r in records if r.placement == "vdla" and r.macs > 0]
    seconds, cycles = sum(r.seconds for r in gemm), sum(r.cycles for r in gemm)
    macs, useful = sum(r.macs for r in gemm), sum(r.useful_macs for r in gemm)
    measured = all(r.utilization is not None for r in gemm)
    busy = sum(r.utilization * r.cycles for r in gemm) if measured else None
    return {"offloaded_ops": sum(r.placement == "vdla" for r in records), "offloaded_useful_macs": useful,
            "useful_macs": sum(r.useful_macs for r in records),
            "cpu_ops_with_macs": sum(r.placement != "vdla" and r.useful_macs > 0 for r in records),
            "gemm_gops": 2 * macs / seconds / 1e9 if seconds else 0.0,
            "gemm_useful_gops": 2 * useful / seconds / 1e9 if seconds else 0.0,
            "gemm_utilization": None if not measured else busy / cycles if cycles else 0.0,
            "gemm_useful_utilization": None if not measured else busy / cycles * useful / macs if cycles and macs
            else 0.0,
            "measured_by": sorted({r.measured_by for r in records if r.placement == "vdla"}),
            "slower_offloads": [r.name for r in records if slower_than_cpu(r)]}


SLOWER = "!"  # marks an offload slower than the CPU in the table's place column
NOT_MEASURED = "n/m"  # a utilisation column the device did not measure


def table(records: list[LayerRecord], totals: dict) -> str:
    """The per-layer table and the totals as text."""
    cpu = (totals.get("cpu_model") or {}).get("name", "CPU")
    lines = [f"{'layer':<24} {'op':<8} {'place':<5} {'MMAC':>8} {'cycles':>11} {'time ms':>9} {'host ms':>8} "
             f"{'CPU ms':>9} {'speedup':>8} {'GOPS':>6} {'useful':>6} {'util':>6} {'useful':>6}  reason"]
    for r in records:
        speedup = f"{r.cpu_seconds / r.seconds:8.1f}" if r.placement == "vdla" and r.seconds else f"{'':>8}"
        host = f"{r.host_seconds * 1e3:8.3f}" if r.placement == "vdla" else f"{'':>8}"
        place = r.placement + (SLOWER if slower_than_cpu(r) else "")
        lines.append(f"{r.name:<24} {r.op:<8} {place:<5} {r.useful_macs / 1e6:8.2f} {r.cycles:11,d} "
                     f"{r.seconds * 1e3:9.3f} {host} {r.cpu_seconds * 1e3:9.3f} {speedup} {_work(r)}  {r.reason}")
    t = totals
    parts = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in t["host_parts"].items())
    lines += ["", "MMAC: useful MACs (real channels and pixels); GOPS and util: of every GEMM lane (padding "
              "included); useful: of the useful MACs",
              *([f"{SLOWER}: offloaded but slower than the CPU alone (accelerator + host > CPU): "
                 f"{len(t['slower_offloads'])} op(s)"] if t.get("slower_offloads") else []),
              *([f"{NOT_MEASURED}: not measured ({'; '.join(t['measured_by'])})"]
                if t.get("gemm_utilization", 0.0) is None else []),
              "",
              f"{'CPU only (modelled ' + cpu + '):':<36}{t['cpu_only_s']:.3f} s",
              f"host around offloads (modelled):    {t['host_s']:.3f} s   ({parts or 'none'})",
              f"CPU + VDLA:                         {t['offload_s']:.3f} s   speedup {t['speedup']:.2f}x",
              f"offloaded ops alone:                {t['accelerator_s'] * 1e3:.2f} ms on VDLA   "
              f"speedup {t['offloaded_speedup']:.1f}x" if t['accelerator_s'] else
              "offloaded ops alone:                none (nothing is offloaded)",
              f"offloaded GEMM work:                {t['gemm_gops']:.1f} GOPS, "
              f"utilisation {_percent(t['gemm_utilization'], '.1f', 'not measured')} "
              f"(every lane); useful {t['gemm_useful_gops']:.1f} GOPS, "
              f"{_percent(t['gemm_useful_utilization'], '.1f', 'not measured')}",
              offload_share(t),
              f"Amdahl bound (infinitely fast VDLA): {t['amdahl_bound']:.2f}x   "
              f"(CPU-resident time {t['cpu_resident_s']:.3f} s)"]
    lines += moved_lines(t.get("bytes_moved"))
    return "\n".join(lines)


def offload_share(t: dict) -> str:
    """The share of the network's useful MACs offloaded, and how many ops with MACs stay on the CPU."""
    total, on = t["useful_macs"], t["offloaded_useful_macs"]
    share = f"{on / total * 100:.1f}%" if total else "no MACs"
    return (f"{'MACs offloaded:':<36}{on / 1e6:.1f} of {total / 1e6:.1f} M useful MACs ({share}); "
            f"{t['cpu_ops_with_macs']} op(s) with MACs on the CPU (each with its reason above)")


def moved_lines(moved: dict | None) -> list[str]:
    """The bytes moved between host and device, at load and per inference, by category."""
    if not moved:
        return []
    out = []
    for key, label in (("load", "bytes moved at load:"), ("per_inference", "bytes moved per inference:")):
        parts = ", ".join(f"{k} {v / 1e6:.3f} MB" for k, v in moved.get(key, {}).items() if v)
        out.append(f"{label:<36}{parts or 'none'}")
    return out


def _work(r: LayerRecord) -> str:
    """The GOPS, useful GOPS, utilisation and useful utilisation columns (blank off the GEMM core)."""
    if r.placement != "vdla" or not r.macs:
        return " " * 27
    w = useful_work(r)
    return (f"{w['gops']:6.1f} {w['useful_gops']:6.1f} {_percent(r.utilization, '5.1f'):>6} "
            f"{_percent(w['useful_utilization'], '5.1f'):>6}")


def _percent(fraction: float | None, spec: str, missing: str = NOT_MEASURED) -> str:
    """``fraction`` as a percentage formatted by ``spec``, or ``missing`` for None (not measured)."""
    return missing if fraction is None else f"{fraction * 100:{spec}}%"


def median_error(errors) -> str:
    """The median of the per-layer quantization errors (the mean of the middle two of an even
    count) as a percentage, or why there is none: what ``vdla run`` and its report.html print."""
    import statistics

    errors = list(errors)
    return f"{statistics.median(errors) * 100:.1f}%" if errors else "n/a (no quantized layers)"

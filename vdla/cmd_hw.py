"""Subcommands of the RTL flow (vdla_hw.rtl): `vdla hw verilog`, `vdla hw synth`, `vdla rtl`;
registered by vdla.cli through add_parser."""

from __future__ import annotations

import hashlib
import json
import sys

from vdla.argtypes import int_range, output_dir, output_file


def cmd_hw_verilog(args) -> int:
    from vdla_hw.config import load_config
    from vdla_hw.rtl.convert import to_verilog

    config = load_config(args.config)
    path = to_verilog(config, args.output)
    print(f"wrote {path} ({config.name}, {config.fingerprint})", file=sys.stderr)
    return 0


def cmd_hw_synth(args) -> int:
    from vdla_hw.config import load_config
    from vdla_hw.rtl.fmax import describe, estimate_fmax, progress_to_stderr

    config = load_config(args.config)
    res = estimate_fmax(config, args.top, keep=args.keep, use_cache=not args.no_cache,
                        progress=progress_to_stderr)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print(f"synthesis of {config.name} ({config.fingerprint}, {res['module']}) for the {res['device']} "
          "(yosys synth_xilinx)")
    for key, label in (("lut", "LUT"), ("ff", "FF"), ("dsp", "DSP48E1"), ("bram36", "BRAM36")):
        dev = res["device_" + key]
        print(f"  {label:<8} {res[key]:>9g} / {dev:<7} {100 * res[key] / dev:5.1f} %")
    print(f"  fits (LUT <= 80 %, DSP <= 220, BRAM36 <= 140): {'yes' if res['fits'] else 'NO'}")
    print(describe(res))
    return 0


def cmd_rtl(args) -> int:
    import numpy as np

    from vdla_hw import regmap, timing
    from vdla_hw.bundle import Bundle
    from vdla_hw.errors import VdlaError
    from vdla_hw.rtl.runner import run_bundles
    from vdla_sim import simulate

    bundle = Bundle.load(args.file, config=args.config)
    # program errors and runaway programs are reported as `vdla sim` does, before the (slow) RTL
    ref = simulate(bundle, max_cycles=args.max_cycles, race_check=False)
    res = run_bundles([bundle], args.sim, budgets=[args.max_cycles], waves=args.vcd)[0]
    if res.timeout:
        raise VdlaError(f"{args.file}: the RTL did not finish within {args.max_cycles} cycles (status {res.status:#x})")
    if res.error:
        names = [k for k, v in regmap.ERROR_BITS.items() if res.error & v]
        raise VdlaError(f"{args.file}: the RTL stopped with error {', '.join(names)} at instruction {res.error_insn}")
    if args.output:
        bundle.with_dram(res.dram).save(args.output)
    c = bundle.config
    insns = bundle.insns()
    mac_uops = sum(timing.uop_count(i) for i in insns if i.kind == "GEMM" and not i.reset)
    seconds = res.cycles / c.clock_hz
    nbytes = dict(ref.counters.load_bytes)
    nbytes["out"] = ref.counters.store_bytes
    nbytes["insn"] = bundle.insn_count * c.insn_bytes
    report = {
        "model": f"rtl-{args.sim}",
        "config": c.fingerprint,
        "cycles": res.cycles,
        "seconds": seconds,
        "gops": 2.0 * mac_uops * c.batch * c.block_in * c.block_out / seconds / 1e9 if res.cycles else 0.0,
        "gemm_utilization": mac_uops / res.cycles if res.cycles else 0.0,
        "busy": {m: v["busy"] for m, v in res.modules.items()},
        "stall": {m: {"token": v["stall_token"], "memory": v["stall_mem"], "queue": v["stall_queue"]}
                  for m, v in res.modules.items()},
        "queue_occupancy": None,   # not measured by the RTL testbench
        "bytes": nbytes,
        "memory_port_busy": None,
        "last_retire": max((r[2] for r in res.retire), default=0),
        "counters": ref.counters.as_dict(),
        "tokens_left": ref.tokens_left,
        "instructions": len(insns),
        "dram_sha256": hashlib.sha256(np.ascontiguousarray(res.dram)).hexdigest(),
        "retired": dict(res.counters),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"ran {bundle.insn_count} instructions on the RTL ({args.sim}, {c.name})")
    print(f"  cycles {res.cycles}  time {seconds * 1e6:.3f} us  {report['gops']:.2f} GOPS  "
          f"GEMM utilisation {100 * report['gemm_utilization']:.1f}%")
    print(f"  instructions retired per module: {report['retired']}")
    print(f"  bytes {nbytes}")
    if args.output:
        print(f"  final image written to {args.output}")
    if args.vcd:
        print(f"  waves written to {args.vcd}", file=sys.stderr)
    return 0


def add_parser(sub) -> None:
    """Add this module's subcommands to the ``vdla`` argument parser."""
    hw = sub.add_parser("hw", help="the accelerator's RTL: Verilog and synthesis")
    hw_sub = hw.add_subparsers(dest="hw_command", required=True, metavar="ACTION")
    ver = hw_sub.add_parser("verilog", help="write the Verilog of a configuration")
    ver.add_argument("--config", default=None, help="preset or JSON file (default osdi18)")
    ver.add_argument("-o", "--output", type=output_dir, required=True, metavar="DIR", help="directory to write vdla_top.v into")
    ver.set_defaults(func=cmd_hw_verilog)
    syn = hw_sub.add_parser("synth", help="synthesise for the PYNQ-Z1 (xc7z020) with yosys: resources and the estimated clock")
    syn.add_argument("--config", default=None, help="preset or JSON file (default osdi18)")
    syn.add_argument("--top", choices=("core", "axi"), default="core",
                     help="core: vdla_top (beat-level memory port); axi: vdla_axi_top, the FPGA top")
    syn.add_argument("--json", action="store_true",
                     help="machine-readable output (lut, ff, dsp, bram36, fmax_mhz, critical_path, ...)")
    syn.add_argument("--keep", type=output_dir, metavar="DIR", help="keep the synthesis work directory (bypasses the cache)")
    syn.add_argument("--no-cache", action="store_true", help="synthesise even if a cached result exists")
    syn.set_defaults(func=cmd_hw_synth)

    rtl = sub.add_parser("rtl", help="run a bundle on the RTL (cocotb, Icarus or Verilator)")
    rtl.add_argument("file", help="program bundle (.npz)")
    rtl.add_argument("--config", default=None, help="require this configuration (preset or JSON file)")
    rtl.add_argument("--sim", choices=("icarus", "verilator"), default="icarus", help="HDL simulator")
    rtl.add_argument("-o", "--output", type=output_file, help="write the final image as a bundle (.npz, key 'dram')")
    rtl.add_argument("--vcd", type=output_file, metavar="W.vcd", help="write waves")
    rtl.add_argument("--json", action="store_true", help="machine-readable output (the keys of `vdla sim --json`)")
    rtl.add_argument("--max-cycles", type=int_range(1), default=2_000_000, help="give up after this many cycles")
    rtl.set_defaults(func=cmd_rtl)

"""Subcommands of the RTL flow (vdla_hw.rtl): `vdla hw verilog`, `vdla hw synth`, `vdla hw
bitstream` (the PYNQ-Z1 Vivado project, ``bitstreams``), `vdla rtl`; registered by vdla.cli
through add_parser."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from vdla import commands
from vdla.argtypes import float_range, int_range, output_dir, output_file
from vdla.cmd_sim import VTA_HAZARD_HELP, add_max_work
from vdla_hw.limits import RTL_CYCLES_PER_S, RTL_MAX_CYCLES


TOPS = ("core", "axi")
HIER_HELP = ("one Verilog module per block (control, queues, memport, srams, fetch, load, compute, store, "
             "status; the FPGA top's AXI3 adapter) under a top with the flat one's ports, all in <top>.v")
# Where each key of `vdla rtl --json` comes from, the report's "measured_by": the RTL run, the
# simulator's run of the same bundle beforehand (the bench counts no bytes and no token or queue
# events), the program's instructions over the RTL's cycles, or nothing (None).
RTL_REPORT_BASIS = {
    "run settings": ("model", "bench", "top", "config"),
    "rtl": ("cycles", "wall_cycles", "seconds", "modules", "memory", "axi_checks", "last_retire", "dram_sha256"),
    "program: its GEMM uops and instructions over the RTL's cycles": ("gops", "gemm_utilization", "instructions"),
    "simulator: vdla_sim's run of the same bundle": ("bytes", "counters", "tokens_left"),
    "not measured": ("queue_occupancy", "memory_port_busy"),
}


def cmd_hw_verilog(args) -> int:
    from vdla.outputs import Outputs, check_writable
    from vdla_hw.config import load_config
    from vdla_hw.errors import VdlaError
    from vdla_hw.rtl.convert import to_verilog
    from vdla_hw.rtl.runner import top_name

    config = load_config(args.config)
    top = top_name(args.top)
    dest = Path(args.output) / f"{top}.v"
    check_writable([dest])
    with Outputs() as outputs:  # converted in a staging folder beside it, then renamed onto DIR/<top>.v
        staged = to_verilog(config, outputs.path(dest).parent, top=top, hierarchical=args.hierarchical)
        if staged.name != dest.name:
            raise VdlaError(f"the Verilog converter wrote {staged.name}, not {dest.name} (a bug)")
        path, = outputs.commit()
    print(f"wrote {path} ({config.name}, {config.fingerprint}{', hierarchical' if args.hierarchical else ''})",
          file=sys.stderr)
    return 0


def cmd_hw_synth(args) -> int:
    from vdla_hw.config import load_config
    from vdla_hw.files import json_text
    from vdla.progress import Heartbeat
    from vdla_hw.rtl.fmax import describe, estimate_fmax

    config = load_config(args.config)
    if args.hierarchical:
        return _synth_hierarchical(config, args)
    # a synthesis takes 3 to 27 minutes: its stage and the time elapsed every minute (a cache hit: nothing)
    with Heartbeat("vdla hw synth", first=30.0, every=60.0) as beat:
        res = estimate_fmax(config, args.top, keep=args.keep, use_cache=not args.no_cache, progress=beat.say)
    if args.json:
        print(json_text(res, indent=2))
        return 0
    print(f"synthesis of {config.name} ({config.fingerprint}, {res['module']}) for the {res['device']} "
          "(yosys synth_xilinx)")
    for key, label in (("lut", "LUT"), ("ff", "FF"), ("dsp", "DSP48E1"), ("bram36", "BRAM36")):
        dev = res["device_" + key]
        print(f"  {label:<8} {res[key]:>9g} / {dev:<7} {100 * res[key] / dev:5.1f} %")
    print(f"  latches  {res['latches']:>9}   (level-sensitive cells; the design has one clock and none)")
    print(f"  fits (LUT <= 80 %, DSP <= 220, BRAM36 <= 140): {'yes' if res['fits'] else 'NO'}")
    print(describe(res))
    return 0


def _synth_hierarchical(config, args) -> int:
    """`vdla hw synth --hierarchical`: resources per block of the hierarchical Verilog, no clock."""
    from vdla.progress import Heartbeat
    from vdla_hw.files import json_text
    from vdla_hw.rtl.synth_hier import describe, synthesize_hierarchical

    with Heartbeat("vdla hw synth", first=30.0, every=60.0) as beat:
        res = synthesize_hierarchical(config, args.top, keep=args.keep, use_cache=not args.no_cache, progress=beat.say)
    if args.json:
        print(json_text(res, indent=2))
        return 0
    print(f"synthesis per block of {config.name} ({config.fingerprint}, hierarchical {res['module']}) for the "
          f"{res['device']} (yosys synth_xilinx without -flatten: no optimisation across blocks)")
    print(describe(res))
    print(f"  latches  {res['latches']:>9}   (level-sensitive cells; the design has one clock and none)")
    print("  no clock estimate: run `vdla hw synth` without --hierarchical for the flat design's")
    return 0


def cmd_bitstream(args) -> int:
    from bitstreams.pynq_z1 import missing_for_build, write_project
    from vdla.cmd_run import warn_clock_of

    command = write_project(args.config, args.output, port=args.port, ila=args.ila, hierarchical=args.hierarchical)
    warn_clock_of(args.config)  # after the project is written: a user error stays the only stderr line
    for problem in missing_for_build(args.output):
        print(f"vdla: warning: {problem}", file=sys.stderr)
    print(f"wrote the PYNQ-Z1 Vivado project to {args.output}; build it with:", file=sys.stderr, flush=True)
    print(command)
    return 0


def cmd_rtl(args) -> int:
    import numpy as np

    from driver.rtl_run import MemoryOptions, choose_bench, run_bundles
    from vdla.outputs import write_file
    from vdla_hw import limits, program, regmap, timing, work
    from vdla_hw.bundle import Bundle
    from vdla_hw.errors import VdlaError
    from vdla_hw.files import json_text
    from vdla_hw.rtl.axi_check import rule_names
    from vdla_sim import simulate

    bundle = Bundle.load(args.file, config=args.config)
    memory = MemoryOptions(latency=args.mem_latency, write_latency=args.mem_write_latency, stall=args.stall_prob,
                           seed=args.seed)
    bench = memory.resolve(bundle.config)   # bad memory options fail before anything runs
    bench_name = choose_bench(args.sim, args.bench, args.vcd)
    max_cycles = limits.RTL_MAX_CYCLES[args.sim, bench_name] if args.max_cycles is None else args.max_cycles
    # program errors and runaway programs are reported as `vdla sim` does, before the (slow) RTL:
    # first what the instructions alone say (milliseconds), then the simulator's exact cycles
    work.check_cycle_floor(work.of(program.decode_checked(bundle), bundle.config), max_cycles,
                           model=f"the RTL ({args.sim}, {bench_name} bench)", remedy="raise --max-cycles if it is really that long")
    from vdla.progress import Heartbeat

    with Heartbeat("vdla rtl", first=30.0, every=60.0) as beat:
        beat.stage(f"simulating {bundle.insn_count} instructions (the reference cycles)")
        ref = simulate(bundle, max_cycles=max_cycles, race_check=False, max_work=args.max_work,
                       allow_vta_hazards=args.allow_vta_incompatible)
        beat.stage(f"running {bundle.insn_count} instructions on the RTL ({args.sim})")
        res = run_bundles([bundle], args.sim, top=args.top, budgets=[max_cycles], memory=memory, waves=args.vcd,
                          bench=args.bench, progress=beat.say)[0]
    if res.timeout:
        raise VdlaError(f"{args.file}: the RTL did not finish within {max_cycles} cycles (status {res.status:#x})")
    if res.error:
        names = [k for k, v in regmap.ERROR_BITS.items() if res.error & v]
        raise VdlaError(f"{args.file}: the RTL stopped with error {', '.join(names)} at instruction {res.error_insn}")
    if args.output:
        write_file(args.output, bundle.with_dram(res.dram).save)
    c = bundle.config
    insns = bundle.insns()
    mac_uops = sum(timing.uop_count(i) for i in insns if i.kind == "GEMM" and not i.reset)
    seconds = res.cycles / c.clock_hz
    nbytes = dict(ref.counters.load_bytes)
    nbytes["out"] = ref.counters.store_bytes
    nbytes["insn"] = bundle.insn_count * c.insn_bytes
    checks = res.axi_checks
    report = {
        "model": f"rtl-{args.sim}",
        "bench": choose_bench(args.sim, args.bench, args.vcd),
        "top": args.top,
        "config": c.fingerprint,
        "cycles": res.cycles,
        "wall_cycles": res.wall_cycles,
        "seconds": seconds,
        "gops": 2.0 * mac_uops * c.batch * c.block_in * c.block_out / seconds / 1e9 if res.cycles else 0.0,
        "gemm_utilization": mac_uops / res.cycles if res.cycles else 0.0,
        "modules": res.modules,
        "queue_occupancy": None,
        "bytes": nbytes,
        "memory_port_busy": None,
        "memory": {"latency": bench["latency"], "write_latency": bench["write_latency"],
                   "stall_prob": bench["stall"], "seed": bench["seed"], "beats": res.beats},
        "axi_checks": {"checks": checks["checks"], "violations": checks["violations"],
                       "rules_broken": rule_names(checks["rules"]), "left_outstanding": checks["left_outstanding"]},
        # the retire trace is the core top's (the FPGA top has no debug ports)
        "last_retire": max((r[2] for r in res.retire), default=0) if args.top == "core" else None,
        "counters": ref.counters.as_dict(),
        "tokens_left": ref.tokens_left,
        "instructions": len(insns),
        "dram_sha256": hashlib.sha256(np.ascontiguousarray(res.dram)).hexdigest(),
        "measured_by": {key: basis for basis, keys in RTL_REPORT_BASIS.items() for key in keys},
    }
    if args.json:
        print(json_text(report, indent=2))
        return 0
    print(f"ran {bundle.insn_count} instructions on the RTL ({args.top} top, {args.sim}, "
          f"{choose_bench(args.sim, args.bench, args.vcd)} bench, {c.name})")
    print(f"  cycles {res.cycles} (wall clock {res.wall_cycles})  time {seconds * 1e6:.3f} us  "
          f"{report['gops']:.2f} GOPS  GEMM utilisation {100 * report['gemm_utilization']:.1f}% "
          "(of the program's GEMM uops)")
    print(f"  memory latency {bench['latency']}/{bench['write_latency']} cycles, stall probability "
          f"{bench['stall']:g}, {res.beats} beats; AXI protocol checks {checks['checks']}, violations "
          f"{checks['violations']}")
    print(f"  instructions retired per module: { {m: v['insns'] for m, v in res.modules.items()} }")
    print(f"  bytes {nbytes} (counted by the simulator on the same bundle; the RTL bench counts none)")
    if args.output:
        print(f"  final image written to {args.output}")
    if args.vcd:
        print(f"  waves written to {args.vcd}", file=sys.stderr)
    return 0


def _add_bitstream(sub) -> None:
    p = sub.add_parser("bitstream", help="write the PYNQ-Z1 Vivado project (block design, .bit/.hwh, manifest)")
    p.add_argument("--config", default=None, help="preset or JSON file (default osdi18)")
    p.add_argument("--port", choices=("acp", "hp"), default=None,
                   help="PS port of the memory master: acp (coherent, VTA's PYNQ build) or hp (HP0); default: the "
                        "configuration's MEM_PORT. Another port also takes that port's timing parameters")
    p.add_argument("--ila", action="store_true",
                   help="add a System ILA on the control (s_axil) and memory (m_axi) buses; its probes go to out/vdla.ltx")
    p.add_argument("--hierarchical", action="store_true", help=HIER_HELP + "; the build also writes per-block "
                   "utilisation and worst-path reports")
    p.add_argument("-o", "--output", type=output_dir, required=True, metavar="DIR", help="project folder to write")
    p.set_defaults(func=cmd_bitstream)


def add_parser(sub) -> None:
    """Add this module's subcommands to the ``vdla`` argument parser."""
    hw = commands.add(sub, "hw")
    hw_sub = hw.add_subparsers(dest="hw_command", required=True, metavar="ACTION")
    ver = hw_sub.add_parser("verilog", help="write the Verilog of a configuration")
    ver.add_argument("--config", default=None, help="preset or JSON file (default osdi18)")
    ver.add_argument("--top", choices=TOPS, default="core",
                     help="core: vdla_top (the tests' top); axi: vdla_axi_top, the FPGA top with HP0's AXI3 master")
    ver.add_argument("--hierarchical", action="store_true", help=HIER_HELP)
    ver.add_argument("-o", "--output", type=output_dir, required=True, metavar="DIR",
                     help="directory to write <top>.v into")
    ver.set_defaults(func=cmd_hw_verilog)
    syn = hw_sub.add_parser("synth", help="synthesise for the PYNQ-Z1 (xc7z020) with yosys: resources and the estimated clock")
    syn.add_argument("--config", default=None, help="preset or JSON file (default osdi18)")
    syn.add_argument("--top", choices=TOPS, default="core",
                     help="core: vdla_top; axi: vdla_axi_top, the FPGA top the bitstream builds")
    syn.add_argument("--json", action="store_true",
                     help="machine-readable output (lut, ff, dsp, bram36, latches, fits, fmax_mhz, critical_path, ...)")
    syn.add_argument("--hierarchical", action="store_true",
                     help="synthesise the hierarchical Verilog (" + HIER_HELP.split(" (")[0] + ") without flattening: "
                     "LUT/FF/DSP/BRAM per block and their totals, no clock estimate")
    syn.add_argument("--keep", type=output_dir, metavar="DIR", help="keep the synthesis work directory (bypasses the cache)")
    syn.add_argument("--no-cache", action="store_true", help="synthesise even if a cached result exists")
    syn.set_defaults(func=cmd_hw_synth)
    _add_bitstream(hw_sub)

    rtl = commands.add(sub, "rtl")
    rtl.add_argument("file", help="program bundle (.npz)")
    rtl.add_argument("--config", default=None, help="require this configuration (preset or JSON file)")
    rtl.add_argument("--sim", choices=("icarus", "verilator"), default="icarus", help="HDL simulator")
    rtl.add_argument("--top", choices=TOPS, default="core",
                     help="core: vdla_top with the retire trace; axi: the FPGA top (AXI3 master, as in the bitstream)")
    rtl.add_argument("--bench", choices=("compiled", "cocotb"), default=None,
                     help="compiled: the bench in C++ around the Verilated model (Verilator's default, no waves); "
                          "cocotb: the Python bench (Icarus's, and with --vcd)")
    rtl.add_argument("--mem-latency", type=int_range(2), default=None, metavar="N",
                     help="first-beat latency of the bench memory in cycles (default: the configuration's MEM_LATENCY)")
    rtl.add_argument("--mem-write-latency", type=int_range(2), default=None, metavar="N",
                     help="write-response latency in cycles (default: the configuration's MEM_WRITE_LATENCY)")
    rtl.add_argument("--stall-prob", type=float_range(0.0, 0.99), default=0.0, metavar="P",
                     help="probability that each AXI channel stalls in a cycle, plus random extra latency (default 0)")
    rtl.add_argument("--seed", type=int_range(0), default=0, help="seed of the random stalls")
    rtl.add_argument("-o", "--output", type=output_file, help="write the final image as a bundle (.npz, key 'dram')")
    rtl.add_argument("--vcd", type=output_file, metavar="W.vcd", help="write waves")
    rtl.add_argument("--json", action="store_true",
                     help="machine-readable output: the keys of `vdla sim --json`, wall_cycles, axi_checks and "
                          "measured_by (what the RTL measured, what the simulator or the program gave)")
    rtl.add_argument("--max-cycles", type=int_range(1), default=None,
                     help="refuse a program that would run longer, give up on the RTL after this many cycles "
                     "(default: a few minutes of the simulator and bench: "
                     + ", ".join(f"{sim} {bench} {RTL_MAX_CYCLES[sim, bench]:,} at {RTL_CYCLES_PER_S[sim, bench]:,}/s"
                                 for sim, bench in RTL_MAX_CYCLES) + ")")
    rtl.add_argument("--allow-vta-incompatible", action="store_true", help=VTA_HAZARD_HELP)
    add_max_work(rtl)
    rtl.set_defaults(func=cmd_rtl)

"""Subcommands of `vdla sim` (vdla_sim); registered by vdla.cli through add_parser."""

from __future__ import annotations

import sys

from vdla import commands
from vdla.argtypes import int_range, output_file
from vdla_hw.limits import DEFAULT_MAX_CYCLES, SIM_MAX_WORK, SIM_WORK_PER_S


def cmd_sim(args) -> int:
    from vdla.outputs import Outputs
    from vdla.progress import Heartbeat
    from vdla_hw.bundle import Bundle
    from vdla_hw.files import json_text
    from vdla_sim import simulate

    if args.tokens:  # a picture it cannot write is refused before the simulation
        from vdla.architecture import picture_format

        picture_format(args.tokens)
    bundle = Bundle.load(args.file, config=args.config)
    with Outputs() as outputs:  # the image, the tensor and the trace appear together, at their exact paths
        with Heartbeat("vdla sim", first=10.0, every=30.0) as beat:  # a small program ends before any line
            beat.stage(f"simulating {bundle.insn_count} instructions ({bundle.config.name})")
            result = simulate(bundle, max_cycles=args.max_cycles, race_check=not args.no_race_check,
                              trace_path=outputs.path(args.trace) if args.trace else None,
                              max_work=args.max_work, uninit=args.uninit,
                              allow_vta_hazards=args.allow_vta_incompatible)
        if args.image:
            outputs.write(args.image, bundle.with_dram(result.dram).save)
        if args.tensor:
            import numpy as np

            from compiler.accel import layer_output

            tensor = layer_output(bundle, result.dram)
            outputs.write(args.tensor, lambda fh: np.save(fh, tensor, allow_pickle=False))
        outputs.commit()
    if args.tokens:
        from vdla.token_picture import draw

        draw(bundle, result, args.tokens)
    report = result.as_dict()
    warn_uninit(result.uninit)
    if args.uninit != "off":
        report["uninit"] = None if result.uninit is None else str(result.uninit)
    if args.json:
        print(json_text(report, indent=2))
        return 0
    print(f"simulated {bundle.insn_count} instructions ({bundle.config.name}, {bundle.config.CLOCK_MHZ:g} MHz)")
    print(f"  cycles {result.cycles}  time {result.seconds * 1e6:.3f} us  {result.gops:.2f} GOPS  "
          f"GEMM utilisation {100 * result.gemm_utilization:.1f}%")
    for m, counters in result.modules.items():
        print(f"  {m:<8} " + " ".join(f"{name} {value:<10}" for name, value in counters.items()).rstrip())
    print(f"  bytes {report['bytes']}")
    left = {q: n for q, n in result.tokens_left.items() if n}
    print(f"  tokens left at FINISH: {left or 'none'}")
    if args.image:
        print(f"  final image written to {args.image}")
    if args.tensor:
        print(f"  layer output tensor written to {args.tensor}")
    if args.trace:
        print(f"  trace written to {args.trace}", file=sys.stderr)
    if args.tokens:
        print(f"  token flow drawn in {args.tokens}", file=sys.stderr)
    return 0


def warn_uninit(first) -> None:
    """``--uninit warn``: the first uninitialised read (a ``vdla_hw.sram_state.UninitRead``), one line on stderr."""
    if first is not None:
        print(f"vdla: warning: {first} (--uninit warn)", file=sys.stderr)


VTA_HAZARD_HELP = ("run a GEMM whose micro-op list writes one accumulator twice within two micro-ops (refused by "
                   "default: VTA's HLS pipeline would lose a product there; this machine forwards the write, so the "
                   "result is the reference semantics', docs/spec.md section 5)")

UNINIT_HELP = ("report a read of SRAM that no instruction of this run wrote (SRAM holds what an earlier program "
               "left; this run starts as a fresh device, from zeros): 'warn' prints the first on stderr and goes on, "
               "'error' stops there with exit status 2 (default: off, no cost)")


def add_max_work(parser) -> None:
    """``--max-work``: the simulator's own work bound (vdla_hw/work.py), checked before it runs."""
    parser.add_argument("--max-work", type=int_range(1), default=SIM_MAX_WORK, metavar="N",
                        help="refuse a program whose simulator work (multiply-add equivalents of 100 ns: each GEMM priced "
                        f"from the plan the simulator will run, plus a fixed cost per ALU micro-op and per instruction) passes this (default {SIM_MAX_WORK:,}: "
                        f"about {round(SIM_MAX_WORK / SIM_WORK_PER_S / 60)} min at {SIM_WORK_PER_S:,} per second)")


def add_parser(sub) -> None:
    """Add this module's subcommands to the ``vdla`` argument parser."""
    sim = commands.add(sub, "sim")
    sim.add_argument("file", help="program bundle (.npz)")
    sim.add_argument("--config", default=None, help="require this configuration (preset or JSON file)")
    sim.add_argument("-o", "--image", type=output_file, metavar="OUT.npz", help="write the final image as a bundle (.npz, key 'dram')")
    sim.add_argument("--output", dest="tensor", type=output_file, metavar="Y.npy",
                     help="write the compiled layer's output tensor (NCHW int8, unpacked; bundles of vdla compile)")
    sim.add_argument("--json", action="store_true", help="machine-readable output")
    sim.add_argument("--trace", type=output_file, metavar="T.json", help="write a Chrome/Perfetto trace")
    sim.add_argument("--tokens", type=output_file, metavar="F.svg",
                     help="draw the token flow: each module's instructions over the cycles and every token "
                     "from its push to its pop (.svg, .png or .pdf; the first 60 instructions)")
    sim.add_argument("--max-cycles", type=int_range(1), default=DEFAULT_MAX_CYCLES,
                     help=f"stop with an error after this many cycles (default {DEFAULT_MAX_CYCLES:,})")
    add_max_work(sim)
    sim.add_argument("--no-race-check", action="store_true", help="skip the token race detector")
    sim.add_argument("--uninit", choices=("off", "warn", "error"), default="off", help=UNINIT_HELP)
    sim.add_argument("--allow-vta-incompatible", action="store_true", help=VTA_HAZARD_HELP)
    sim.set_defaults(func=cmd_sim)

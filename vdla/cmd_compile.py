"""Subcommands of `vdla compile` (compiler); registered by vdla.cli through add_parser.

    vdla compile conv2d --h 14 --w 14 --ic 64 --oc 64 --k 3 --stride 1 --pad 1 --shift 8 --relu \\
        [--n 1] [--config vta-pynq] [--vthreads 2] [--schedule th=7,tw=14,toc=2,tic=4 | --vta-schedule JSON] \\
        [--input x.npy --weight w.npy --bias b.npy] [--seed 0] -o layer.npz
    vdla compile dense --n 1 --ic 512 --oc 1000 --shift 8 [...] -o fc.npz

``--vta-schedule`` takes VTA's AutoTVM conv2d knob list (JSON text, or ``@path`` of a file
holding it) instead of ``--schedule`` (compiler.tensorize.vta_schedule maps it). Without tensors, random ones (seeded) are compiled in. A ``--shift`` of 16..31 is refused unless
``--allow-vta-incompatible`` is given: VTA's FPGA design would shift left (compiler.vta_compat). The bundle's output is read back with
``compiler.accel.layer_output`` (``vdla sim layer.npz --output y.npy``).
"""

from __future__ import annotations

import sys
import time

from vdla import commands
from vdla.argtypes import int_range, output_file, seed
from vdla_hw.errors import VdlaError


def _load_npy(path: str, name: str):
    """The array of the .npy file ``path`` given as ``--name``: read by files.read_checked (a
    regular file of at most MAX_DRAM_BYTES, so a FIFO or /dev/zero is refused before any read),
    then parsed with no pickles and its header checked against its bytes (npyfile.read_npy)."""
    from vdla_hw.errors import BundleError, FileRefused
    from vdla_hw.files import read_checked
    from vdla_hw.limits import MAX_DRAM_BYTES
    from vdla_hw.npyfile import read_npy

    try:
        data = read_checked(path, f"--{name} file", MAX_DRAM_BYTES, "vdla_hw.limits.MAX_DRAM_BYTES")
    except FileRefused as err:
        raise VdlaError(f"{path}: no such file (--{name})" if err.why.startswith("no such") else str(err)) from None
    try:
        return read_npy(data, path)
    except BundleError as err:
        raise VdlaError(f"{path}: not a readable .npy array for --{name} ({err.why})") from None


PROGRESS_AFTER_S = 2.0   # a compile this long (CPU-bound, a few seconds) starts printing its steps


class Progress:
    """The compiler's step messages: each becomes the heartbeat's current stage (repeated with
    the time elapsed while it runs), and from :data:`PROGRESS_AFTER_S` seconds after the start
    is also printed at once as a ``vdla compile: ...`` line (a quick compile prints none)."""

    def __init__(self, beat):
        self.beat = beat
        self.start = time.monotonic()

    def __call__(self, message: str) -> None:
        if time.monotonic() - self.start >= PROGRESS_AFTER_S:
            self.beat.say(f"vdla compile: {message}")
        else:
            self.beat.stage(message)


def _vta_schedule(text: str, layer, config):
    """The Schedule of ``--vta-schedule`` (JSON, or @path of a file holding it, read by
    files.read_capped: a regular file of at most MAX_TEXT_BYTES, so a FIFO does not hang)."""
    from compiler.tensorize.vta_schedule import vta_schedule
    from vdla_hw.files import read_capped

    if text.startswith("@"):
        data = read_capped(text[1:], "--vta-schedule file")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise VdlaError(f"{text[1:]}: --vta-schedule file is not UTF-8 text") from None
    return vta_schedule(text, layer, config)


def cmd_compile(args) -> int:
    from compiler.accel import compile_layer
    from compiler.layers import Conv2D, Dense
    from compiler.vta_compat import check_shift
    from vdla.outputs import write_file
    from vdla.progress import Heartbeat

    check_shift(args.shift, "--shift", args.allow_vta_incompatible)
    vta = getattr(args, "vta_schedule", None)
    if vta is not None and args.schedule is not None:
        raise VdlaError("--schedule and --vta-schedule exclude each other: give one")
    if vta is not None and args.vthreads is not None:
        raise VdlaError("--vthreads does not combine with --vta-schedule (its oc_nthread x h_nthread set the threads)")
    if args.op == "conv2d":
        layer = Conv2D(name=args.name or "conv2d", n=args.n, h=args.h, w=args.w, ic=args.ic, oc=args.oc, k=args.k,
                       stride=args.stride, pad=args.pad, shift=args.shift, relu=args.relu)
    else:
        layer = Dense(name=args.name or "dense", n=args.n, ic=args.ic, oc=args.oc, shift=args.shift, relu=args.relu)
    schedule = args.schedule
    if vta is not None:
        from vdla_hw.config import load_config

        schedule = _vta_schedule(vta, layer, load_config(args.config))
    given = {key: getattr(args, key) for key in ("input", "weight", "bias")}
    tensors = None
    if any(given.values()):
        missing = [key for key, path in given.items() if not path]
        if missing:
            raise VdlaError(f"--{missing[0]} is missing: give --input, --weight and --bias together, or none "
                            "for random tensors")
        tensors = {key: _load_npy(path, key) for key, path in given.items()}
    with Heartbeat("vdla compile", first=10.0, every=30.0) as beat:  # a big conv's search takes a while
        beat.stage(f"compiling {layer.name} (schedule search, then the instruction stream)")
        bundle = compile_layer(layer, args.config, tensors=tensors, schedule=schedule, vthreads=args.vthreads,
                               seed=args.seed, progress=Progress(beat))
    write_file(args.output, bundle.save)
    print(f"wrote {args.output}: {layer.name} ({args.op}), schedule {bundle.meta['schedule']}, "
          f"{bundle.insn_count} instructions, {bundle.dram.size}-byte image, config {bundle.config.name}",
          file=sys.stderr)
    return 0


def _common(p, default_name: str) -> None:
    p.add_argument("--n", type=int_range(1), default=1, help="batch size (default 1)")
    p.add_argument("--ic", type=int_range(1), required=True, help="input channels / features")
    p.add_argument("--oc", type=int_range(1), required=True, help="output channels / features")
    p.add_argument("--shift", type=int_range(0, 31), default=0,
                   help="requantization right shift (0..15; 16..31 with --allow-vta-incompatible)")
    p.add_argument("--allow-vta-incompatible", action="store_true",
                   help="compile a --shift of 16..31, which VTA's FPGA design would run as a left shift "
                        "(docs/spec.md, Differences from VTA)")
    p.add_argument("--relu", action="store_true", help="clip at 0 instead of -128")
    p.add_argument("--config", default=None, help="preset or JSON file (default osdi18)")
    p.add_argument("--vthreads", type=int_range(1), default=None, help="virtual threads (default: the search's choice)")
    p.add_argument("--schedule", default=None,
                   help="fix the tiling: th=ROWS,tw=COLS,toc=OC_BLOCKS,tic=IC_BLOCKS[,vthreads=N]"
                        "[,order=spatial|oc|vta][,tky=1][,h_threads=H][,row_loop=1]")
    p.add_argument("--input", default=None, help=".npy int8 input (NCHW; dense: N x I)")
    p.add_argument("--weight", default=None, help=".npy int8 weights (OIHW; dense: O x I)")
    p.add_argument("--bias", default=None, help=".npy int32 bias (O,)")
    p.add_argument("--seed", type=seed, default=0, help="seed of the random tensors")
    p.add_argument("--name", default=None, help=f"layer name in messages (default {default_name})")
    p.add_argument("-o", "--output", type=output_file, required=True, help="bundle file to write (.npz)")
    p.set_defaults(func=cmd_compile)


def add_parser(sub) -> None:
    """Add `vdla compile conv2d|dense` to the ``vdla`` argument parser."""
    comp = commands.add(sub, "compile")
    ops = comp.add_subparsers(dest="op", required=True, metavar="OP")
    conv = ops.add_parser("conv2d", help="y = clip((conv(x, w) + b) >> shift, lo, 127), NCHW int8")
    for key, meaning in (("h", "input height"), ("w", "input width"), ("k", "kernel size (square)")):
        conv.add_argument(f"--{key}", type=int_range(1), required=True, help=meaning)
    conv.add_argument("--stride", type=int_range(1), default=1, help="stride (default 1)")
    conv.add_argument("--pad", type=int_range(0), default=0, help="zero padding on each side (default 0)")
    conv.add_argument("--vta-schedule", default=None, metavar="JSON",
                      help="fix the tiling with VTA's AutoTVM conv2d knobs (JSON list as logged, or @FILE); "
                           "not with --schedule (docs/compiler.md, VTA's schedules as data)")
    _common(conv, "conv2d")
    dense = ops.add_parser("dense", help="y = clip((x @ w.T + b) >> shift, lo, 127), int8")
    _common(dense, "dense")

"""``vdla serve`` and ``vdla deploy``: arguments and printing over :mod:`vdla.deploy` (the API)
and ``driver`` (protocol, server, package)."""

from __future__ import annotations

import sys

from vdla import commands
from vdla.argtypes import float_range, host_port, int_range, port
from vdla.cmd_run import resolution_arg
from vdla_hw.errors import VdlaError
from vdla_hw.files import json_text, printable
from vdla_hw.limits import MAX_DRAM_BYTES

MIB = 1 << 20


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_serve(args) -> int:
    from driver.server import ServerLimits
    from vdla.deploy import serve, server_key

    if args.bitstream and args.backend != "pynq":
        raise VdlaError(f"--bitstream is for --backend pynq; the {args.backend} backend has no bitstream")
    options = {"bitstream": args.bitstream} if args.bitstream else {}
    key = server_key(args.key_file)
    frame = args.max_frame_mib * MIB
    limits = ServerLimits(max_connections=args.max_connections, idle_timeout_s=args.idle_timeout,
                          header_deadline_s=args.idle_timeout, request_deadline_s=args.request_timeout,
                          max_frame_bytes=frame, max_pending_bytes=frame, run_timeout_s=args.run_timeout)
    try:
        serve(args.backend, args.config, args.host, args.port, key=key, device_options=options, limits=limits)
    except KeyboardInterrupt:
        _say("vdla serve: stopped")
    return 0


def cmd_deploy(args) -> int:
    from compiler.network import PartitionOptions
    from driver import auth
    from vdla.deploy import deploy
    from vdla.progress import Heartbeat

    key = auth.load_key(args.key_file or auth.default_key_file())  # before minutes of compiling
    options = PartitionOptions(stem_on_vdla=args.stem_on_vdla, add_on_vdla=args.add_on_vdla,
                               fc_on_vdla=args.fc_on_vdla, depthwise_on_vdla=args.depthwise_on_vdla)
    # its stages (compile, package, send, wait for the board) repeated with the time elapsed
    with Heartbeat("vdla deploy", first=30.0, every=30.0) as beat:
        report = deploy(args.model, args.board, key=key, config=args.config, resolution=args.resolution,
                        options=options, vthreads=args.vthreads, arm_library=not args.no_arm_library,
                        timeout_s=args.timeout, progress=beat.say)
    report.pop("outputs")
    if args.json:
        print(json_text(report, indent=2))
        return 0
    # everything the server sent is escaped: it reaches this terminal
    print(f"{report['model']} on {report['board']} ({printable(report['backend'])}, {report['fingerprint']}, "
          f"CPU ops: {printable(report['cpu_kernels'])})")
    print(f"{'layer':<26} {'op':<8} {'on':<4} {'cycles':>11} {'device ms':>9} {'measured ms':>11}")
    for row in report["layers"]:
        number = lambda key: float(row.get(key) or 0)  # noqa: E731
        print(f"{printable(row.get('name'), 26):<26} {printable(row.get('op'), 8):<8} "
              f"{printable(row.get('placement'), 4):<4} {int(number('cycles')):>11,d} "
              f"{number('seconds') * 1e3:>9.3f} {number('wall_seconds') * 1e3:>11.2f}")
    m = report["totals"]
    print(f"measured on the server: {m['wall_s']:.3f} s in all, CPU ops {m['cpu_ops_wall_s']:.3f} s, accelerator "
          f"ops {m['vdla_ops_wall_s']:.3f} s ({m['accelerator_cycles']:,d} cycles, {m['accelerator_s'] * 1e3:.2f} ms "
          "at the configured clock)")
    t = report["transfer"]
    print(f"package {report['package_bytes'] / 1e6:.1f} MB, sent in {t['send_seconds']:.2f} s, answer after "
          f"{t['total_seconds']:.1f} s")
    from compiler.network.report import moved_lines

    for line in moved_lines(m.get("bytes_moved")):
        print(line)
    print(f"bit exact vs the quantized numpy reference: {report['bit_exact']}   output sha256 {report['output_sha256']}")
    return 0


KEY_HELP = "the shared key file (default $XDG_CONFIG_HOME/vdla/serve.key, i.e. ~/.config/vdla/serve.key)"


def add_parser(sub) -> None:
    s = commands.add(sub, "serve")
    s.add_argument("--backend", choices=["sim", "rtl", "pynq"], default="sim", help="device backend")
    s.add_argument("--config", default=None, help="device configuration: preset or JSON file (default osdi18)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0 on the board)")
    s.add_argument("--port", type=port, default=9091, help="TCP port (0: any free port)")
    s.add_argument("--bitstream", default=None, help="pynq: the .bit (default /home/xilinx/vdla/bitstreams/"
                   "<fingerprint>/vdla.bit or $VDLA_BITSTREAM)")
    s.add_argument("--key-file", default=None, help=KEY_HELP + "; created (mode 0600) on first start")
    s.add_argument("--max-connections", type=int_range(1, 4096), default=64,
                   help="open connections at once; more are refused at once (default 64)")
    s.add_argument("--max-frame-mib", type=int_range(1, 512), default=MAX_DRAM_BYTES // MIB,
                   help=f"largest request in MiB, and all uploads held at once (default {MAX_DRAM_BYTES // MIB}: one "
                   "device image, vdla_hw/limits.py)")
    s.add_argument("--idle-timeout", type=float_range(0.0, 3600.0, low_open=True), default=10.0,
                   help="seconds a client may send nothing, and to send its request header (default 10)")
    s.add_argument("--request-timeout", type=float_range(0.0, 86400.0, low_open=True), default=600.0,
                   help="seconds to receive a whole request (default 600)")
    s.add_argument("--run-timeout", type=float_range(0.0, 86400.0, low_open=True), default=600.0,
                   help="seconds one run may take on the device; checked between its ops, then it is stopped "
                   "and reported (default 600)")
    s.set_defaults(func=cmd_serve)

    d = commands.add(sub, "deploy")
    d.add_argument("model", help="resnet18, resnet34 or a float ONNX file")
    d.add_argument("--board", type=host_port, required=True, metavar="HOST:PORT", help="where `vdla serve` listens")
    d.add_argument("--key-file", default=None, help=KEY_HELP + "; a copy of the server's")
    d.add_argument("--config", default=None, help="preset or JSON file (default osdi18); must match the board")
    d.add_argument("--resolution", type=resolution_arg(), default=224, help="input size of the built-in models")
    d.add_argument("--json", action="store_true", help="machine-readable report (with output_sha256)")
    d.add_argument("--vthreads", type=int_range(1), default=None, help="virtual threads per layer (default: search)")
    d.add_argument("--stem-on-vdla", action="store_true")
    d.add_argument("--add-on-vdla", action="store_true")
    d.add_argument("--fc-on-vdla", action="store_true")
    d.add_argument("--depthwise-on-vdla", action="store_true")
    d.add_argument("--no-arm-library", action="store_true", help="do not build the Cortex-A9 library (the "
                   "server then uses its host JIT)")
    d.add_argument("--timeout", type=float_range(0.0, low_open=True), default=3600.0,
                   help="seconds to wait for the board's answer")
    d.set_defaults(func=cmd_deploy)

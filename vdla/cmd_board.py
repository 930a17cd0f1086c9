"""``vdla board check``: the bring-up check of a device (:mod:`driver.bringup`), one line per
check, a summary, exit status 0 when every check passes, 1 when one fails, 2 with one line on
bad input (an unknown backend, an unreadable bitstream or manifest, no device)."""

from __future__ import annotations

import sys

from vdla import commands
from vdla.argtypes import float_range
from vdla_hw.errors import VdlaError
from vdla_hw.files import json_text, printable

EXIT_FAILED = 1


def open_checked_device(backend: str, config, bitstream):
    """(device, configuration) for the check: ``--config`` if given; else, on the pynq backend
    with a bitstream (``--bitstream`` or ``$VDLA_BITSTREAM``), the configuration its manifest
    names (the check then holds the hardware to the bitstream); else the default preset. The pynq
    device is opened without its own ID check: ``identify`` reports a mismatch as a failed check."""
    import os

    from driver import open_device
    from vdla_hw.config import load_config

    if bitstream and backend != "pynq":
        raise VdlaError(f"--bitstream is for --backend pynq; the {backend} backend has no bitstream")
    if backend != "pynq":
        config = load_config(config)
        return open_device(backend, config), config
    from driver import pynq_device

    named = bitstream or os.environ.get(pynq_device.BITSTREAM_ENV)
    if config is None and named:
        config = pynq_device.manifest_config(named)
    config = load_config(config)
    return open_device("pynq", config, bitstream=bitstream, check_id=False), config


def _line(result) -> str:
    return f"{result.status:<5} {result.name:<10} {printable(result.detail)}"


def cmd_board_check(args) -> int:
    from driver import bringup

    device, config = open_checked_device(args.backend, args.config, args.bitstream)
    where = f", bitstream {device.bitstream}" if getattr(device, "bitstream", None) else ""
    if not args.json:
        print(f"vdla board check: {args.backend} device, configuration {config.name} ({config.fingerprint}){where}",
              flush=True)
    if args.backend == "rtl":
        device.build()  # minutes the first time: not part of any check's timeout
    report = None if args.json else (lambda result: print(_line(result), flush=True))
    results = bringup.run_checks(device, config, timeout_s=args.timeout, report=report)
    counts = {status: sum(r.status == status for r in results) for status in (bringup.OK, bringup.FAIL, bringup.SKIP)}
    ok = bringup.passed(results)
    if args.json:
        print(json_text({"backend": args.backend, "config": config.name, "fingerprint": config.fingerprint,
                         "bitstream": str(device.bitstream) if where else None, "passed": ok,
                         "checks": [r.as_dict() for r in results], "counts": counts}, indent=2))
    else:
        print(f"{'passed' if ok else 'FAILED'}: {len(results)} checks, {counts['ok']} ok, {counts['FAIL']} failed, "
              f"{counts['skip']} skipped")
    if not any(r.detail.startswith("no answer within") for r in results):
        device.close()  # a hung device is left as it is: closing it could hang too
    return 0 if ok else EXIT_FAILED


def add_parser(sub) -> None:
    board = commands.add(sub, "board")
    actions = board.add_subparsers(dest="board_command", required=True, metavar="ACTION")
    check = actions.add_parser("check", help="bring-up check: ID registers, register read/write, a DMA round "
                               "trip, a known program's cycles and counters against the simulator")
    check.add_argument("--backend", choices=["pynq", "sim", "rtl"], default="pynq",
                       help="device backend (default pynq: the board)")
    check.add_argument("--config", default=None, help="the configuration the device must be: preset or JSON file "
                       "(default: the bitstream manifest's on pynq, else osdi18)")
    check.add_argument("--bitstream", default=None, help="pynq: the .bit (default $VDLA_BITSTREAM or "
                       "/home/xilinx/vdla/bitstreams/<fingerprint>/vdla.bit)")
    check.add_argument("--timeout", type=float_range(0.0, 3600.0, low_open=True), default=60.0,
                       help="seconds each check may take; a check that does not answer fails and the rest "
                       "are not run (default 60)")
    check.add_argument("--json", action="store_true", help="machine-readable report")
    check.set_defaults(func=cmd_board_check)

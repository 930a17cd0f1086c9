"""The ``vdla`` command: a thin layer over the packages.

User mistakes (bad files, programs, configurations) print one line ``vdla: error: ...`` and
exit with status 2; no tracebacks. Each subcommand lives in a ``cmd_*`` function registered in
:func:`build_parser`.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

from vdla_hw.errors import VdlaError

EXIT_USER_ERROR = 2
# Modules that each add subcommands through ``add_parser(subparsers)``; one per package area.
EXTENSIONS = ("vdla.cmd_sim", "vdla.cmd_compile", "vdla.cmd_run", "vdla.cmd_hw", "vdla.cmd_deploy")


def _print_json(data) -> None:
    print(json.dumps(data, indent=2, sort_keys=False))


def cmd_config_show(args) -> int:
    from vdla_hw.config import load_config

    config = load_config(args.config)
    info = config.describe()
    if args.json:
        _print_json(info)
        return 0
    print(f"configuration {info['name']}  fingerprint {info['fingerprint']}  ISA v{info['isa_version']}")
    for key, value in info["params"].items():
        print(f"  {key:<24} {value!s:<10} {info['sources'][key]}")
    print("derived:")
    for key, value in info["derived"].items():
        print(f"  {key:<24} {value}")
    return 0


def cmd_regmap(args) -> int:
    from vdla_hw import regmap

    print(regmap.markdown())
    return 0


def cmd_asm(args) -> int:
    from vdla_hw.asm import assemble

    path = Path(args.file)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise VdlaError(f"{path}: cannot read assembly ({err.strerror if isinstance(err, OSError) else err})") from None
    bundle = assemble(text, config=args.config, source=str(path))
    bundle.save(args.output)
    print(f"wrote {args.output}: {bundle.insn_count} instructions, {bundle.dram.size}-byte image, "
          f"config {bundle.config.name} ({bundle.config.fingerprint})", file=sys.stderr)
    return 0


def cmd_disasm(args) -> int:
    from vdla_hw.asm import disassemble
    from vdla_hw.bundle import Bundle

    sys.stdout.write(disassemble(Bundle.load(args.file, config=args.config)))
    return 0


def cmd_exec(args) -> int:
    import numpy as np

    from vdla_hw.bundle import Bundle
    from vdla_hw.semantics import execute

    bundle = Bundle.load(args.file, config=args.config)
    result = execute(bundle)
    if args.output:
        bundle.with_dram(result.dram).save(args.output)
    report = {"model": "reference semantics", "config": bundle.config.fingerprint,
              "instructions": bundle.insn_count, "counters": result.counters.as_dict(),
              "tokens_left": result.tokens_left,
              "dram_sha256": __import__("hashlib").sha256(np.ascontiguousarray(result.dram)).hexdigest()}
    if args.json:
        _print_json(report)
    else:
        c = report["counters"]
        print(f"executed {bundle.insn_count} instructions ({bundle.config.name}, reference semantics)")
        print(f"  loaded bytes: {c['load_bytes']}  stored bytes: {c['store_bytes']}")
        print(f"  GEMM uops: {c['gemm_uops']}  ALU uops: {c['alu_uops']}")
        left = {q: n for q, n in result.tokens_left.items() if n}
        print(f"  tokens left at FINISH: {left or 'none'}")
        for name in bundle.symbols:
            if bundle.symbols[name].mem == "out":
                print(f"  {name} = {bundle.read(name, result.dram).reshape(-1)[:16].tolist()}"
                      f"{' ...' if bundle.symbols[name].count * bundle.config.batch * bundle.config.block_out > 16 else ''}")
        if args.output:
            print(f"  final image written to {args.output}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vdla", description="VDLA co-design simulator")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    config = sub.add_parser("config", help="show a configuration")
    config_sub = config.add_subparsers(dest="config_command", required=True, metavar="ACTION")
    show = config_sub.add_parser("show", help="parameters, their sources and derived sizes")
    show.add_argument("config", nargs="?", default=None, help="preset name or JSON file (default osdi18)")
    show.add_argument("--json", action="store_true", help="machine-readable output")
    show.set_defaults(func=cmd_config_show)

    regmap = sub.add_parser("regmap", help="print the control register map (Markdown)")
    regmap.set_defaults(func=cmd_regmap)

    asm = sub.add_parser("asm", help="assemble a text program into a bundle")
    asm.add_argument("file")
    asm.add_argument("-o", "--output", required=True, help="bundle file to write (.npz)")
    asm.add_argument("--config", default=None, help="preset or JSON file, unless the file has .config")
    asm.set_defaults(func=cmd_asm)

    disasm = sub.add_parser("disasm", help="print a bundle's instructions as assembly")
    disasm.add_argument("file")
    disasm.add_argument("--config", default=None, help="require this configuration")
    disasm.set_defaults(func=cmd_disasm)

    exe = sub.add_parser("exec", help="run a bundle on the reference semantics (no timing)")
    exe.add_argument("file")
    exe.add_argument("-o", "--output", help="write the final image as a bundle (.npz, key 'dram')")
    exe.add_argument("--config", default=None, help="require this configuration")
    exe.add_argument("--json", action="store_true", help="machine-readable output")
    exe.set_defaults(func=cmd_exec)
    for name in EXTENSIONS:
        importlib.import_module(name).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except VdlaError as err:
        print(f"vdla: error: {err}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("vdla: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

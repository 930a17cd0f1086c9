"""``vdla import-vta`` and ``vdla export-vta``: VTA's standalone case format (onera/standalone-vta)
to and from a program bundle (:mod:`vdla_hw.vta_format`, docs/vta.md)."""

from __future__ import annotations

import sys

from vdla import commands
from vdla.argtypes import output_dir, output_file


def cmd_import_vta(args) -> int:
    from pathlib import Path

    from vdla.outputs import write_file
    from vdla_hw.errors import VdlaError
    from vdla_hw.vta_format import DEFAULT_CONFIG, import_dir

    try:
        bundle = import_dir(args.dir, config=args.config)
    except VdlaError as err:
        if args.config is not None or not Path(args.dir).is_dir():
            raise
        # a case folder does not say which configuration it was built for: say what was assumed
        raise VdlaError(f"{err} (read as configuration {DEFAULT_CONFIG}, VTA's default: a case of another "
                        "configuration needs --config, the one vdla export-vta named)") from None
    write_file(args.output, bundle.save)
    files = ", ".join(f"{name} {s.count} {s.mem}" for name, s in bundle.symbols.items()) or "a flat image"
    print(f"wrote {args.output}: {bundle.insn_count} instructions, {bundle.dram.size}-byte image ({files}), "
          f"config {bundle.config.name} ({bundle.config.fingerprint})", file=sys.stderr)
    return 0


def cmd_export_vta(args) -> int:
    from vdla_hw.bundle import Bundle
    from vdla_hw.vta_format import DEFAULT_CONFIG, export_dir, target_config

    bundle = Bundle.load(args.file, config=args.config)
    written = export_dir(bundle, args.dir, flat=args.flat, vta_config=args.vta_config)
    print(f"wrote {len(written)} files to {args.dir}: {', '.join(p.name for p in written)}", file=sys.stderr)
    target = target_config(bundle, args.vta_config)
    if target.name != DEFAULT_CONFIG:   # the files do not say it: import-vta assumes VTA's default
        print(f"encoded for configuration {target.name}: import it with vdla import-vta {args.dir} "
              f"--config {target.name}", file=sys.stderr)
    return 0


def add_parser(sub) -> None:
    imp = commands.add(sub, "import-vta")
    imp.add_argument("dir", help="a VTA case directory (instructions.bin, uop.bin, input.bin, ..., "
                     "memory_addresses.csv) or a flat one (dram.bin, instructions.bin, memory_addresses.csv)")
    imp.add_argument("-o", "--output", type=output_file, required=True, help="bundle file to write (.npz)")
    imp.add_argument("--config", default=None, help="the VTA build's configuration: preset or JSON file "
                     "(default vta-pynq, VTA's default vta_config.json)")
    imp.set_defaults(func=cmd_import_vta)
    exp = commands.add(sub, "export-vta")
    exp.add_argument("file", help="bundle (.npz)")
    exp.add_argument("dir", type=output_dir, help="folder to write the case into (created if needed)")
    exp.add_argument("--flat", action="store_true", help="write one DRAM image (dram.bin) and the stream "
                     "instead of one file per data object")
    exp.add_argument("--config", default=None, help="require this bundle configuration")
    exp.add_argument("--vta-config", default=None, help="encode for this VTA configuration (default: the "
                     "bundle's; e.g. vta-pynq for VTA's default build): same element shapes, SRAMs as deep or deeper")
    exp.set_defaults(func=cmd_export_vta)

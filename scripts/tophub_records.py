"""Extract the ResNet-18 PYNQ-Z1 measurements of three tlc-pack/tophub AutoTVM logs into
compiler/data/board_records.csv (issue 44: the accelerator and the CPU model held against the board).

Usage: python scripts/tophub_records.py TOPHUB_DIR [-o compiler/data/board_records.csv]

TOPHUB_DIR is a checkout of https://github.com/tlc-pack/tophub (its ``tophub/`` folder holds the
logs). Only these records are kept, and nothing else of the logs is read into the table:

- ``vta_v0.06.log``: the section headed ``# Resnet-18 - pynq_1x16_i8w8a32_15_15_18_17`` (VTA on the
  PYNQ-Z1 with VTA's default configuration, our ``vta-pynq``; the section ends at the next ``#`` line);
- ``arm_cpu_v0.01.log``: records of ``-model=pynq`` (the Cortex-A9, FP32 spatial pack) whose conv
  shape is one of ResNet-18's (compiler/data/resnet18_layers.csv);
- ``vta_v0.02.log``: records of ``-model=pynq`` (the Cortex-A9, int8 x int8 -> int32: VTA's CPU
  path) whose conv shape is one of ResNet-18's.

Each record is one AutoTVM measurement: the workload (shapes, strides, pads), the schedule's knobs
(``config.e``, written as the log writes them) and the measured mean time, the first element of
``r[0]`` in seconds (AutoTVM's ``MeasureResult.costs``; ``r[1]`` is its error number, 0 = none).
Everything else in those logs (other networks, other boards, other configurations) is left out.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compiler.cpu_fallback.resnet18 import layer_table  # noqa: E402
from compiler.paper import BOARD_SHAPE  # noqa: E402
from vdla_hw.errors import VdlaError  # noqa: E402
from vdla_hw.files import atomic_write, json_loads, read_capped  # noqa: E402

OUT = ROOT / "compiler" / "data" / "board_records.csv"
VTA_SECTION = "# Resnet-18 - pynq_1x16_i8w8a32_15_15_18_17"
COLUMNS = ("record", "source", "line", "target", "dtype", "layers", *BOARD_SHAPE, "template", "knobs", "measured_s")
HEADER = """\
# ResNet-18 convolutions measured on a PYNQ-Z1 by AutoTVM, from tlc-pack/tophub at commit
# f05376ec3855afd2779433982b4c668a6d1120fa (https://github.com/tlc-pack/tophub), extracted by
# scripts/tophub_records.py. source/line: the log file and its line (1-based). target: vta = the
# accelerator (vta_v0.06.log, model pynq_1x16_i8w8a32_15_15_18_17, our vta-pynq preset), arm_cpu =
# the Cortex-A9 at 650 MHz (arm_cpu_v0.01.log, -model=pynq, FP32 spatial pack; vta_v0.02.log,
# -model=pynq, int8 x int8 -> int32). layers: ResNet-18's layers of that shape
# (compiler/data/resnet18_layers.csv). knobs: the record's config entity exactly as logged.
# measured_s: the record's mean time in seconds (r[0][0]); every record kept has error number 0.
"""


def resnet18_shapes() -> dict[tuple, list[str]]:
    """(H, W, IC, OC, K, stride, pad) -> ResNet-18 conv layer names of that shape."""
    shapes: dict[tuple, list[str]] = {}
    for row in layer_table():
        if row["name"] != "fc":
            key = tuple(row[k] for k in ("H_in", "W_in", "IC", "OC", "K", "stride", "pad"))
            shapes.setdefault(key, []).append(row["name"])
    return shapes


def workload_shape(args: list) -> tuple[tuple, str]:
    """(H, W, IC, OC, K, stride, pad) and the data type of a topi_nn_conv2d record's arguments
    (plain NCHW/OIHW, or VTA's packed NCHW1n16c / OIHW16o16i)."""
    data, kernel, strides, pads = args[0][1], args[1][1], args[2], args[3]
    if len(data) == 6:  # VTA: [N/b, C/ci, H, W, b, ci], kernel [O/co, C/ci, KH, KW, co, ci]
        n, c, h, w = data[0] * data[4], data[1] * data[5], data[2], data[3]
        oc, k = kernel[0] * kernel[4], kernel[2]
    else:
        n, c, h, w = data
        oc, k = kernel[0], kernel[2]
    if n != 1 or kernel[2] != kernel[3] or strides[0] != strides[1] or pads[0] != pads[1]:
        return (), args[0][2]
    return (h, w, c, oc, k, strides[0], pads[0]), args[0][2]


def records(path: Path, target: str, keep_line) -> list[dict]:
    """The records of one log that ``keep_line(text, section)`` keeps and that match a ResNet-18
    shape; a line that is not an AutoTVM record is a one-line VdlaError naming the file and line."""
    shapes = resnet18_shapes()
    out, section = [], ""
    data = read_capped(path, "AutoTVM log")  # a regular file, bounded (one-line VdlaError otherwise)
    for number, text in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        if text.startswith("#"):
            section = text.strip()
            continue
        if not text.strip() or not keep_line(text, section):
            continue
        rec = json_loads(text, f"{path}:{number}")
        try:
            task, cfg, result = rec["i"], rec["i"][5], rec["r"]
            shape, dtype = workload_shape(task[2])
            if shape not in shapes or result[1] != 0:
                continue
            out.append({"source": path.name, "line": number, "target": target, "dtype": dtype,
                        "layers": " ".join(shapes[shape]), **dict(zip(BOARD_SHAPE, shape)),
                        "template": cfg.get("t", ""), "knobs": json.dumps(cfg["e"], separators=(", ", ": ")),
                        "measured_s": repr(float(result[0][0]))})
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as err:
            raise VdlaError(f"{path}:{number}: not an AutoTVM record ({type(err).__name__}: {err})") from None
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tophub", type=Path, help="a checkout of tlc-pack/tophub")
    ap.add_argument("-o", "--output", type=Path, default=OUT)
    a = ap.parse_args(argv)
    try:
        count = extract(a.tophub, a.output)
    except (VdlaError, OSError) as err:  # a missing log, a damaged line, an unwritable output: one line
        where = f"{err.filename}: " if isinstance(err, OSError) and err.filename else ""
        print(f"tophub_records: {where}{getattr(err, 'strerror', None) or err}", file=sys.stderr)
        return 2
    print(f"{a.output}: {count} records")
    return 0


def extract(tophub: Path, output: Path) -> int:
    """Write the table of the ResNet-18 records of ``tophub`` (a checkout, or its ``tophub/``
    folder) to ``output`` in one piece; returns the number of records."""
    logs = tophub / "tophub" if (tophub / "tophub").is_dir() else tophub
    pynq = lambda text, section: "-model=pynq\"" in text or "-model=pynq " in text  # noqa: E731
    rows = (records(logs / "vta_v0.06.log", "vta", lambda text, section: section == VTA_SECTION)
            + records(logs / "arm_cpu_v0.01.log", "arm_cpu", pynq)
            + records(logs / "vta_v0.02.log", "arm_cpu", pynq))
    text = io.StringIO(newline="")
    text.write(HEADER)
    w = csv.DictWriter(text, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    for i, row in enumerate(rows):
        w.writerow({"record": f"r{i:02d}", **row})
    atomic_write(output, text.getvalue())
    return len(rows)


if __name__ == "__main__":
    sys.exit(main())

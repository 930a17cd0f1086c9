"""int8 accuracy against onnxruntime: our power-of-two quantization vs onnxruntime's own static int8.

For every model it prints, side by side, the RMS error of the int8 network's logits against the
float model for (a) ``vdla`` (``compiler.quantize``: power-of-two scales, zero point -128 for
never-negative values, MSE calibration, free steps folded into the layers and the CPU adds'
multipliers where a value reaches only convs, dense layers and adds, per-channel weights,
int32 logits)
and (b) onnxruntime's ``quantize_static`` (QDQ, per-tensor, int8 activations and weights, its
default MinMax calibration), both calibrated on the same images and measured on the same test
images; plus how far our float model is from onnxruntime's float run.

Models: every ``*.onnx`` in ``--models`` (default ``models/``). Make them with torch (not a
project dependency; see docs/onnx.md)::

    python scripts/export_torchvision.py resnet18 -o models/resnet18.onnx
    python scripts/export_torchvision.py mobilenet_v2 --size 160x224 -o models/mobilenet_v2_160x224.onnx

Without exported files the built-in ResNet-18 (``vdla model resnet18``) is measured, so the
benchmark runs anywhere. Images: synthetic (``compiler.frontend.inputs``) unless ``--images DIR``
(a folder of PNG/JPEG) is given; the first ``--calibration`` of them calibrate, the next
``--tests`` are measured. A model whose input's first axis is not 1 (torch's sequence-first
``(sequence, batch, channels)`` layers, ``nn.LSTM``, ``nn.GRU``) takes each input whole; where
onnxruntime's static int8 leaves every op computing an output in float (an LSTM or GRU), its
error is 0 and the ratio ``inf``: compare ours with the float output's RMS instead.

    .venv/bin/python benchmarks/onnx_int8.py [--models DIR] [--calibration 8] [--tests 8] [--per-tensor] [--record]

``--per-tensor`` also prints, for every value both int8 networks quantize (conv, add and pool
outputs), its relative RMS error against the float model for each, and both steps (ours:
``2**-frac / scale``; onnxruntime's: its QDQ scale): where along the network one falls behind.

``--record`` writes the table's figures (not its times) to ``benchmarks/results/onnx_int8.json``
(benchmarks/record.py); ``python scripts/figures/onnx_int8.py int8`` renders docs/onnx.md's table from it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import record

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compiler.frontend import float_ref, load_onnx  # noqa: E402
from compiler.quantize import quantize_graph, reference  # noqa: E402
from vdla.inputs import IMAGENET, load_inputs, synthetic  # noqa: E402
from vdla.network import is_classifier_output, top1_agreement  # noqa: E402

# what --record writes (benchmarks/record.py): the table's columns per model, and what they were measured on
FIGURES = {
    "models": "per model (file stem): input (HxW); producer (the ONNX file's producer and version); float_vs_ort "
              "(max abs difference of our float logits and onnxruntime's); logit_rms (RMS of onnxruntime's float "
              "logits); vdla_rms and ort_rms (RMS error of vdla's and onnxruntime's int8 logits against their own "
              "float model's); ratio (vdla_rms / ort_rms); vdla_top1 and ort_top1 (fraction of test inputs whose "
              "int8 top-1 class is the float model's; null for an output that is not a classifier's scores); a model of "
              "several outputs gives these for the output with the largest ratio, and each output's in outputs",
    "calibration": "inputs calibrating both int8 networks",
    "tests": "test inputs measured (after the calibration inputs)",
    "images": "the inputs: synthetic images (compiler.frontend.inputs) or the --images folder",
    "models_folder": "the --models folder the .onnx files came from; null: it held none and the built-in "
                     "ResNet-18 was measured",
}


def onnxruntime_int8(path: Path, name: str, calibration: np.ndarray, tests: np.ndarray, work: Path,
                     shape: tuple[int, ...]):
    """(float outputs, int8 outputs) of onnxruntime on ``tests``, quantized on ``calibration``:
    each a list with one array per graph output (the test inputs along axis 0). Both are stacks
    of whole model inputs of ``shape`` along axis 0 (:func:`whole_inputs`)."""
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.batches = iter([{name: sample} for sample in whole_inputs(calibration, shape)])

        def get_next(self):
            return next(self.batches, None)

    single, pre, quantized = work / "single.onnx", work / "pre.onnx", work / "int8.onnx"
    onnx.save(onnx.load(str(path)), str(single))  # external data inlined (< 2 GB)
    quant_pre_process(str(single), str(pre), skip_symbolic_shape=True)
    quantize_static(str(pre), str(quantized), Reader(), quant_format=QuantFormat.QDQ, per_channel=False,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    options = {"providers": ["CPUExecutionProvider"]}
    fp32 = ort.InferenceSession(str(path), **options)
    int8 = ort.InferenceSession(str(quantized), **options)
    def run(session) -> list[np.ndarray]:
        answers = [session.run(None, {name: t}) for t in whole_inputs(tests, shape)]
        return [np.concatenate([a[k] for a in answers]) for k in range(len(answers[0]))]

    return run(fp32), run(int8)


def whole_inputs(stack: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A stack of inputs (``count * shape[0]`` rows, as ``vdla.inputs`` makes them) as ``count``
    whole model inputs of ``shape``: one row each for a batch-1 model; for a model whose first
    axis is not a batch of samples (torch's sequence-first layers, ``(sequence, batch, channels)``)
    each input is that whole tensor."""
    return stack.reshape((-1,) + tuple(shape))


def forward_each(forward, stack: np.ndarray, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """``forward`` (a stack of inputs -> one array per output) of every whole input in turn
    (:func:`whole_inputs`), each output's arrays concatenated along axis 0; at once for batch 1."""
    if shape[0] == 1:
        return forward(stack)
    runs = [forward(x) for x in whole_inputs(stack, shape)]
    return tuple(np.concatenate(arrays) for arrays in zip(*runs))


def per_tensor(graph, q, tests: np.ndarray, work: Path) -> None:
    """Print each value's relative error (ours, onnxruntime's) against the float model and both
    steps; ``work`` holds onnxruntime's QDQ model (``onnxruntime_int8`` wrote it)."""
    import onnx
    import onnxruntime as ort

    model = onnx.load(str(work / "int8.onnx"))
    consts = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
    suffix = "_DequantizeLinear_Output"
    steps = {n.output[0][:-len(suffix)]: float(consts[n.input[1]]) for n in model.graph.node
             if n.op_type == "DequantizeLinear" and n.output[0].endswith(suffix) and n.input[1] in consts}
    float_values, ours = float_ref.run(graph, tests), reference.run(q, tests)
    names = [v for v in float_values if v in q.fracs and v in steps and v != graph.input]
    model.graph.output.extend(onnx.helper.make_tensor_value_info(v + suffix, onnx.TensorProto.FLOAT, None)
                              for v in names)
    onnx.save(model, str(work / "int8_values.onnx"))
    session = ort.InferenceSession(str(work / "int8_values.onnx"), providers=["CPUExecutionProvider"])
    runs = [session.run([v + suffix for v in names], {graph.input: t[None]}) for t in tests]
    print(f"  {'value':<24} {'vdla err':>9} {'ort err':>9} {'vdla step':>10} {'ort step':>10}")
    for i, v in enumerate(names):
        f = float_values[v].astype(np.float64)
        theirs = np.concatenate([r[i] for r in runs])
        norm = float(np.sqrt((f ** 2).mean())) or 1.0
        step = 2.0 ** -q.fracs[v] / q.scales.get(v, 1.0)
        print(f"  {v:<24} {rms(q.dequantize(v, ours[v]), f) / norm:9.2%} {rms(theirs, f) / norm:9.2%} "
              f"{step:10.4g} {steps[v]:10.4g}")


def percent(fraction) -> str:
    return "-" if fraction is None else f"{fraction * 100:.0f}%"


def rms(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.sqrt(((a.astype(np.float64) - b.astype(np.float64)) ** 2).mean()))


def producer(path: Path) -> str:
    """The ONNX file's producer and its version (``pytorch 2.13.0``)."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    return f"{model.producer_name} {model.producer_version}".strip()


def measure(path: Path, args) -> tuple[dict, tuple[float, float]]:
    """One model's row of the table (``FIGURES["models"]`` says what each entry is) and the wall
    seconds (vdla's quantization and runs, onnxruntime's)."""
    graph = load_onnx(path)
    shape = graph.shapes[graph.input]
    if shape[0] != 1 and args.per_tensor:
        raise SystemExit(f"{path}: input {shape}: --per-tensor measures models of batch 1 only")
    if args.images:
        images = load_inputs(args.images, shape, IMAGENET).array
        if len(images) < args.calibration + args.tests:
            raise SystemExit(f"{args.images}: {len(images)} images, fewer than --calibration + --tests")
        calibration, tests = images[:args.calibration], images[args.calibration:args.calibration + args.tests]
    else:
        calibration = synthetic(shape, args.calibration, 1).array
        tests = synthetic(shape, args.tests, 2).array
    start = time.perf_counter()
    q = quantize_graph(graph, calibration)
    ours_float = forward_each(lambda x: float_ref.forward_all(graph, x), tests, shape)
    ours_int8 = q.dequantize_outputs(forward_each(lambda x: reference.forward_all(q, x), tests, shape))
    ours_seconds = time.perf_counter() - start
    with tempfile.TemporaryDirectory(prefix="vdla-bench-") as tmp:
        start = time.perf_counter()
        ort_float, ort_int8 = onnxruntime_int8(path, graph.input, calibration, tests, Path(tmp), shape)
        ort_seconds = time.perf_counter() - start
        if args.per_tensor:
            print(f"{path.stem}: per value, relative RMS error against the float model", flush=True)
            per_tensor(graph, q, tests, Path(tmp))
    outputs = {name: output_row(*values) for name, *values in
               zip(graph.outputs, ours_float, ours_int8, ort_float, ort_int8)}
    worst = max(outputs.values(), key=lambda o: o["ratio"])  # the only output, or the one furthest behind
    row = {"input": "x".join(map(str, shape[2:])) or str(shape), "producer": producer(path),
           **{key: worst[key] for key in ("float_vs_ort", "logit_rms", "vdla_rms", "ort_rms", "ratio", "vdla_top1",
                                          "ort_top1")}}
    if len(outputs) > 1:
        row["outputs"] = outputs
    return row, (ours_seconds, ort_seconds)


def output_row(ours_float, ours_int8, ort_float, ort_int8) -> dict:
    """One output's figures (``FIGURES["models"]``); top-1 only for a classifier's scores."""
    ours, theirs = rms(ours_int8, ours_float), rms(ort_int8, ort_float)
    classifier = is_classifier_output(ours_float.shape)
    return {"float_vs_ort": float(np.abs(ours_float - ort_float).max()),
            "logit_rms": float(np.sqrt((ort_float.astype(np.float64) ** 2).mean())),
            "vdla_rms": ours, "ort_rms": theirs, "ratio": ours / theirs if theirs else float("inf"),
            "vdla_top1": top1_agreement(ours_float, ours_int8) if classifier else None,
            "ort_top1": top1_agreement(ort_float, ort_int8) if classifier else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="models", help="folder of exported .onnx files (default models/)")
    ap.add_argument("--only", nargs="*", default=None, help="model file stems to measure (default: all)")
    ap.add_argument("--images", default=None, help="folder of images (default: synthetic images)")
    ap.add_argument("--calibration", type=int, default=8)
    ap.add_argument("--tests", type=int, default=8)
    ap.add_argument("--per-tensor", action="store_true", help="print every value's error, ours and onnxruntime's")
    record.add_option(ap)
    args = ap.parse_args()
    load_before = record.load_average()
    folder = Path(args.models)
    paths = sorted(folder.glob("*.onnx")) if folder.is_dir() else []
    if args.only:
        paths = [p for p in paths if p.stem in args.only]
    work = None
    if not paths:
        print(f"no exported models in {folder}/ (make them with torch: python scripts/export_torchvision.py "
              f"resnet18 -o {folder}/resnet18.onnx; see docs/onnx.md); measuring the built-in ResNet-18 instead",
              file=sys.stderr)
        from compiler.frontend.resnet import write_resnet

        work = tempfile.TemporaryDirectory(prefix="vdla-bench-")
        paths = [write_resnet(Path(work.name) / "resnet18_builtin.onnx", 18, 224)]
    source = args.images or "synthetic images"
    print(f"int8 logits' RMS error against each one's float model ({args.calibration} calibration and "
          f"{args.tests} test inputs: {source})")
    print(f"{'model':<24} {'input':>8} {'|float-ort|':>11} {'logit RMS':>9} {'vdla int8':>10} {'ort int8':>9} "
          f"{'ratio':>6} {'top1 vdla/ort':>13} {'wall s vdla/ort':>16}")
    rows = {}
    for path in paths:
        r, seconds = measure(path, args)
        rows[path.stem] = r
        print(f"{path.stem:<24} {r['input']:>8} {r['float_vs_ort']:11.2e} {r['logit_rms']:9.4f} {r['vdla_rms']:10.5f} "
              f"{r['ort_rms']:9.5f} {r['ratio']:6.2f} {percent(r['vdla_top1']):>7}/{percent(r['ort_top1']):>5} "
              f"{seconds[0]:8.1f}/{seconds[1]:.1f}", flush=True)
        for name, o in r.get("outputs", {}).items():
            print(f"  output {name:<15} {'':>8} {o['float_vs_ort']:11.2e} {o['logit_rms']:9.4f} {o['vdla_rms']:10.5f} "
                  f"{o['ort_rms']:9.5f} {o['ratio']:6.2f}")
    print("ratio < 1: vdla's int8 network is closer to its float model than onnxruntime's int8 network to its own")
    if any(r["ort_rms"] == 0 for r in rows.values()):
        print("ort int8 0 (ratio inf): onnxruntime's quantize_static left every op computing that output in float "
              "(an LSTM or GRU): compare vdla int8 with the float output's RMS instead")
    if args.record:
        record.write("onnx_int8", FIGURES, {"models": rows, "calibration": args.calibration, "tests": args.tests,
                                            "images": source, "models_folder": None if work else str(folder)},
                     load_before)
    if work is not None:
        work.cleanup()


if __name__ == "__main__":
    main()

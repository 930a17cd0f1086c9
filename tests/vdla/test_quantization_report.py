"""vdla.network.quantization_report: streamed over the test inputs, it gives the errors of the
int8 network against the float one that whole-batch runs give."""

import numpy as np

from compiler.frontend import float_ref
from compiler.quantize import reference
from vdla.inputs import synthetic
from vdla.network import TEST_SEED, load_model, quantization_report, quantize_model


def test_streamed_report_equals_the_whole_batch_computation():
    graph = load_model("resnet18", 32)
    q = quantize_model(graph, "resnet18")
    tests = synthetic(graph.shapes[graph.input], 3, TEST_SEED)
    report = quantization_report(graph, q, tests)
    fv, qv = float_ref.run(graph, tests.array), reference.run(q, tests.array)
    assert set(report["per_layer_error"]) == {n.name for n in q.nodes[1:]}
    for node in q.nodes[1:]:
        f = fv[node.output].astype(np.float64)
        d = q.dequantize(node.output, qv[node.output]).astype(np.float64)
        want = np.sqrt(((f - d) ** 2).mean()) / max(np.sqrt((f ** 2).mean()), 1e-12)
        assert abs(report["per_layer_error"][node.name] - want) <= 1e-9 * max(want, 1e-12), node.name
    want, got = fv[graph.output].astype(np.float64), q.dequantize_output(qv[q.output]).astype(np.float64)
    assert abs(report["output_rms_error"] - np.sqrt(((got - want) ** 2).mean())) < 1e-9
    assert report["top1_agreement"] == (want.argmax(axis=1) == got.argmax(axis=1)).mean()
    assert report["test_inputs"] == 3


def test_the_printed_median_is_the_median():
    """`vdla run` printed errors[n // 2], the upper of the middle two of an even count (8.0 %
    where the median was 7.24 %)."""
    from compiler.network.report import median_error

    assert median_error([0.08, 0.02, 0.0724 * 2 - 0.08, 0.09]) == "7.2%"
    assert median_error([0.03, 0.01, 0.02]) == "2.0%"
    assert median_error([]) == "n/a (no quantized layers)"

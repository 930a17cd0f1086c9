"""docs/onnx.md's figures read out of the doc and compared with the code they describe."""

import re

from compiler.quantize import scales
from tests.docs.doctext import generator, marked_paragraph, number
from tests.test_doc_figures import ROOT


def test_the_scale_rules_are_the_code():
    text = " ".join(marked_paragraph("docs/onnx.md", "test_the_scale_rules_are_the_code").split())
    window = re.search(r"`percentile` keeps ([\d.]+)\.\.([\d.]+) %", text)
    assert window and (number(window[1]), number(window[2])) == (round(100 - scales.PERCENTILE, 6), scales.PERCENTILE)
    gain = re.search(r"squared error below (\d+) % of one frac per layer \(`scales.PER_CHANNEL_GAIN`", text)
    assert gain and number(gain[1]) / 100 == scales.PER_CHANNEL_GAIN, text


def test_the_int8_summary_counts_the_models_where_vdla_is_closer():
    summary = generator("onnx_int8").summary
    row = lambda ratio, gap: {"ratio": ratio, "float_vs_ort": gap}  # noqa: E731
    assert "within 3.0e-05 of onnxruntime's on all 2" in summary({"a": row(0.6, 1e-6), "b": row(0.9, 3e-5)})
    said = summary({"a": row(0.6, 1e-6), "b": row(1.0, 1e-6), "c": row(1.2, 1e-6)})
    assert "on 1 of the 3 (not on `b`, `c`): the ratio (ours over onnxruntime's) is 0.60 to 1.20" in said, said

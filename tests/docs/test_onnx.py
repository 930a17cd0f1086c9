"""docs/onnx.md's figures read out of the doc and compared with the code they describe."""

import re

from compiler.quantize import scales
from tests.docs.doctext import marked_paragraph, number


def test_the_scale_rules_are_the_code():
    text = " ".join(marked_paragraph("docs/onnx.md", "test_the_scale_rules_are_the_code").split())
    window = re.search(r"`percentile` keeps ([\d.]+)\.\.([\d.]+) %", text)
    assert window and (number(window[1]), number(window[2])) == (round(100 - scales.PERCENTILE, 6), scales.PERCENTILE)
    gain = re.search(r"squared error below (\d+) % of one frac per layer \(`scales.PER_CHANNEL_GAIN`", text)
    assert gain and number(gain[1]) / 100 == scales.PER_CHANNEL_GAIN, text

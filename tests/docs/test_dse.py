"""docs/dse.md's figures read out of the doc and compared with the code and data they describe."""

import json
import re

from dse.parts import PARTS_FILE
from dse.resources import TARGET_ERROR
from tests.dse.test_calibration import CLOCK_TARGET
from tests.docs.doctext import marked_paragraph, number

DOC = "docs/dse.md"


def test_the_calibration_targets_are_the_tests():
    text = " ".join(marked_paragraph(DOC, "test_the_calibration_targets_are_the_tests").split())
    m = re.search(r"LUT and FF within (\d+) %, DSP and BRAM36 exact, the clock within (\d+) %", text)
    assert m, text
    assert TARGET_ERROR == {"lut": number(m[1]) / 100, "ff": number(m[1]) / 100, "dsp": 0.0, "bram36": 0.0}
    assert CLOCK_TARGET == number(m[2]) / 100


def test_the_parts_are_the_data():
    text = " ".join(marked_paragraph(DOC, "test_the_parts_are_the_data").split())
    data = json.loads(PARTS_FILE.read_text())
    shown = {}
    for name, figures in re.findall(r"(x\w+) \(([\d,]+(?: LUT)?, [\d,]+(?: FF)?, [\d,]+(?: DSP)?, [\d,]+(?: BRAM36)?|"
                                    r"[\d,]+ / [\d,]+ / [\d,]+ / [\d,]+);", text):
        values = [number(v) for v in re.findall(r"\d[\d,]*\d|\d", figures)]
        shown[name] = dict(zip(("lut", "ff", "dsp", "bram36"), values))
    assert shown == {name: {k: part[k] for k in ("lut", "ff", "dsp", "bram36")} for name, part in data["parts"].items()}
    m = re.search(r"LUTs are at most (\d+) % of the part's", text)
    assert m and number(m[1]) / 100 == data["max_lut_utilisation"], text

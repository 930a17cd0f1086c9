"""docs/vta.md's figures against the presets and the ISA layout they describe."""

from tests.docs.doctext import marked_paragraph, number
from vdla_hw import isa
from vdla_hw.config import load_config

DOC = "docs/vta.md"


def kib(config, mem: str) -> float:
    return 2 ** config.params[f"LOG_{mem.upper()}_BUFF_SIZE"] / 1024


def test_vta_pynq_and_osdi18_differ_as_the_doc_says():
    text = marked_paragraph(DOC, "test_vta_pynq_and_osdi18_differ_as_the_doc_says")
    vta, osdi = load_config("vta-pynq"), load_config("osdi18")
    for mem in ("uop", "inp", "wgt", "acc"):
        assert number(text, rf"(\d+) KiB \({mem}\)") == kib(vta, mem), mem
    assert number(text, r"has a (\d+) KiB weight SRAM") == kib(osdi, "wgt")
    assert number(text, r"weight indices are (\d+) bits") == osdi.index_bits("wgt")
    assert number(text, r"bits where VTA's are (\d+)") == vta.index_bits("wgt")
    assert number(text, r"starts\s+at bit (\d+)") == isa.layout("GEMM", osdi)["wgt_factor_in"].lo
    assert number(text, r"instead of (\d+)") == isa.layout("GEMM", vta)["wgt_factor_in"].lo
    assert number(text, r"`wgt_idx` is (\d+) bits wide") == osdi.index_bits("wgt")

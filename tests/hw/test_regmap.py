"""Register map: one table, aligned, non-overlapping, with every counter the simulator names."""

from vdla_hw import regmap
from vdla_hw.isa import MODULES


def test_offsets_are_unique_aligned_and_inside_the_span():
    offsets = [r.offset for r in regmap.REGISTERS]
    assert len(offsets) == len(set(offsets))
    assert all(o % regmap.REG_BYTES == 0 and o < regmap.SPAN for o in offsets)
    assert len({r.name for r in regmap.REGISTERS}) == len(regmap.REGISTERS)


def test_required_registers_exist():
    for name in ("CTRL", "STATUS", "ERROR", "INSN_ADDR", "INSN_COUNT", "DRAM_BASE", "CYCLES_LO", "CYCLES_HI",
                 "ID_ISA", "ID_CONFIG"):
        assert name in regmap.BY_NAME
    for module in MODULES:
        for counter in regmap.MODULE_COUNTERS:
            assert regmap.counter_name(module, counter) in regmap.BY_NAME


def test_error_bits_are_distinct_single_bits():
    bits = list(regmap.ERROR_BITS.values())
    assert len(set(bits)) == len(bits) and all(b & (b - 1) == 0 for b in bits)


def test_markdown_lists_every_register():
    text = regmap.markdown()
    assert all(f"| {r.name} |" in text for r in regmap.REGISTERS)

"""The energy model: the table's own points are reproduced, interpolation is monotone, energy is
linear in the activity, and a bad table is a one-line error naming the file and the entry."""

import json

import pytest

from dse.activity import empty
from dse.energy import DEFAULT_TABLE, EnergyTableError, access_pj, energy, load_table, sram_pj_per_64bit
from vdla_hw.config import load_config


def test_table_points_are_reproduced_and_interpolation_is_monotone():
    table = load_table()
    for size, pj in table["sram_pj_per_64bit"]["points"]:
        assert sram_pj_per_64bit(table, size) == pytest.approx(pj)
    sizes = [1 << k for k in range(8, 24)]
    values = [sram_pj_per_64bit(table, s) for s in sizes]
    assert values == sorted(values)


def test_energy_is_counts_times_table():
    table, config = load_table(), load_config("osdi18")
    act = empty()
    act["macs"], act["dram_bytes"] = 1000, 64
    act["sram_reads"]["wgt"] = 10
    result = energy(act, config, table)
    per = access_pj(table, config)
    assert result["parts"]["mac"] == pytest.approx(1000 * 0.3e-12)
    assert result["parts"]["dram"] == pytest.approx(64 * 244e-12)
    assert result["parts"]["sram_wgt"] == pytest.approx(10 * per["wgt"] * 1e-12)
    assert result["energy_j"] == pytest.approx(sum(result["parts"].values()))
    # a 2048-bit weight element of a 32 kB buffer: 32 64-bit accesses of 20 pJ
    assert per["wgt"] == pytest.approx(32 * 20.0)


@pytest.mark.parametrize("edit, words", [
    (lambda t: t.pop("mac_int8_pj"), ["mac_int8_pj"]),
    (lambda t: t["dram_pj_per_byte"].update(value=-1), ["dram_pj_per_byte"]),
    (lambda t: t["sram_pj_per_64bit"].update(points=[[8192, 10.0]]), ["sram_pj_per_64bit"]),
    (lambda t: t["sram_pj_per_64bit"].update(points=[[32768, 20.0], [8192, 10.0]]), ["sram_pj_per_64bit"]),
    (lambda t: t["alu_int32_pj"].pop("source"), ["alu_int32_pj"]),
])
def test_bad_tables_name_the_entry(tmp_path, edit, words):
    table = json.loads(DEFAULT_TABLE.read_text())
    edit(table)
    path = tmp_path / "table.json"
    path.write_text(json.dumps(table))
    with pytest.raises(EnergyTableError) as err:
        load_table(path)
    assert str(path) in str(err.value) and all(w in str(err.value) for w in words)
    with pytest.raises(EnergyTableError, match="cannot read"):
        load_table(tmp_path / "none.json")

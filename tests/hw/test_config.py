"""Configuration: presets, derived sizes, fingerprints, JSON files and bad values."""

import copy
import dataclasses
import json
import pickle
import re

import pytest

from vdla_hw.config import PARAMETERS, Config, load_config
from vdla_hw.errors import ConfigError
from vdla_hw.files import MAX_TEXT_BYTES
from vdla_hw.presets import PRESETS


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_parameter_has_a_source(name):
    config = load_config(name)
    assert set(config.params) == set(PARAMETERS)
    assert all(config.sources[key] for key in PARAMETERS)


def test_osdi18_sizes_match_spec_section_2():
    c = load_config("osdi18")
    assert (c.batch, c.block_in, c.block_out) == (1, 16, 16)
    assert [c.elem_bytes(m) for m in ("inp", "wgt", "acc", "out", "uop")] == [16, 256, 64, 16, 4]
    assert [c.depth(m) for m in ("uop", "inp", "wgt", "acc", "out")] == [8192, 2048, 128, 2048, 2048]
    assert c.depth("out") * c.elem_bytes("out") == 32 * 1024
    assert c.peak_ops_per_s == pytest.approx(2 * 16 * 16 * c.clock_hz)
    assert [c.index_bits(m) for m in ("uop", "inp", "wgt", "acc")] == [13, 11, 7, 11]
    assert {k: v for k, v in load_config("osdi18-200").params.items() if k.startswith("LOG_")} == \
        {k: v for k, v in c.params.items() if k.startswith("LOG_")}


def test_vta_pynq_sizes_match_spec_section_2():
    c = load_config("vta-pynq")
    assert c.depth("wgt") == 1024 and c.index_bits("wgt") == 10
    assert c.peak_ops_per_s == pytest.approx(51.2e9)
    assert c.mem_bytes_per_s == pytest.approx(0.8e9)


def test_fingerprint_is_readable_and_distinguishes_presets():
    prints = {name: load_config(name).fingerprint for name in PRESETS}
    assert re.fullmatch(r"1x16_i8w8a32_15_15_15_17-[0-9a-f]{8}", prints["osdi18"])
    assert len(set(prints.values())) == len(prints)
    assert load_config("osdi18").fingerprint == Config.from_preset("osdi18").fingerprint
    assert Config.from_preset("osdi18", CLOCK_MHZ=150.0).fingerprint != prints["osdi18"]


def test_config_is_frozen():
    config = load_config("tiny")
    with pytest.raises(AttributeError):
        config.name = "other"


def test_parameters_and_sources_cannot_change_after_validation():
    config = load_config("osdi18")
    before, clock = config.fingerprint, config.CLOCK_MHZ
    with pytest.raises(TypeError):
        config.params["CLOCK_MHZ"] = 5000.0  # out of range: would never pass validation
    with pytest.raises(TypeError):
        config.sources["CLOCK_MHZ"] = "me"
    assert config.CLOCK_MHZ == clock and config.fingerprint == before == load_config("osdi18").fingerprint
    with pytest.raises(ConfigError, match="CLOCK_MHZ"):
        dataclasses.replace(config, params={**config.params, "CLOCK_MHZ": 5000.0})


def test_config_pickles_and_copies_as_an_equal_frozen_value():
    config = Config.from_preset("vta-pynq", MEM_LATENCY=40)
    for again in (pickle.loads(pickle.dumps(config)), copy.deepcopy(config), dataclasses.replace(config)):
        assert again == config and hash(again) == hash(config) and again.fingerprint == config.fingerprint
        assert again.sources == config.sources and again.name == config.name
        with pytest.raises(TypeError):
            again.params["MEM_LATENCY"] = 1


def test_json_file_overrides_a_preset_and_names_its_source(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"preset": "vta-pynq", "CLOCK_MHZ": 150}))
    config = load_config(str(path))
    assert config.CLOCK_MHZ == 150.0 and config.LOG_WGT_BUFF_SIZE == 18
    assert config.sources["CLOCK_MHZ"] == str(path)


def test_to_json_round_trips():
    for name in PRESETS:
        config = load_config(name)
        again = Config.from_json_text(config.to_json())
        assert again == config and again.fingerprint == config.fingerprint


@pytest.mark.parametrize("key,value,words", [
    ("LOG_BLOCK", 9, "LOG_BLOCK=9"),
    ("LOG_INP_WIDTH", 4, "LOG_INP_WIDTH=4"),
    ("CLOCK_MHZ", "fast", "CLOCK_MHZ='fast'"),
    ("MEM_BYTES_PER_BEAT", 12, "MEM_BYTES_PER_BEAT=12"),
    ("LOG_ACC_BUFF_SIZE", 5, "LOG_ACC_BUFF_SIZE=5"),
    ("NOT_A_KEY", 1, "NOT_A_KEY"),
])
def test_bad_value_names_the_parameter(key, value, words):
    with pytest.raises(ConfigError) as err:
        Config.from_preset("osdi18", **{key: value})
    assert words in str(err.value)


def test_micro_op_that_does_not_fit_32_bits_is_rejected():
    with pytest.raises(ConfigError, match=r"micro-op needs 34 bits.*but has 32"):
        Config.from_preset("vta-pynq", LOG_ACC_BUFF_SIZE=18)


def test_unknown_preset_and_missing_file():
    with pytest.raises(ConfigError, match="neither a preset"):
        load_config("no-such-preset")
    with pytest.raises(ConfigError, match="unknown preset"):
        Config.from_preset("nope")


def test_a_variant_is_its_base_preset_with_its_own_sourced_parameters():
    from vdla_hw.presets import PRESETS, VARIANTS

    artifact, base = load_config("osdi18-artifact"), Config.from_preset("osdi18")
    assert "osdi18-artifact" not in PRESETS and VARIANTS["osdi18-artifact"][0] == "osdi18"
    changed = {k for k in base.params if artifact.params[k] != base.params[k]}
    assert changed == {"LOG_UOP_BUFF_SIZE", "LOG_WGT_BUFF_SIZE"} and artifact.name == "osdi18-artifact"
    assert (2 ** artifact.LOG_UOP_BUFF_SIZE, 2 ** artifact.LOG_WGT_BUFF_SIZE) == (16 * 1024, 256 * 1024)
    assert all("ReQuEST'18 artifact" in artifact.sources[k] and "kB" in artifact.sources[k] for k in changed)
    assert all(artifact.sources[k] == base.sources[k] for k in base.params if k not in changed)
    assert artifact.fingerprint != base.fingerprint
    assert Config.from_json_text(artifact.to_json()).fingerprint == artifact.fingerprint  # round trip
    with pytest.raises(ConfigError, match="variants: .*osdi18-artifact"):
        Config.from_preset("nope")


def test_malformed_json(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{ not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_config(str(path))


@pytest.mark.parametrize("text, words", [
    ("[" * 200_000 + "]" * 200_000, "JSON nested too deeply"),
    ('{"CLOCK_MHZ": ' + "9" * 5000 + "}", "not valid JSON (Exceeds the limit (4300 digits)"),
    ('{"LOG_BATCH": ' + "9" * 4000 + "}", "LOG_BATCH=" + "9" * 10),   # valid JSON, out of range
    ('{"CLOCK_MHZ": 1' + "0" * 400 + ".5}", "CLOCK_MHZ=inf: must be a number"),
    (b'{"name": "\xff"}', "not UTF-8 text"),
])
def test_hostile_json_is_one_config_error(tmp_path, text, words):
    """Issue 22: a config nested 200,000 deep or with a 5,000-digit integer ended in `internal error`."""
    path = tmp_path / "hostile.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ConfigError) as err:
        load_config(str(path))
    assert words in str(err.value) and str(path) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("special, words", [("/dev/zero", "not a regular file"), (".", "is a directory")])
def test_config_reads_are_capped(tmp_path, special, words):
    """`vdla config show /dev/zero` read until memory ran out: only a regular file of bounded size is read."""
    with pytest.raises(ConfigError, match=words):
        load_config(special)
    big = tmp_path / "big.json"
    with open(big, "wb") as fh:
        fh.truncate(MAX_TEXT_BYTES + 1)   # sparse: no disk, no memory
    with pytest.raises(ConfigError, match="more than the"):
        load_config(str(big))


# --- the memory port (issue 23) -------------------------------------------------------------

def test_the_measured_system_is_the_default_and_the_paper_text_stays_selectable():
    # TVM Fig. 10/21 were measured at 100 MHz on ACP under a 0.8 GB/s roof; the paper's text says 200 MHz
    measured, text = load_config("osdi18"), load_config("osdi18-200")
    assert (measured.CLOCK_MHZ, measured.mem_port, measured.coherent) == (100.0, "acp", True)
    assert measured.mem_bytes_per_s == pytest.approx(0.8e9) and measured.DDR_BYTES_PER_CYCLE_CAP > 0
    assert (text.CLOCK_MHZ, text.mem_port, text.coherent, text.DDR_BYTES_PER_CYCLE_CAP) == (200.0, "hp", False, 0)
    assert load_config("vta-pynq").mem_port == "acp"   # VTA's PYNQ build: S_AXI_ACP, coherent


def test_each_port_row_is_taken_whole_by_the_presets_that_pick_it():
    from vdla_hw.presets import PORTS
    for name in ("osdi18", "osdi18-200", "vta-pynq"):
        c = load_config(name)
        assert all(c.params[k] == v for k, (v, _) in PORTS[c.mem_port].items()), name
    assert PORTS["acp"]["MEM_READ_OUTSTANDING"][0] != PORTS["hp"]["MEM_READ_OUTSTANDING"][0]


def test_the_ddr_cap_is_the_boards_ddr3_at_the_preset_clock():
    from vdla_hw.presets import PYNQ_Z1_DDR, ddr_bytes_per_s
    bits, mts, eff = (PYNQ_Z1_DDR[k][0] for k in ("bus_bits", "mega_transfers", "efficiency"))
    assert ddr_bytes_per_s() == pytest.approx(bits / 8 * mts * 1e6 * eff)
    c = load_config("osdi18")
    assert c.DDR_BYTES_PER_CYCLE_CAP * c.clock_hz == pytest.approx(ddr_bytes_per_s())
    assert "PYNQ-Z1" in c.sources["DDR_BYTES_PER_CYCLE_CAP"]


def test_a_binding_ddr_cap_lowers_the_roof():
    c = Config.from_preset("osdi18-200", DDR_BYTES_PER_CYCLE_CAP=4.0)
    assert c.mem_bytes_per_s == pytest.approx(4.0 * c.clock_hz)
    assert load_config("osdi18-200").mem_bytes_per_s == pytest.approx(8 * 200e6)


@pytest.mark.parametrize("value", ["ACP", "pcie", 1, None, True])
def test_mem_port_takes_only_acp_or_hp(value):
    with pytest.raises(ConfigError, match="MEM_PORT"):
        Config.from_preset("tiny", MEM_PORT=value)


def test_mem_port_is_part_of_the_fingerprint_and_json():
    acp = Config.from_preset("tiny", MEM_PORT="acp")
    assert acp.fingerprint != load_config("tiny").fingerprint and acp.coherent and not load_config("tiny").coherent
    assert load_config(acp.to_json()) == acp


def test_with_port_swaps_the_whole_port_row():
    from vdla_hw.config import with_port
    from vdla_hw.presets import PORTS
    c = load_config("osdi18")
    assert with_port(c, "acp") is c
    hp = with_port(c, "hp")
    assert hp.mem_port == "hp" and all(hp.params[k] == v for k, (v, _) in PORTS["hp"].items())
    assert hp.CLOCK_MHZ == c.CLOCK_MHZ and hp.fingerprint != c.fingerprint
    with pytest.raises(ConfigError, match="MEM_PORT"):
        with_port(c, "gp0")


def test_a_parameter_with_a_default_may_be_left_out_and_changes_no_fingerprint_at_it():
    """DEFAULTS: a configuration without MEM_ROW_SERIAL takes 0 with its source; at 0 the
    parameter is in neither the fingerprint nor to_json, so every configuration, ID register and
    stored file from before it stays the same; at 1 the fingerprint changes."""
    from vdla_hw.config import DEFAULTS

    c = load_config("vta-pynq")
    assert c.MEM_ROW_SERIAL == 0 and c.sources["MEM_ROW_SERIAL"] == DEFAULTS["MEM_ROW_SERIAL"][1]
    assert "MEM_ROW_SERIAL" not in json.loads(c.to_json())["params"]
    assert c.fingerprint == "1x16_i8w8a32_15_15_18_17-20a356c0"   # as before the parameter existed
    serial = load_config('{"preset": "vta-pynq", "MEM_ROW_SERIAL": 1}')
    assert serial.fingerprint != c.fingerprint and json.loads(serial.to_json())["params"]["MEM_ROW_SERIAL"] == 1
    assert Config.from_json_text(serial.to_json()) == serial and Config.from_json_text(c.to_json()) == c
    with pytest.raises(ConfigError, match=r"MEM_ROW_SERIAL=2: must be in \[0, 1\]"):
        load_config('{"preset": "vta-pynq", "MEM_ROW_SERIAL": 2}')


def test_the_board_variant_is_vta_pynq_with_vta_s_dma_and_two_calibrated_numbers():
    board, base = load_config("vta-pynq-board"), load_config("vta-pynq")
    changed = {k for k in base.params if board.params[k] != base.params[k]}
    assert changed == {"MEM_ROW_SERIAL", "MEM_LATENCY", "DDR_BYTES_PER_CYCLE_CAP"}
    assert "vta.cc" in board.sources["MEM_ROW_SERIAL"]
    for key, record in (("MEM_LATENCY", "r09"), ("DDR_BYTES_PER_CYCLE_CAP", "r01")):
        assert board.sources[key].startswith("calibrated") and record in board.sources[key]
    from vdla_hw.rtl.params import rtl_params
    with pytest.raises(ConfigError, match="MEM_ROW_SERIAL=1: not supported by the RTL"):
        rtl_params(board)

"""CPU data files (compiler/data/cpus): every parameter present, typed and sourced; bad files
are one clear error; the Cortex-A9 analysed is the board library's target."""

import json
from importlib import resources

import pytest

from compiler.cpu_fallback import arm
from compiler.cpu_fallback.cost.cpus import PARAMS, CpuError, cpu_names, load_cpu, parse_cpu


def raw(name):
    return json.loads(resources.files("compiler").joinpath("data", "cpus", f"{name}.json").read_text())


@pytest.mark.parametrize("name", ["cortex-a9", "cortex-a53"])
def test_cpu_files_name_every_parameter_with_a_source(name):
    cpu = load_cpu(name)
    assert set(cpu.values) == set(PARAMS)
    assert all(len(cpu.sources[k]) > 20 for k in PARAMS)
    described = cpu.as_dict()
    assert described["name"] == name and described["clock_hz"] == cpu.clock_hz
    assert described["params"]["l1d_bytes"] == {"value": 32768, "source": cpu.sources["l1d_bytes"]}


def test_known_cpus_and_their_headline_numbers():
    assert cpu_names() == ["cortex-a53", "cortex-a9"]
    a9, a53 = load_cpu("cortex-a9"), load_cpu("cortex-a53")
    assert (a9.clock_hz, a9.line_bytes, a9.l2_bytes) == (650e6, 32, 512 * 1024)
    assert (a53.clock_hz, a53.line_bytes, a53.l2_bytes) == (1.2e9, 64, 1024 * 1024)
    # DRAM traffic: a copy reads the source, reads the destination (write-allocate) and writes it.
    assert a9.dram_bytes_per_s == 3 * a9.memcpy_bytes_per_s
    assert a53.dram_bytes_per_s == 2 * a53.memcpy_bytes_per_s


def test_cortex_a9_is_analysed_as_the_board_library_is_built():
    cpu = load_cpu("cortex-a9")
    assert (cpu.codegen.triple, cpu.codegen.cpu, cpu.codegen.features) == (arm.ARM_TRIPLE, arm.ARM_CPU, arm.ARM_FEATURES)


def test_bad_cpu_data_is_one_clear_error():
    with pytest.raises(CpuError, match="unknown CPU 'cortex-m0'; known: cortex-a53, cortex-a9"):
        load_cpu("cortex-m0")
    data = raw("cortex-a9")
    del data["params"]["clock_hz"]["source"]
    with pytest.raises(CpuError, match="parameter clock_hz needs a value and a source"):
        parse_cpu("cortex-a9", data)
    data = raw("cortex-a9")
    data["params"]["l1d_ways"]["value"] = 0
    with pytest.raises(CpuError, match="l1d_ways must be a positive int"):
        parse_cpu("cortex-a9", data)
    data = raw("cortex-a9")
    data["params"]["l2_ways"]["value"] = 3
    with pytest.raises(CpuError, match="l2 size / \\(line x ways\\) must be a power of two"):
        parse_cpu("cortex-a9", data)
    data = raw("cortex-a9")
    data["params"]["turbo"] = {"value": 1, "source": "x"}
    with pytest.raises(CpuError, match="unknown parameters \\['turbo'\\]"):
        parse_cpu("cortex-a9", data)

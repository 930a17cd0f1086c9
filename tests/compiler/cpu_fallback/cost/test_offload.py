"""The host work around one run of a loaded model (``CpuModel.offload_cost``), by hand from the
CPU data: copies and cache maintenance of the moved bytes only, none of it on a coherent port."""

import pytest

import compiler.cpu_fallback as cf
from compiler.cpu_fallback.cost import CpuModel, RuntimeProfile
from driver.registers import run_profile

A9 = CpuModel("cortex-a9")
HP = RuntimeProfile(**run_profile())
ACP = RuntimeProfile(**{**run_profile(), "coherent": True})


def maintenance(nbytes: int) -> float:
    cpu = A9.cpu
    return -(-nbytes // cpu.line_bytes) * cpu.cache_maintenance_cycles_per_line / cpu.clock_hz


def test_the_driver_profile_copies_no_images_and_maintains_caches_unless_coherent():
    assert HP.image_copies == 0 and not HP.coherent
    assert run_profile(None)["coherent"] is False


def test_moved_bytes_are_copied_and_maintained_on_hp():
    cpu = A9.cpu
    host = A9.offload_cost(written_bytes=4096, read_bytes=1000, accelerator_s=1e-3, runtime=HP)
    p = host.parts
    assert p["copy"] == pytest.approx(5096 / cpu.memcpy_bytes_per_s)
    assert p["flush"] == pytest.approx(maintenance(4096) + 4096 / cpu.dram_bytes_per_s)
    assert p["invalidate"] == pytest.approx(maintenance(1000))
    assert p["registers"] == pytest.approx((HP.register_writes + HP.register_reads) * cpu.mmio_access_s)
    assert host.seconds == pytest.approx(sum(p.values()))


def test_a_coherent_port_needs_no_cache_maintenance():
    hp = A9.offload_cost(written_bytes=4096, read_bytes=1000, accelerator_s=1e-3, runtime=HP).parts
    acp = A9.offload_cost(written_bytes=4096, read_bytes=1000, accelerator_s=1e-3, runtime=ACP).parts
    assert acp["flush"] == acp["invalidate"] == 0 and hp["flush"] > 0 and hp["invalidate"] > 0
    assert {k: v for k, v in acp.items() if k not in ("flush", "invalidate")} == \
        {k: v for k, v in hp.items() if k not in ("flush", "invalidate")}


def test_moved_bytes_default_to_the_packed_tensors():
    pack, unpack = cf.PackSpec(n=1, c=64, h=14, w=14), cf.UnpackSpec(n=1, c=64, h=14, w=14)
    given = A9.offload_cost(packs=[pack], unpacks=[unpack], written_bytes=pack.io_bytes()[1],
                            read_bytes=unpack.io_bytes()[0], runtime=HP)
    assert A9.offload_cost(packs=[pack], unpacks=[unpack], runtime=HP).parts == given.parts
    assert given.parts["pack"] == pytest.approx(A9.seconds(pack)) and given.parts["unpack"] > 0


def test_a_whole_image_runtime_is_charged_its_copies():
    """The driver before the loaded model (two image copies per run, one more by the executor)."""
    old = RuntimeProfile(**{**run_profile(), "image_copies": 2})
    image = 1 << 20
    p = A9.offload_cost(image_bytes=image, extra_copies=1, accelerator_s=1e-3, runtime=old).parts
    assert p["copy"] == pytest.approx(3 * image / A9.cpu.memcpy_bytes_per_s)
    assert p["invalidate"] == pytest.approx(maintenance(image))
    # the loaded model's runtime does not copy the image at all
    assert A9.offload_cost(image_bytes=image, accelerator_s=1e-3, runtime=HP).parts["copy"] == 0


def test_vtas_runtime_spins_writes_its_stream_per_run_and_names_each_parts_source():
    from vdla import host_runtime
    from vdla_hw.config import load_config

    cpu, acp = A9.cpu, load_config("vta-pynq")
    vta = host_runtime.profile("vta", acp)
    assert (vta.register_writes, vta.register_reads, vta.coherent) == (14, 0, True)  # pynq_driver.cc Run
    assert vta.keeps_layouts and vta.writes_stream and not ACP.keeps_layouts and not ACP.writes_stream
    assert set(host_runtime.sources("vta")) == set(vta.__dataclass_fields__)
    assert all("apache/tvm" in source for source in host_runtime.sources("vta").values())
    assert host_runtime.profile("ours", acp) == RuntimeProfile(**run_profile(acp))
    with pytest.raises(ValueError, match="host runtime 'xrt' is not one of ours, vta"):
        host_runtime.profile("xrt")
    host = A9.offload_cost(written_bytes=4096, read_bytes=1000, accelerator_s=1e-3, runtime=vta, stream_bytes=8000)
    p = host.parts
    assert p["instructions"] == pytest.approx(8000 / cpu.memcpy_bytes_per_s)
    assert p["registers"] == pytest.approx(14 * cpu.mmio_access_s)
    assert 0 <= p["poll"] < cpu.mmio_access_s  # it sees DONE within one read of it
    backoff = A9.offload_cost(written_bytes=4096, read_bytes=1000, accelerator_s=1e-3, runtime=ACP, stream_bytes=8000)
    assert "instructions" not in backoff.parts and backoff.parts["poll"] > 10 * p["poll"]
    assert host.seconds == pytest.approx(sum(p.values()))

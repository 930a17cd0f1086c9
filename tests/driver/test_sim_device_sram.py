"""The sim device keeps its SRAMs from one program to the next, as the board and the RTL do
(docs/spec.md section 4, "SRAM state between programs"): programs run on one device give the
images of the simulator carrying one SRAM state, a new device starts from zeros, and
``uninit="warn"`` names a device's first read of SRAM none of its programs wrote."""

from __future__ import annotations

import numpy as np

from driver import open_device
from vdla_hw.config import load_config
from vdla_hw.sram_state import SramState
from vdla_sim import simulate
from vdla_sim.progen import random_program


def test_sim_device_carries_srams_between_programs():
    progs = [random_program(s, "tiny") for s in range(6)]
    state = SramState.fresh(load_config("tiny"))
    expected = [simulate(b, sram=state).dram for b in progs]
    with open_device("sim", "tiny") as device:
        got = [device.run(b).dram for b in progs]
    assert all(np.array_equal(e, g) for e, g in zip(expected, got))
    fresh = [simulate(b).dram for b in progs]
    assert any(not np.array_equal(f, g) for f, g in zip(fresh, got))
    with open_device("sim", "tiny") as device:      # a new device: zeros, like a fresh run
        assert np.array_equal(device.run(progs[0]).dram, fresh[0])


def test_sim_device_warns_of_the_first_uninitialised_read():
    bundle = random_program(3, "tiny")
    with open_device("sim", "tiny", uninit="warn") as device:
        res = device.run(bundle)
    assert res.counters["uninit"] == str(simulate(bundle, uninit="warn").uninit)
    assert res.counters["uninit"].startswith("instruction ")

"""The host runtimes whose per-offload work the executor can model, each field with its source.

``ours``: the board runtime of this project (``driver.registers.run_profile``: a loaded model,
exponential-back-off polling of STATUS, each offloaded op's inputs packed and written and its
output read back and unpacked by the CPU). ``vta``: VTA's own runtime on the PYNQ-Z1 as
apache/tvm-vta publishes it, an option beside ours for comparison (VTA Fig. 8):

- it writes 11 registers before and 3 after a run and spins on the done flag, reading it with a
  ``std::this_thread::yield()`` between reads (``src/pynq/pynq_driver.cc``, ``VTADevice::Run``),
  so it sees DONE within one register read (the yield's own cost is not priced);
- it builds each call's instruction stream on the CPU and copies it, and every cached micro-op
  kernel, into the device's buffer before each run (apache/tvm ``vta/src/runtime.cc``:
  ``InsnQueue::ReadBarrier`` and ``UopQueue::ReadBarrier`` ``memcpy`` them; the micro-op
  kernels themselves are built once, ``UopKernelMap``); the copy is priced, the building is not;
- ``graph_pack`` keeps the packed layout between offloaded ops (apache/tvm
  ``vta/python/vta/top/graphpack.py``: one packed region, unpacked once at its end): a tensor
  passing from one offloaded op to the next is neither unpacked, copied nor packed;
- on ACP it does no cache maintenance (``runtime.cc``: ``kBufferCoherent``), as ours.
"""

from __future__ import annotations

NAMES = ("ours", "vta")

VTA_DRIVER = "apache/tvm-vta src/pynq/pynq_driver.cc, VTADevice::Run"
VTA_RUNTIME = "apache/tvm vta/src/runtime.cc"
VTA_SOURCES = {
    "register_writes": f"{VTA_DRIVER}: 7 address and 4 start writes before the run, 3 autorestart-disable "
                       "writes after it",
    "register_reads": f"{VTA_DRIVER}: no register read but the done polls (counted by poll)",
    "poll_first_s": f"{VTA_DRIVER}: spins on the done flag, std::this_thread::yield() between reads (no sleep); "
                    "the yield's own cost is not priced",
    "poll_max_s": f"{VTA_DRIVER}: spins, no back-off",
    "sleep_slack_s": f"{VTA_DRIVER}: never sleeps, so no timer slack",
    "image_copies": f"{VTA_RUNTIME}: buffers are allocated once (VTABufferAlloc); no whole-image copy per run",
    "coherent": f"{VTA_RUNTIME}: kBufferCoherent (VTA_COHERENT_ACCESSES) on the ACP build: no cache flush or "
                "invalidate; the port of the configuration decides it here, as for ours",
    "keeps_layouts": "apache/tvm vta/python/vta/top/graphpack.py: graph_pack packs the offloaded region once and "
                     "unpacks it once at its end; tensors between offloaded ops stay packed on the device",
    "writes_stream": f"{VTA_RUNTIME}: each call's instructions are built on the CPU (InsnQueue) and copied with "
                     "every cached micro-op kernel into the device buffer before the run (InsnQueue::ReadBarrier, "
                     "UopQueue::ReadBarrier: memcpy); building them is not priced",
}


def profile(name: str, config=None):
    """The :class:`compiler.cpu_fallback.cost.RuntimeProfile` of host runtime ``name`` (one of
    :data:`NAMES`) for ``config``'s port; ValueError for another name."""
    from compiler.cpu_fallback.cost import RuntimeProfile
    from driver.registers import cache_coherent, run_profile

    if name == "ours":
        return RuntimeProfile(**run_profile(config))
    if name == "vta":
        return RuntimeProfile(register_writes=14, register_reads=0, poll_first_s=0.0, poll_max_s=0.0,
                              sleep_slack_s=0.0, image_copies=0, coherent=cache_coherent(config),
                              keeps_layouts=True, writes_stream=True)
    raise ValueError(f"host runtime {name!r} is not one of {', '.join(NAMES)}")


def sources(name: str) -> dict:
    """Each profile field's source for host runtime ``name`` (empty for ours: the study's own
    defaults name the driver)."""
    return dict(VTA_SOURCES) if name == "vta" else {}

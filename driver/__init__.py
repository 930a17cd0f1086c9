"""Run programs on a device: one API, several backends.

``open_device(target, config, **options)`` returns a :class:`~driver.device.Device`;
``device.run(bundle)`` executes a program bundle and returns a :class:`~driver.device.RunResult`
(final DRAM image, cycles, counters). The finer API: ``allocate``/``write``/``read``/``free``
DRAM buffers, ``start``/``wait`` (with a timeout), ``counters``, ``identify``. Backends: ``sim``
(vdla_sim), ``rtl`` (the MyHDL RTL under Verilator) and ``pynq`` (the PYNQ-Z1 through pynq 3.x).
The executor of whole networks only talks to this API, so it runs unchanged on any backend.
``driver.deploy`` serves packaged networks over TCP (``vdla serve`` / ``vdla deploy``).
"""

from driver.device import BACKENDS, Buffer, Device, DeviceError, RunResult, open_device

__all__ = ["BACKENDS", "Buffer", "Device", "DeviceError", "RunResult", "open_device"]

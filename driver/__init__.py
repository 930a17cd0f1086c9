"""Run programs on a device: one API, several backends.

``open_device(target, config)`` returns a :class:`~driver.device.Device`; ``device.run(bundle)``
executes a program bundle and returns a :class:`~driver.device.RunResult` (final DRAM image,
cycles, counters). Backends: ``sim`` (vdla_sim). The executor of whole networks only talks to
this API, so it runs unchanged on any backend.
"""

from driver.device import BACKENDS, Device, DeviceError, RunResult, open_device

__all__ = ["BACKENDS", "Device", "DeviceError", "RunResult", "open_device"]

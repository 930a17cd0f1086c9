"""Cortex-A9 time model: modelled seconds of a kernel on the PYNQ-Z1's CPU (not measured).

For one kernel call with work ``W`` (``spec.work()``)::

    cycles    = W.macs / macs_per_cycle + W.elem_ops / lane_ops_per_cycle
    compute_s = cycles / (clock_hz * efficiency)
    memory_s  = (W.bytes_read + W.bytes_written) / dram_bytes_per_s
    seconds   = call_overhead_s + max(compute_s, memory_s)

i.e. a roofline of the A9's NEON unit against DDR bandwidth. Parameters and their sources:

- ``clock_hz`` = 650 MHz: PYNQ-Z1 Cortex-A9 clock (docs SPEC section 6).
- ``macs_per_cycle`` = 4: the A9's NEON datapath is 64 bits wide, so it retires one
  ``VMLAL.S16`` (four 16x16->32-bit multiply-accumulates) per cycle; int8 operands are widened
  to 16 bits first.
- ``lane_ops_per_cycle`` = 2: other 32-bit lane operations, two per 64-bit NEON op per cycle.
- ``dram_bytes_per_s`` = 1.575 GB/s: DDR3 16-bit at 1050 MT/s (2.1 GB/s) x 75% usable (SPEC 5).
- ``call_overhead_s`` = 5 us: Python/ctypes call and loop set-up per kernel.
- ``efficiency``: the fraction of that NEON peak the generated code reaches (loads/stores,
  widening, loop overhead, cache misses). It is the one calibrated parameter: ``calibrate``
  fits it so that the stem convolution takes the 0.151 s of the TVM paper's Fig. 21.
"""

import dataclasses


@dataclasses.dataclass(frozen=True, kw_only=True)
class A9Params:
    """Parameters of the Cortex-A9 model (see the module docstring for their sources)."""

    clock_hz: float = 650e6
    macs_per_cycle: float = 4.0
    lane_ops_per_cycle: float = 2.0
    dram_bytes_per_s: float = 2.1e9 * 0.75
    call_overhead_s: float = 5e-6
    efficiency: float = 1.0

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if not value > 0:
                raise ValueError(f"A9Params: {field.name} must be positive, got {value!r}")
        if self.efficiency > 1:
            raise ValueError(f"A9Params: efficiency is a fraction of peak, got {self.efficiency}")


@dataclasses.dataclass(frozen=True)
class KernelTime:
    """Modelled time of one kernel call and which roof bounds it."""

    seconds: float
    compute_s: float
    memory_s: float

    @property
    def bound(self):
        return "compute" if self.compute_s >= self.memory_s else "memory"


def kernel_time(spec, params=A9Params()):
    """Modelled Cortex-A9 time of one call of ``spec``'s kernel."""
    work = spec.work()
    cycles = work.macs / params.macs_per_cycle + work.elem_ops / params.lane_ops_per_cycle
    compute_s = cycles / (params.clock_hz * params.efficiency)
    memory_s = (work.bytes_read + work.bytes_written) / params.dram_bytes_per_s
    return KernelTime(params.call_overhead_s + max(compute_s, memory_s), compute_s, memory_s)


def seconds(spec, params=A9Params()):
    """Modelled Cortex-A9 seconds of one call of ``spec``'s kernel."""
    return kernel_time(spec, params).seconds


def total_seconds(specs, params=A9Params()):
    """Modelled seconds of calling each kernel in ``specs`` once."""
    return sum(seconds(spec, params) for spec in specs)


def calibrate(spec, measured_s, params=A9Params()):
    """``params`` with ``efficiency`` fitted so that ``spec`` takes ``measured_s`` seconds.

    The calibration kernel must be compute-bound under the fitted parameters (a memory-bound
    kernel says nothing about NEON efficiency); otherwise ValueError.
    """
    work = spec.work()
    cycles = work.macs / params.macs_per_cycle + work.elem_ops / params.lane_ops_per_cycle
    budget = measured_s - params.call_overhead_s
    if budget <= 0:
        raise ValueError(f"calibrate: {measured_s} s is below the call overhead")
    efficiency = cycles / params.clock_hz / budget
    if efficiency > 1:
        raise ValueError(f"calibrate: {spec.family} in {measured_s} s would need "
                         f"{efficiency:.2f}x the NEON peak; the peak parameters are too low")
    fitted = dataclasses.replace(params, efficiency=efficiency)
    if kernel_time(spec, fitted).bound != "compute":
        raise ValueError(f"calibrate: {spec.family} is memory-bound; calibrate on a "
                         f"compute-bound kernel")
    return fitted

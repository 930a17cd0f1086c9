"""CPUs the cost model knows, as data: ``compiler/data/cpus/<name>.json``, one file per CPU.

A file names the code-generation target (triple, CPU, features), the llvm-mca scheduling model,
and every hardware parameter with its value and source. This module is the schema: it checks
that each parameter is present, has the right type and names a source, and derives nothing but
what the docstrings of the properties below say. Adding a CPU means adding a file, not code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources

from vdla_hw.errors import VdlaError

# name -> (type, whether null is allowed: "not applied")
PARAMS = {
    "clock_hz": (float, False),
    "line_bytes": (int, False),
    "l1d_bytes": (int, False),
    "l1d_ways": (int, False),
    "l2_bytes": (int, False),
    "l2_ways": (int, False),
    "l2_line_cycles": (float, False),
    "memcpy_bytes_per_s": (float, False),
    "write_allocate": (bool, False),
    "mispredict_cycles": (float, False),
    "neon_datapath_bits": (int, True),
    "load_store_bits_per_cycle": (int, True),
    "cache_maintenance_cycles_per_line": (float, False),
    "mmio_access_s": (float, False),
    # memory-level parallelism (cost/memory.py); null: full overlap of memory and compute
    "fill_buffers": (int, True),
    "l2_latency_cycles": (float, True),
    "dram_latency_s": (float, True),
    "miss_window_cycles": (float, True),
    # several cores (CpuModel threads=2)
    "cores": (int, False),
    "shared_dram_bytes_per_s": (float, True),
    "fork_join_s": (float, False),
}


class CpuError(VdlaError):
    """An unknown CPU name or a malformed CPU data file."""


@dataclass(frozen=True)
class Target:
    """An LLVM target: triple, CPU name and feature string (code generation or llvm-mca)."""

    triple: str
    cpu: str
    features: str
    source: str


@dataclass(frozen=True)
class Cpu:
    """One CPU: its targets, its parameters (``values``) and their sources (``sources``)."""

    name: str
    title: str
    codegen: Target
    mca: Target
    values: dict
    sources: dict

    def __getattr__(self, key):
        values = self.__dict__.get("values", {})
        if key in values:
            return values[key]
        raise AttributeError(f"{type(self).__name__} has no attribute {key!r}")

    def __hash__(self):
        return hash(self.fingerprint())

    def __eq__(self, other):
        return isinstance(other, Cpu) and self.as_dict() == other.as_dict()

    @property
    def dram_bytes_per_s(self) -> float:
        """DRAM traffic the core sustains: the measured memcpy rate times the bytes of traffic a
        copy makes per byte copied (read the source, write the destination, and read the
        destination first where stores allocate)."""
        return self.memcpy_bytes_per_s * (3 if self.write_allocate else 2)

    def as_dict(self) -> dict:
        """Name, clock and every parameter with its value and source (the report's ``cpu_model``)."""
        return {"name": self.name, "title": self.title, "clock_hz": self.clock_hz,
                "codegen": {"triple": self.codegen.triple, "cpu": self.codegen.cpu,
                            "features": self.codegen.features, "source": self.codegen.source},
                "scheduling_model": {"triple": self.mca.triple, "cpu": self.mca.cpu,
                                     "mattr": self.mca.features, "source": self.mca.source},
                "params": {k: {"value": self.values[k], "source": self.sources[k]} for k in PARAMS}}

    def fingerprint(self) -> str:
        """Canonical JSON of everything in the file (part of every analysis cache key)."""
        return json.dumps(self.as_dict(), sort_keys=True)


def cpu_names() -> list[str]:
    """Names of the CPUs with a data file, sorted."""
    folder = resources.files("compiler").joinpath("data", "cpus")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


def _target(data: dict, key: str, name: str, features_key: str) -> Target:
    part = data.get(key)
    if not isinstance(part, dict) or not all(isinstance(part.get(k), str) and part[k]
                                             for k in ("triple", "cpu", features_key, "source")):
        raise CpuError(f"CPU data {name}.json: '{key}' needs triple, cpu, {features_key} and source strings")
    return Target(part["triple"], part["cpu"], part[features_key], part["source"])


def _param(name: str, key: str, entry) -> tuple[object, str]:
    kind, nullable = PARAMS[key]
    if not isinstance(entry, dict) or not isinstance(entry.get("source"), str) or not entry["source"].strip():
        raise CpuError(f"CPU data {name}.json: parameter {key} needs a value and a source")
    value = entry.get("value")
    if value is None and nullable:
        return None, entry["source"]
    ok = isinstance(value, bool) if kind is bool else (
        isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 and
        (kind is float or float(value).is_integer()))
    if not ok:
        raise CpuError(f"CPU data {name}.json: parameter {key} must be a positive {kind.__name__}, got {value!r}")
    return (value if kind is bool else kind(value)), entry["source"]


def parse_cpu(name: str, data: dict) -> Cpu:
    """A :class:`Cpu` from the parsed JSON of ``<name>.json`` (every parameter checked)."""
    if not isinstance(data, dict) or data.get("name") != name:
        raise CpuError(f"CPU data {name}.json: its 'name' must be {name!r}")
    params = data.get("params")
    if not isinstance(params, dict):
        raise CpuError(f"CPU data {name}.json: no 'params' object")
    unknown = sorted(set(params) - set(PARAMS))
    missing = sorted(set(PARAMS) - set(params))
    if unknown or missing:
        raise CpuError(f"CPU data {name}.json: unknown parameters {unknown or 'none'}, missing {missing or 'none'}")
    values, sources = {}, {}
    for key in PARAMS:
        values[key], sources[key] = _param(name, key, params[key])
    if values["line_bytes"] & (values["line_bytes"] - 1):
        raise CpuError(f"CPU data {name}.json: line_bytes must be a power of two")
    for level in ("l1d", "l2"):
        sets = values[f"{level}_bytes"] // (values["line_bytes"] * values[f"{level}_ways"])
        if sets < 1 or sets & (sets - 1) or sets * values["line_bytes"] * values[f"{level}_ways"] != values[f"{level}_bytes"]:
            raise CpuError(f"CPU data {name}.json: {level} size / (line x ways) must be a power of two")
    return Cpu(name, str(data.get("title", name)), _target(data, "codegen", name, "features"),
               _target(data, "mca", name, "mattr"), values, sources)


def load_cpu(name: str) -> Cpu:
    """The CPU called ``name`` (one of :func:`cpu_names`); CpuError otherwise."""
    names = cpu_names()
    if name not in names:
        raise CpuError(f"unknown CPU {name!r}; known: {', '.join(names)}")
    text = resources.files("compiler").joinpath("data", "cpus", f"{name}.json").read_text()
    try:
        data = json.loads(text)
    except ValueError as err:
        raise CpuError(f"CPU data {name}.json is not valid JSON ({err})") from None
    return parse_cpu(name, data)

"""The accelerator configuration: a frozen, validated value, and every size derived from it.

Stored parameters use VTA's key names (``LOG_BLOCK`` ...) plus clock, memory-port, queue and
timing-contract parameters. Everything else (depths, index widths, element bytes, peak
ops/s, fingerprint) is a property computed here and nowhere else.

Build one with :func:`load_config` (preset name or JSON file) or :meth:`Config.from_preset`.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
from pathlib import Path
from types import MappingProxyType

from vdla_hw import isa
from vdla_hw.errors import ConfigError, VdlaError
from vdla_hw.files import json_loads, read_capped
from vdla_hw.isa import MEM_TYPES  # noqa: F401 (re-exported: the ISA owns the memory types)
from vdla_hw.presets import DEFAULT_PRESET, PRESETS, VARIANTS

ISA_VERSION = 1

# parameter -> (type, lowest, highest, meaning). Ranges are what the ISA and datapath support;
# a str parameter takes one of CHOICES[name] instead (lowest and highest unused).
PARAMETERS: dict[str, tuple[type, float, float, str]] = {
    "LOG_INP_WIDTH": (int, 3, 3, "log2 bits of an input element (the datapath is int8)"),
    "LOG_WGT_WIDTH": (int, 3, 3, "log2 bits of a weight element (the datapath is int8)"),
    "LOG_ACC_WIDTH": (int, 5, 5, "log2 bits of an accumulator element (the datapath is int32)"),
    "LOG_BATCH": (int, 0, 4, "log2 rows of the input tile (BATCH)"),
    "LOG_BLOCK": (int, 1, 6, "log2 of BLOCK_IN = BLOCK_OUT"),
    "LOG_UOP_BUFF_SIZE": (int, 3, 20, "log2 bytes of the micro-op SRAM"),
    "LOG_INP_BUFF_SIZE": (int, 1, 24, "log2 bytes of the input SRAM"),
    "LOG_WGT_BUFF_SIZE": (int, 1, 24, "log2 bytes of the weight SRAM"),
    "LOG_ACC_BUFF_SIZE": (int, 1, 24, "log2 bytes of the accumulator SRAM"),
    "CLOCK_MHZ": (float, 1.0, 1000.0, "fabric clock in MHz"),
    "MEM_PORT": (str, 0, 0, "the Zynq PS port the memory master uses: acp (coherent through the SCU) or hp (HP0)"),
    "MEM_BYTES_PER_BEAT": (int, 1, 128, "memory-port data width in bytes (power of two)"),
    "MEM_MAX_BURST": (int, 1, 256, "maximum beats per burst"),
    "MEM_LATENCY": (int, 1, 10_000, "cycles from a read burst's address to its first data beat"),
    "MEM_WRITE_LATENCY": (int, 0, 10_000, "cycles from a write burst's last data beat to its response"),
    "MEM_BURST_GAP": (int, 0, 1_000, "dead cycles the memory leaves between two bursts on a data channel"),
    "DDR_BYTES_PER_CYCLE_CAP": (float, 0.0, 1024.0, "shared-DDR bandwidth cap in bytes/cycle, 0 = none"),
    "MEM_READ_OUTSTANDING": (int, 1, 256, "read bursts the DMA keeps in flight (address sent, last beat not back)"),
    "MEM_WRITE_OUTSTANDING": (int, 1, 256, "write bursts the DMA keeps in flight (address sent, response not back)"),
    "MEM_ROW_SERIAL": (int, 0, 1, "1: a LOAD/STORE requests each row after the previous row's last read beat or write "
                                  "response (VTA's HLS DMA, one memcpy per row; simulated only, the RTL streams rows)"),
    "CMD_QUEUE_DEPTH": (int, 1, 1 << 16, "entries of each command queue"),
    "TOKEN_QUEUE_DEPTH": (int, 1, 1 << 16, "tokens each dependency FIFO holds"),
    "FETCH_CYCLES_PER_INSN": (int, 1, 64, "cycles fetch spends routing one instruction"),
    "QUEUE_LATENCY": (int, 1, 64, "cycles before a queued instruction or pushed token is visible"),
    "GEMM_PIPELINE_DEPTH": (int, 1, 64, "GEMM pipeline stages drained at the end of an instruction"),
    "ALU_CYCLES_PER_UOP": (int, 1, 64, "cycles between ALU micro-op issues"),
    "ALU_PIPELINE_DEPTH": (int, 1, 64, "ALU pipeline stages drained at the end of an instruction"),
    "INSN_OVERHEAD": (int, 0, 64, "cycles to decode an instruction and set up its loops"),
}

# Parameters a configuration may leave out: (value, source) it then takes. Each keeps the
# behaviour from before it existed, and at that value it is left out of the fingerprint and of
# to_json, so configurations, caches, IDs and stored files made before it stay the same.
DEFAULTS: dict[str, tuple[object, str]] = {
    "MEM_ROW_SERIAL": (0, "default: the DMA keeps a transfer's rows in flight back to back (docs/spec.md section 5)"),
}

# The values of each str parameter. MEM_PORT is part of the fingerprint like every parameter: it
# changes the hardware (the PS port the bitstream wires, the AxCACHE/AxUSER the master drives)
# and, through the port's parameters, the timing (docs/spec.md section 2).
CHOICES: dict[str, tuple[str, ...]] = {"MEM_PORT": ("acp", "hp")}
COHERENT_PORTS = ("acp",)   # ports through which the accelerator sees the CPU caches (no flush/invalidate)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Config:
    """One accelerator configuration. Construct through :func:`load_config`.

    ``params`` holds every parameter of :data:`PARAMETERS`; ``sources`` says where each value
    came from; ``name`` is the preset name or file it was built from. Both mappings are read-only
    views of private copies: a configuration never changes after validation, so its fingerprint,
    hash and every cache keyed on it stay true (``dataclasses.replace`` or
    :meth:`from_preset` with overrides make a new, validated one).
    """

    name: str
    params: dict
    sources: dict

    def __post_init__(self):
        absent = [key for key in DEFAULTS if key not in self.params]
        if absent:
            object.__setattr__(self, "params", {**self.params, **{k: DEFAULTS[k][0] for k in absent}})
            object.__setattr__(self, "sources", {**self.sources, **{k: DEFAULTS[k][1] for k in absent
                                                                     if k not in self.sources}})
        missing = [key for key in PARAMETERS if key not in self.params]
        if missing:
            raise ConfigError(missing[0], None, "missing", self.name)
        for key, value in self.params.items():
            if key not in PARAMETERS:
                raise ConfigError(key, value, f"unknown parameter (known: {', '.join(PARAMETERS)})", self.name)
            kind, low, high, meaning = PARAMETERS[key]
            if kind is str:
                if not isinstance(value, str) or value not in CHOICES[key]:
                    raise ConfigError(key, value, f"must be one of {', '.join(CHOICES[key])} ({meaning})", self.name)
                continue
            # (an int is never converted to float here: one of 4000 digits would overflow)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    (isinstance(value, float) and not math.isfinite(value)) or (kind is int and value != int(value)):
                raise ConfigError(key, value, f"must be {'an integer' if kind is int else 'a number'} ({meaning})", self.name)
            if not low <= value <= high:
                raise ConfigError(key, value, f"must be in [{low}, {high}] ({meaning})", self.name)
        # Freeze a normalised copy so equal configurations compare and hash alike; the hash is
        # computed once because configurations key the ISA layout caches on hot paths.
        params = {k: PARAMETERS[k][0](self.params[k]) for k in PARAMETERS}
        object.__setattr__(self, "params", MappingProxyType(params))
        object.__setattr__(self, "sources", MappingProxyType(dict(self.sources)))
        object.__setattr__(self, "_hash", hash(json.dumps(params, sort_keys=True)))
        # Parameters read as plain attributes under their VTA names (config.QUEUE_LATENCY):
        # instance attributes, so the simulator's hot loops never go through __getattr__.
        for key, value in params.items():
            object.__setattr__(self, key, value)
        self._check_derived()

    def __reduce__(self):
        # read-only views do not pickle (Ray ships configurations to workers): rebuild from copies
        return _rebuild, (self.name, dict(self.params), dict(self.sources))

    def _check_derived(self):
        p = self.params
        if p["MEM_BYTES_PER_BEAT"] & (p["MEM_BYTES_PER_BEAT"] - 1):
            raise ConfigError("MEM_BYTES_PER_BEAT", p["MEM_BYTES_PER_BEAT"], "must be a power of two", self.name)
        for mem, key in (("uop", "LOG_UOP_BUFF_SIZE"), ("inp", "LOG_INP_BUFF_SIZE"),
                         ("wgt", "LOG_WGT_BUFF_SIZE"), ("acc", "LOG_ACC_BUFF_SIZE")):
            elem = self.elem_bytes(mem)
            if (1 << p[key]) < 2 * elem:
                raise ConfigError(key, p[key], f"buffer holds fewer than 2 {mem} elements of {elem} B", self.name)
            if self.depth(mem) > 1 << 16:
                raise ConfigError(key, p[key], f"{self.depth(mem)} {mem} elements exceed the 16-bit sram_base field", self.name)
        isa.check_layout(self)  # the ISA layout is derived from this config; it checks the fit

    # --- construction -------------------------------------------------------------------
    @classmethod
    def from_preset(cls, name: str = DEFAULT_PRESET, **overrides) -> Config:
        """A preset's configuration, or a variant's (its base preset with the variant's
        parameters and their sources, ``presets.VARIANTS``), with ``overrides`` on top."""
        if name not in PRESETS and name not in VARIANTS:
            raise ConfigError("preset", name, f"unknown preset (known: {', '.join(PRESETS)}; variants: "
                                              f"{', '.join(VARIANTS)})")
        base, changes = VARIANTS.get(name, (name, {}))
        entries = {**PRESETS[base], **changes}
        params = {k: v for k, (v, _) in entries.items()}
        sources = {k: s for k, (_, s) in entries.items()}
        for key, value in overrides.items():
            params[key] = value
            sources[key] = "override"
        return cls(name=name, params=params, sources=sources)

    @classmethod
    def from_json_text(cls, text: str | bytes, source: str = "<json>") -> Config:
        try:
            data = json_loads(text, source)
        except VdlaError as err:  # malformed, nested too deeply, an integer of thousands of digits
            raise ConfigError("json", source, str(err).removeprefix(f"{source}: ")) from None
        if not isinstance(data, dict):
            raise ConfigError("json", source, "must be a JSON object of parameters")
        # Accepted forms: {"preset": P, KEY: value...}, or to_json()'s {"name": N, "params": {...}}.
        name = data.pop("name", None)
        if name is not None and not isinstance(name, str):
            raise ConfigError("name", name, "must be a string", source)
        base = data.pop("preset", name if name in PRESETS else DEFAULT_PRESET)
        if not isinstance(base, str) or base not in PRESETS:
            raise ConfigError("preset", base, f"unknown preset (known: {', '.join(PRESETS)})", source)
        data.pop("fingerprint", None)
        data.pop("sources", None)
        params = data.pop("params", None) or data
        if not isinstance(params, dict):
            raise ConfigError("params", params, "must be a JSON object of parameters", source)
        preset = cls.from_preset(base)
        merged, sources = dict(preset.params), dict(preset.sources)
        for key, value in params.items():
            if merged.get(key) != value:
                sources[key] = source
            merged[key] = value
        return cls(name=name or source, params=merged, sources=sources)

    # --- serialisation ------------------------------------------------------------------
    def stored_params(self) -> dict:
        """Every parameter but those of :data:`DEFAULTS` at their default: what the fingerprint
        hashes and :meth:`to_json` writes."""
        return {k: v for k, v in self.params.items() if k not in DEFAULTS or v != DEFAULTS[k][0]}

    def to_json(self) -> str:
        """The canonical JSON form: name and every parameter, but defaults at their value
        (:meth:`stored_params`; round-trips through from_json_text)."""
        return json.dumps({"name": self.name, "params": self.stored_params()}, sort_keys=True)

    def describe(self) -> dict:
        """Everything a user may want to see: parameters, sources and derived sizes."""
        return {
            "name": self.name,
            "fingerprint": self.fingerprint,
            "isa_version": ISA_VERSION,
            "params": dict(self.params),
            "sources": dict(self.sources),
            "derived": self.derived(),
        }

    def derived(self) -> dict:
        out = {"BATCH": self.batch, "BLOCK_IN": self.block_in, "BLOCK_OUT": self.block_out,
               "peak_gops": self.peak_ops_per_s / 1e9, "mem_bytes_per_s": self.mem_bytes_per_s,
               "coherent": self.coherent}
        for mem in MEM_TYPES:
            out[f"{mem}_elem_bytes"] = self.elem_bytes(mem)
            out[f"{mem}_depth"] = self.depth(mem)
            out[f"{mem}_index_bits"] = self.index_bits(mem)
        return out

    # --- derived sizes: the single place they are computed --------------------------------
    def __getattr__(self, key):
        # Parameters are instance attributes (set in __post_init__); this covers an object
        # whose __post_init__ has not run yet (copy, unpickling in progress).
        params = self.__dict__.get("params", {})
        if key in params:
            return params[key]
        raise AttributeError(key)

    @property
    def batch(self) -> int:
        return 1 << self.params["LOG_BATCH"]

    @property
    def block_in(self) -> int:
        return 1 << self.params["LOG_BLOCK"]

    @property
    def block_out(self) -> int:
        return 1 << self.params["LOG_BLOCK"]

    @property
    def inp_bits(self) -> int:
        return 1 << self.params["LOG_INP_WIDTH"]

    @property
    def wgt_bits(self) -> int:
        return 1 << self.params["LOG_WGT_WIDTH"]

    @property
    def acc_bits(self) -> int:
        return 1 << self.params["LOG_ACC_WIDTH"]

    def elem_shape(self, mem: str) -> tuple[int, ...]:
        """Shape of one SRAM element (one address) of memory type ``mem`` (uop: one word)."""
        return self._elem_shapes[mem]

    @functools.cached_property
    def _elem_shapes(self) -> dict[str, tuple[int, ...]]:
        return {"uop": (1,), "inp": (self.batch, self.block_in), "wgt": (self.block_out, self.block_in),
                "acc": (self.batch, self.block_out), "out": (self.batch, self.block_out)}

    def elem_dtype(self, mem: str) -> str:
        """numpy dtype of the scalars of one element of ``mem`` (little-endian)."""
        return {"uop": "<u4", "inp": "i1", "wgt": "i1", "acc": "<i4", "out": "i1"}[mem]

    def elem_bytes(self, mem: str) -> int:
        return self._elem_bytes[mem]

    @functools.cached_property
    def _elem_bytes(self) -> dict[str, int]:
        bits = {"uop": 32, "inp": self.inp_bits, "wgt": self.wgt_bits, "acc": self.acc_bits, "out": self.inp_bits}
        return {mem: math.prod(self.elem_shape(mem)) * b // 8 for mem, b in bits.items()}

    def depth(self, mem: str) -> int:
        """Elements the SRAM of ``mem`` holds; OUT mirrors ACC index for index."""
        return self._depths[mem]

    @functools.cached_property
    def _depths(self) -> dict[str, int]:
        keys = {"uop": "LOG_UOP_BUFF_SIZE", "inp": "LOG_INP_BUFF_SIZE", "wgt": "LOG_WGT_BUFF_SIZE",
                "acc": "LOG_ACC_BUFF_SIZE", "out": "LOG_ACC_BUFF_SIZE"}
        return {mem: (1 << self.params[key]) // self.elem_bytes("acc" if mem == "out" else mem)
                for mem, key in keys.items()}

    def index_bits(self, mem: str) -> int:
        """Bits of an SRAM index of ``mem`` (log2 of its depth)."""
        return max(1, (self.depth(mem) - 1).bit_length())

    @property
    def insn_bytes(self) -> int:
        return 16

    @property
    def clock_hz(self) -> float:
        return self.params["CLOCK_MHZ"] * 1e6

    @property
    def peak_ops_per_s(self) -> float:
        """Two ops (multiply and add) per MAC, BATCH x BLOCK_IN x BLOCK_OUT MACs per cycle."""
        return 2.0 * self.batch * self.block_in * self.block_out * self.clock_hz

    @property
    def mem_bytes_per_s(self) -> float:
        """The port's roof: one beat per cycle, capped by the shared DDR when that is lower."""
        per_cycle = self.params["MEM_BYTES_PER_BEAT"]
        cap = self.params["DDR_BYTES_PER_CYCLE_CAP"]
        return (min(per_cycle, cap) if cap > 0 else per_cycle) * self.clock_hz

    @property
    def mem_port(self) -> str:
        """"acp" or "hp": the PS port of the memory master (MEM_PORT)."""
        return self.params["MEM_PORT"]

    @property
    def coherent(self) -> bool:
        """True when the port is coherent with the CPU caches (ACP): the driver needs no flush or
        invalidate, and the master drives AxCACHE/AxUSER for coherent access."""
        return self.params["MEM_PORT"] in COHERENT_PORTS

    @functools.cached_property
    def fingerprint(self) -> str:
        """Readable id ``BATCHxBLOCK_iIwWaA_UOP_INP_WGT_ACC-hash``; the hash covers every parameter."""
        p = self.params
        digest = hashlib.sha256(f"isa{ISA_VERSION}:{json.dumps(self.stored_params(), sort_keys=True)}".encode()).hexdigest()
        return (f"{self.batch}x{self.block_in}_i{self.inp_bits}w{self.wgt_bits}a{self.acc_bits}_"
                f"{p['LOG_UOP_BUFF_SIZE']}_{p['LOG_INP_BUFF_SIZE']}_{p['LOG_WGT_BUFF_SIZE']}_"
                f"{p['LOG_ACC_BUFF_SIZE']}-{digest[:8]}")

    @property
    def fingerprint_hash(self) -> int:
        """The 32-bit hash part of the fingerprint, as the ID register holds it."""
        return int(self.fingerprint.rsplit("-", 1)[1], 16)

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        # identity first: the ISA and bus-model caches compare their key's configuration per call
        return other is self or (isinstance(other, Config) and self.params == other.params)


def with_port(config: Config, port: str) -> Config:
    """``config`` on another PS port: MEM_PORT and every parameter of that port's row of
    :data:`vdla_hw.presets.PORTS` (width, bursts, latencies, outstanding limits) replaced, with
    that row's sources. The same port returns ``config`` itself; the fingerprint changes otherwise."""
    from vdla_hw.presets import PORTS

    if port not in CHOICES["MEM_PORT"]:
        raise ConfigError("MEM_PORT", port, f"must be one of {', '.join(CHOICES['MEM_PORT'])}", config.name)
    if port == config.mem_port:
        return config
    params, sources = dict(config.params), dict(config.sources)
    for key, (value, source) in PORTS[port].items():
        params[key], sources[key] = value, source
    return Config(name=f"{config.name}@{port}", params=params, sources=sources)


def _rebuild(name: str, params: dict, sources: dict) -> Config:
    return Config(name=name, params=params, sources=sources)


def load_config(spec: str | Path | Config | None = None) -> Config:
    """A configuration from a preset or variant name, a JSON file path, a JSON text, or a Config
    (returned as is)."""
    if isinstance(spec, Config):
        return spec
    if spec is None:
        return Config.from_preset(DEFAULT_PRESET)
    text = str(spec)
    if text in PRESETS or text in VARIANTS:
        return Config.from_preset(text)
    if text.lstrip().startswith("{"):
        return Config.from_json_text(text)
    path = Path(text)
    if not path.exists():
        raise ConfigError("config", text, f"neither a preset ({', '.join(PRESETS)}) nor an existing JSON file")
    try:
        data = read_capped(path, "configuration file")
    except VdlaError as err:  # a device (/dev/zero), a folder, too large, unreadable
        raise ConfigError("config", text, str(err).removeprefix(f"{path}: ")) from None
    return Config.from_json_text(data, source=str(path))

"""The ``pynq`` backend: the accelerator on a PYNQ-Z1 through pynq 3.x.

Opening the device loads the overlay (``pynq.Overlay``: the ``.bit`` with its ``.hwh`` beside
it), checks the bitstream's manifest (``<bit>.json``, written by ``vdla hw bitstream``) against
the requested configuration, finds the control slave in the overlay's ``ip_dict`` at the address
the manifest names, maps it with ``pynq.MMIO`` and checks the ID registers. Buffers come from
``pynq.allocate`` (physically contiguous). Cache maintenance covers only the bytes moved:
``write`` flushes the range it wrote and ``read`` invalidates the range it reads, on a
non-coherent port (HP0); on a coherent one (ACP: ``config.coherent``, the SCU snoops the CPU's
caches, as VTA's PYNQ runtime relies on with ``kBufferCoherent``) the driver does neither.
``maintained`` counts the bytes flushed and invalidated. The register sequence is
:class:`driver.registers.RegisterDevice`'s.

Board-side code: Python 3.10, numpy 1.x, pynq 3.0.1 or 3.1.x (the images v3.0.1 and v3.1.0).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from driver.device import Buffer, DeviceError
from driver.registers import RegisterDevice, cache_coherent
from vdla_hw import regmap
from vdla_hw.config import ISA_VERSION, Config
from vdla_hw.errors import VdlaError

# The pynq package versions of the last PYNQ-Z1 images (v3.0.1 ships pynq 3.0.1; v3.1.0 ships 3.1.x).
SUPPORTED_PYNQ = ("3.0.1", "3.1.")
BITSTREAM_ENV = "VDLA_BITSTREAM"
DEFAULT_BITSTREAM_DIR = Path("/home/xilinx/vdla/bitstreams")
MANIFEST_FORMAT = "vdla-bitstream"
MANIFEST_KEYS = ("format", "fingerprint", "isa_version", "config", "clock_mhz", "ip_name", "control_base",
                 "control_span", "vivado")


def check_pynq_version(version: str) -> None:
    """The pynq package must be one the PYNQ-Z1 images v3.0.1/v3.1.0 ship."""
    if not any(version == v or (v.endswith(".") and version.startswith(v)) for v in SUPPORTED_PYNQ):
        raise DeviceError(f"pynq {version} is not supported: the PYNQ-Z1 runs the images v3.0.1 (pynq 3.0.1) "
                          "or v3.1.0 (pynq 3.1.x); flash one of those images (see docs/board.md)")


def default_bitstream(config: Config) -> Path:
    """``$VDLA_BITSTREAM``, else ``/home/xilinx/vdla/bitstreams/<fingerprint>/vdla.bit``."""
    if os.environ.get(BITSTREAM_ENV):
        return Path(os.environ[BITSTREAM_ENV])
    return DEFAULT_BITSTREAM_DIR / config.fingerprint / "vdla.bit"


def read_manifest(bitstream: Path) -> dict:
    """The manifest beside ``bitstream``, checked for its format and ISA version (clear errors otherwise)."""
    path = Path(bitstream).with_suffix(".json")
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError:
        raise DeviceError(f"{path}: no bitstream manifest beside {Path(bitstream).name}; copy the whole output "
                          "folder of the Vivado build (vdla.bit, vdla.hwh, vdla.json)") from None
    except (OSError, ValueError) as err:
        raise DeviceError(f"{path}: unreadable bitstream manifest ({err})") from None
    missing = [k for k in MANIFEST_KEYS if k not in manifest] if isinstance(manifest, dict) else list(MANIFEST_KEYS)
    if missing or manifest.get("format") != MANIFEST_FORMAT:
        raise DeviceError(f"{path}: not a vdla bitstream manifest (missing {', '.join(missing) or 'format'})")
    if manifest["isa_version"] != ISA_VERSION:
        raise DeviceError(f"{path}: bitstream implements ISA v{manifest['isa_version']}, the driver speaks "
                          f"v{ISA_VERSION}; rebuild the bitstream with this version of vdla")
    return manifest


def manifest_config(bitstream: Path) -> Config:
    """The configuration the manifest beside ``bitstream`` was built for (its ``config``; a
    ``fingerprint`` that disagrees with it is refused): what ``vdla board check`` checks the
    hardware against when no configuration is given."""
    from vdla_hw.config import load_config

    if not Path(bitstream).is_file():
        raise DeviceError(f"{bitstream}: no such bitstream (the .bit, with vdla.json and the .hwh beside it)")
    manifest = read_manifest(bitstream)
    try:
        config = load_config(json.dumps(manifest["config"]))
    except (VdlaError, TypeError, ValueError) as err:
        raise DeviceError(f"{Path(bitstream).with_suffix('.json')}: its configuration does not load ({err})") from None
    _check_fingerprint(bitstream, manifest, config)
    return config


def load_manifest(bitstream: Path, config: Config) -> dict:
    """The manifest beside ``bitstream``, checked against ``config`` (clear errors otherwise)."""
    return _check_fingerprint(bitstream, read_manifest(bitstream), config)


def _check_fingerprint(bitstream: Path, manifest: dict, config: Config) -> dict:
    """``manifest`` (read beside ``bitstream``) when it was built for ``config``; a DeviceError otherwise."""
    path = Path(bitstream).with_suffix(".json")
    if manifest["fingerprint"] != config.fingerprint:
        raise DeviceError(f"{path}: bitstream was built for configuration {manifest['fingerprint']}, not "
                          f"{config.fingerprint} ({config.name}); open the device with that configuration or "
                          f"build a bitstream for it (vdla hw bitstream --config {config.name})")
    return manifest


def _active_device(pynq):
    """pynq's active device; a DeviceError when pynq finds none (not on a board)."""
    try:
        return pynq.Device.active_device
    except (RuntimeError, IndexError) as err:
        raise DeviceError(f"pynq finds no device ({err}); the pynq backend runs on a PYNQ board") from None


class PynqDevice(RegisterDevice):
    """The accelerator in the programmable logic of a PYNQ board (or pynq's active device)."""

    target = "pynq"

    def __init__(self, config: Config | str | None = None, *, bitstream: str | Path | None = None,
                 device=None, download: bool = True, check_id: bool = True):
        """``check_id=False`` opens hardware whose ID registers disagree with the manifest
        (``vdla board check`` reports that itself, as its ``identify`` check)."""
        super().__init__(config)
        try:
            import pynq
        except ImportError:
            raise DeviceError("the pynq backend needs the pynq package (3.0.1 or 3.1.x, on the board's image; "
                              "pip install -r requirements/board.txt elsewhere)") from None
        check_pynq_version(pynq.__version__)
        self._pynq = pynq
        self.coherent = cache_coherent(self.config)
        self.maintained = {"flush": 0, "invalidate": 0}  # bytes, over the device's life
        self.bitstream = Path(bitstream) if bitstream else default_bitstream(self.config)
        if not self.bitstream.is_file():
            raise DeviceError(f"{self.bitstream}: no such bitstream; build it with `vdla hw bitstream --config "
                              f"{self.config.name}` and Vivado, copy the folder to the board, or pass bitstream=")
        self.manifest = load_manifest(self.bitstream, self.config)
        self.pynq_device = device if device is not None else _active_device(pynq)
        try:
            self.overlay = pynq.Overlay(str(self.bitstream), download=download, device=self.pynq_device)
        except (OSError, RuntimeError, ValueError, KeyError) as err:
            raise DeviceError(f"{self.bitstream}: pynq could not load the overlay ({err})") from None
        name = self.manifest["ip_name"]
        ip = self.overlay.ip_dict.get(name)
        if ip is None:
            raise DeviceError(f"{self.bitstream}: the overlay has no IP {name!r} "
                              f"(it has {', '.join(self.overlay.ip_dict) or 'none'}); wrong .hwh?")
        if int(ip["phys_addr"]) != int(self.manifest["control_base"]):
            raise DeviceError(f"{self.bitstream}: the .hwh puts {name} at {int(ip['phys_addr']):#x} but the "
                              f"manifest says {int(self.manifest['control_base']):#x}; rebuild both together")
        span = max(int(ip.get("addr_range", regmap.SPAN)), regmap.SPAN)
        self.mmio = pynq.MMIO(int(ip["phys_addr"]), span, device=self.pynq_device)
        isa, fingerprint = self.identify()
        if check_id and (isa != ISA_VERSION or fingerprint != self.config.fingerprint_hash):
            raise DeviceError(f"{self.bitstream}: the loaded hardware reports ISA v{isa} and configuration hash "
                              f"{fingerprint:08x}, but its manifest says {self.manifest['fingerprint']}; the .bit "
                              "and vdla.json do not belong together (rebuild or recopy the bitstream folder)")

    # --- registers ----------------------------------------------------------------------
    def _rd(self, name: str) -> int:
        return int(self.mmio.read(regmap.offset(name)))

    def _wr(self, name: str, value: int) -> None:
        self.mmio.write(regmap.offset(name), int(value) & 0xFFFFFFFF)

    # --- buffers ------------------------------------------------------------------------
    def _alloc(self, nbytes: int) -> Buffer:
        handle = self._pynq.allocate(shape=(nbytes,), dtype=np.uint8, target=self.pynq_device)
        return Buffer(nbytes, int(handle.physical_address), handle)

    def _write(self, buffer: Buffer, raw: np.ndarray, offset: int) -> None:
        view = buffer.handle[offset:offset + raw.size]  # a PynqBuffer view: flush() covers its range only
        view[:] = raw
        if not self.coherent:
            view.flush()
            self.maintained["flush"] += raw.size

    def _read(self, buffer: Buffer, offset: int, nbytes: int) -> np.ndarray:
        view = buffer.handle[offset:offset + nbytes]
        if not self.coherent:
            view.invalidate()
            self.maintained["invalidate"] += nbytes
        return np.array(view, dtype=np.uint8)

    def free(self, buffer: Buffer) -> None:
        buffer.handle.freebuffer()

"""``vdla sweep --synth``: one yosys synthesis per distinct configuration, as tasks of the sweep's
executor (:mod:`dse.executors`: Ray's, or the local one).

Results are kept in ``DIR/synth/<fingerprint>.json`` (checksummed entries of a
:class:`dse.cache.DiskCache`) with the key of the RTL sources they came from, so a re-run synthesises only what is new or what the RTL has changed under. Points that share a
configuration (other models, other software knobs) share its synthesis; a different clock is a
different configuration (the RTL's ID register holds the fingerprint, so its Verilog differs). A point's
row waits until its configuration's synthesis is done; then its resource columns hold the
synthesised numbers (``resource_basis`` says so) and the model's prediction moves to
``*_model`` columns, so every ``--synth`` sweep also measures the model's error on its own points.
A synthesis that fails leaves the resources empty with the reason in ``resource_basis``.
"""

from __future__ import annotations

from pathlib import Path

from dse.cache import DiskCache
from dse.clock import clock_estimate
from dse.metrics import RESOURCES
from dse.point import hardware_columns
from dse.synth import rtl_generator_key, synthesize


def synth_task(config_json: str) -> dict:
    from vdla_hw.config import Config

    try:
        return {"ok": True, **synthesize(Config.from_json_text(config_json, source="sweep point"))}
    except Exception as err:  # recorded in the rows of this configuration, not fatal to the sweep
        return {"ok": False, "error": " ".join(f"{type(err).__name__}: {err}".split())[:300]}


class SynthRuns:
    KIND = "synth"
    def __init__(self, executor, out_dir: Path, options, note=None):
        self.executor, self.options = executor, options
        self.stored = DiskCache(out_dir, note)  # DIR/synth/<fingerprint>.json
        self.task = executor.task(synth_task)
        self.pending: dict = {}          # ref -> fingerprint
        self.results: dict = {}          # fingerprint -> result
        self.held: dict = {}             # fingerprint -> [(item, row)]
        self.rtl_key = rtl_generator_key()

    @property
    def in_flight(self) -> int:
        return len(self.pending)

    def refs(self) -> list:
        return list(self.pending)

    def owns(self, ref) -> bool:
        return ref in self.pending

    def _stored(self, fingerprint: str) -> dict | None:
        result = self.stored.get(self.KIND, fingerprint)
        return result if result is not None and result.get("rtl_key") == self.rtl_key else None

    @staticmethod
    def key(config) -> str:
        return config.fingerprint

    def request(self, config) -> None:
        fp = self.key(config)
        if fp in self.results or fp in self.pending.values():
            return
        stored = self._stored(fp)
        if stored is not None:
            self.results[fp] = stored
            return
        self.pending[self.task(config.to_json())] = fp

    def complete(self, ref) -> list:
        fp = self.pending.pop(ref)
        try:
            result = self.executor.get(ref)
        except Exception as err:  # a lost worker: the rows keep no resources, with the reason
            result = {"ok": False, "error": f"{type(err).__name__}: {err}"[:300]}
        result["rtl_key"] = self.rtl_key
        if result["ok"]:
            self.stored.put(self.KIND, fp, result)
        self.results[fp] = result
        return [(item, self.merge(item, row)) for item, row in self.held.pop(fp, [])]

    def attach(self, item, row: dict) -> bool:
        """Merge the synthesis into ``row`` now (False) or hold the row until it is done (True)."""
        fp = self.key(item.config)
        if fp in self.results:
            row.update(self.merge(item, row))
            return False
        self.held.setdefault(fp, []).append((item, row))
        return True

    def merge(self, item, row: dict) -> dict:
        result = self.results[self.key(item.config)]
        row = dict(row)
        for r in RESOURCES:
            row[f"{r}_model"] = row.get(r)
        if result["ok"]:
            basis = f"yosys synthesis of RTL {result['rtl_key']} ({result.get('seconds', 0):.0f} s)"
            row.update(hardware_columns(item.config, result, basis, self.options.part,
                                        clock_basis="synthesis: static timing of this point's synthesised FPGA top "
                                                    "(vdla_hw.rtl.fmax)"))
        else:
            row.update(hardware_columns(item.config, None, f"synthesis failed: {result['error']}", self.options.part,
                                        clock=clock_estimate(item.config)))
        return row

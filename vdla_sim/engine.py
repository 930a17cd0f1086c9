"""The event loop: fetch, load, compute and store running concurrently under the timing
contract of ``vdla_hw.timing``, with one event per step of an instruction (never per cycle or
per uop).

Events are processed in cycle order; within a cycle every module event comes before the memory
arbitration of that cycle (phase 0, then phase 1), so a fixed-priority grant sees every request
made in its cycle. Cross-module effects (queue entries, tokens, freed slots) all take at least
QUEUE_LATENCY >= 1 cycle, so the order of module events inside one cycle does not matter.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right
from collections import Counter

from vdla_hw import isa, limits, timing
from vdla_hw.bundle import Bundle
from vdla_hw.errors import ProgramError
from vdla_hw.sram_state import SramState
from vdla_sim import cost
from vdla_sim.datapath import Datapath, Tally
from vdla_sim.errors import CycleLimitError, DeadlockError
from vdla_sim.memory import MemoryPort
from vdla_sim.prepared import EXEC_MODULES, QUEUE_NUMBER, prepare
from vdla_sim.races import RaceTracker

TOKEN_ENDS = isa.TOKEN_ENDS                     # token queue -> (producer, consumer)
PUSH_FLAG = {(m, q): f for (m, f), q in isa.FLAG_QUEUE.items() if f.startswith("push")}
QUEUES = isa.TOKEN_QUEUES                       # a token queue's number: its index here
FETCH_MASTER = timing.ARBITRATION_ORDER.index("fetch")  # memory-port master numbers (MemoryPort.post)


def check_work(bundle: Bundle, max_work: int | None = None, sram: SramState | None = None) -> int:
    """Refuse (LimitError) a program whose simulator work, priced from the GEMM plans it will
    run (vdla_sim/cost.py), passes ``max_work``; returns the work. ``sram``: the SRAM state at
    START (its uop SRAM decides the plans of GEMMs whose uops the program does not load)."""
    limit = limits.SIM_MAX_WORK if max_work is None else max_work
    prep = prepare(bundle)
    if prep.sim_units <= limit:  # within the bound at every GEMM's most expensive plan
        return prep.sim_units
    return cost.check(bundle, prep.insns, limit, None if sram is None else sram.srams.uop)


class _Module:
    """Run state and counters of one executing module."""

    __slots__ = ("name", "master", "cmd", "pushed", "popped", "state", "waiting_on", "current", "t_take",
                 "t_start", "t_req", "post", "busy", "stall_token", "stall_mem")

    def __init__(self, name: str, cmd: tuple[int, ...]):
        self.name = name
        self.master = timing.ARBITRATION_ORDER.index(name)  # its number at the memory port
        self.cmd = cmd                  # instruction indices routed to this module, in order
        self.pushed: list[int] = []     # cycle fetch pushed each entry
        self.popped: list[int] = []     # cycle the module took each entry
        self.state = "idle"             # idle | wait_cmd | wait_token | wait_start | wait_mem | busy | done
        self.waiting_on = -1            # the token queue (number) a wait_token module waits on
        self.current = -1
        self.t_take = self.t_start = self.t_req = 0
        self.post = 0
        self.busy = self.stall_token = self.stall_mem = 0


class Engine:
    def __init__(self, bundle: Bundle, *, max_cycles: int | None = None, race_check: bool = True,
                 max_work: int | None = None, data: bool = True, sram: SramState | None = None,
                 uninit: str = "off", allow_vta_hazards: bool = False):
        """``max_cycles`` (default ``limits.DEFAULT_MAX_CYCLES``) bounds the simulated time, each
        instruction refused before its work if it would pass it; ``max_work`` (default
        ``limits.SIM_MAX_WORK``) bounds the simulator's own work (vdla_hw/work.py), checked for
        the whole program here, before anything runs; ``data=False`` runs the timing alone
        (``datapath.Tally``: no image, no race check, no SRAM state). ``sram``: the SRAM state
        at START, updated in place (default: a fresh one, zeros); ``uninit``: the
        uninitialised-read check, "off", "warn" or "error" (vdla_hw/sram_state.py);
        ``allow_vta_hazards``: see :func:`vdla_sim.simulate`."""
        self.bundle = bundle
        self.config = c = bundle.config
        # decoded, checked and costed once per bundle (vdla_sim/prepared.py)
        self.prepared = prep = prepare(bundle)
        self.insns = insns = prep.insns   # fields and ranges, in program order
        self.costs = prep.costs
        check_work(bundle, max_work, sram)  # raises, naming the first instruction past the bound
        self.max_cycles = limits.DEFAULT_MAX_CYCLES if max_cycles is None else int(max_cycles)
        self.ql = c.QUEUE_LATENCY
        self.cmd_depth, self.fetch_step = c.CMD_QUEUE_DEPTH, c.FETCH_CYCLES_PER_INSN
        self.sram, self.uninit = sram, None
        if data:
            self.dram = bundle.dram.copy()
            self.races = RaceTracker(c, insns) if race_check else None
            if sram is not None or uninit != "off":
                self.sram = sram = SramState.fresh(c) if sram is None else sram
                self.uninit = sram.tracker(c, uninit)
            self.datapath: Datapath | Tally = Datapath(c, self.dram, self.races, prep.runs, prep.plans,
                                                       None if sram is None else sram.srams, allow_vta_hazards)
        else:
            if sram is not None or uninit != "off":
                raise ValueError("the timing-only mode holds no SRAM values: SRAM state and --uninit need data=True")
            self.dram, self.races, self.datapath = None, None, Tally(c)
        self.port = MemoryPort(c, self.dram)
        self.module_of = prep.module_of
        self.mods = {m: _Module(m, prep.cmd[m]) for m in EXEC_MODULES}
        self.mod_of = [self.mods[m] for m in self.module_of]
        self.mod_by_master = [None] * len(timing.ARBITRATION_ORDER)  # port master number -> module
        for mod in self.mods.values():
            self.mod_by_master[mod.master] = mod
        self.last = len(insns) - 1  # FINISH: decode_checked makes it the last and only one
        # per instruction, in the hot loop's terms: queue numbers it pops and pushes
        self.pops, self.pushes = prep.pops, prep.pushes
        self.consumer = [self.mods[TOKEN_ENDS[q][1]] for q in QUEUES]
        self.tok_push: dict[str, list[int]] = {q: [] for q in QUEUES}   # push cycles
        self.tok_pusher: dict[str, list[int]] = {q: [] for q in QUEUES}  # pushing instruction
        self.tok_pop: dict[str, list[int]] = {q: [] for q in QUEUES}
        self.q_push = [self.tok_push[q] for q in QUEUES]  # the same lists, by queue number
        self.q_pusher = [self.tok_pusher[q] for q in QUEUES]
        self.q_pop = [self.tok_pop[q] for q in QUEUES]
        self.retire: list[tuple[str, int, int] | None] = [None] * len(insns)
        self.finish_cycle: int | None = None
        # fetch
        self.chunk = timing.fetch_chunk(c)
        self.f_pos = self.f_end = 0
        self.f_state = "idle"
        self.f_block = 0
        self.f_wait_queue = ""
        self.f_busy = self.f_stall_mem = self.f_stall_queue = 0
        self.f_bytes = 0
        self.f_req = (0, 0, 0)  # (cycle, port cycles, bytes) of fetch's outstanding request
        self.f_spans: list[tuple[int, int, int, int]] = []  # (grant, end, first insn, count)
        self.heap: list = []
        self.seq = 0
        self.arb_scheduled: set[int] = set()
        self.now = 0

    # --- scheduling -------------------------------------------------------------------------
    # A heap entry: (cycle, phase, sequence number, action, argument); ``action(cycle, argument)``.
    def _at(self, t: int, action, arg=None) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (t, 0, self.seq, action, arg))

    def _arb_at(self, t: int) -> None:
        if t not in self.arb_scheduled:
            self.arb_scheduled.add(t)
            self.seq += 1
            heapq.heappush(self.heap, (t, 1, self.seq, self._arbitrate, None))

    def run(self) -> None:
        self._at(0, self._fetch_request)
        for m in EXEC_MODULES:
            self._at(0, self._ready, self.mods[m])
        heap, limit, pop = self.heap, self.max_cycles, heapq.heappop
        while heap:
            t, _, _, action, arg = pop(heap)
            if t > limit:
                raise CycleLimitError(limit, self._where(), cycle=self.now, modules=self.modules())
            self.now = t
            action(t, arg)
        unfinished = [m for m in self.mods.values() if m.state != "done"]
        if unfinished or self.f_state != "done":
            raise DeadlockError(self.now, self._blocked(), modules=self.modules())

    # --- fetch ------------------------------------------------------------------------------
    def _fetch_request(self, t: int, _=None) -> None:
        n = len(self.insns)
        if self.f_pos >= n:
            self.f_state = "done"
            return
        count = min(self.chunk, n - self.f_pos)
        offset = self.bundle.insn_offset + self.f_pos * self.config.insn_bytes
        cycles, beats = timing.fetch_cost(self.config, offset, count)
        self.f_end = self.f_pos + count
        self.f_state = "wait_mem"
        self.f_req = (t, cycles, count * self.config.insn_bytes)
        self.port.post(FETCH_MASTER, t, cycles, beats)
        self._arb_at(t)

    def _fetch_route(self, t: int, _=None) -> None:
        """Push instructions into their command queues, one per FETCH_CYCLES_PER_INSN, while the
        target queue has room. Runs ahead of the current cycle while room is certain (freed
        slots seen so far only grow)."""
        depth, step, ql, mod_of = self.cmd_depth, self.fetch_step, self.ql, self.mod_of
        pos, end = self.f_pos, self.f_end
        while pos < end:
            mod = mod_of[pos]
            popped = mod.popped
            freed = bisect_right(popped, t - ql)
            if len(mod.pushed) - freed >= depth:
                self.f_pos = pos
                if t > self.now:
                    self.f_state = "wait_time"
                    self._at(t, self._fetch_route)
                else:
                    self.f_state, self.f_block, self.f_wait_queue = "wait_queue", t, mod.name
                    if freed < len(popped):  # a slot already freed becomes visible later
                        self._at(popped[freed] + ql, self._fetch_wake_queue, mod.name)
                return
            mod.pushed.append(t)
            self.f_busy += step
            if mod.state == "wait_cmd":
                mod.state = "idle"
                self._at(t + ql, self._ready, mod)
            pos += 1
            t += step
        self.f_pos = pos
        self.f_state = "wait_time"
        self._at(t, self._fetch_request)

    def _fetch_wake_queue(self, t: int, name: str) -> None:
        if self.f_state == "wait_queue" and self.f_wait_queue == name:
            self.f_stall_queue += t - self.f_block
            self._fetch_route(t)

    # --- load / compute / store -------------------------------------------------------------
    def _ready(self, t: int, mod: _Module) -> None:
        """The module is free at ``t``: take its next instruction when fetch has queued it."""
        popped = mod.popped
        k = len(popped)
        if k >= len(mod.cmd):
            mod.state = "done"
            return
        if k >= len(mod.pushed):
            mod.state = "wait_cmd"
            return
        visible = mod.pushed[k] + self.ql
        if visible > t:
            mod.state = "idle"
            self._at(visible, self._ready, mod)
            return
        popped.append(t)
        if self.f_state == "wait_queue" and self.f_wait_queue == mod.name:
            self._at(t + self.ql, self._fetch_wake_queue, mod.name)
        mod.current = index = mod.cmd[k]
        mod.t_take = t
        if self.pops[index]:
            self._tokens(t, mod)
        else:  # nothing to pop: _tokens would start it now
            self._start(t, mod)

    def _tokens(self, t: int, mod: _Module) -> None:
        """Wait until every token the current instruction pops is visible, then start."""
        start = t
        for q in self.pops[mod.current]:
            pushed = self.q_push[q]
            k = len(self.q_pop[q])
            if k >= len(pushed):
                mod.state, mod.waiting_on = "wait_token", q
                return
            visible = pushed[k] + self.ql
            if visible > start:
                start = visible
        if start > t:
            mod.state = "wait_start"
            self._at(start, self._start, mod)
        else:
            self._start(t, mod)

    def _start(self, t: int, mod: _Module) -> None:
        index = mod.current
        pops = self.pops[index]
        if pops:
            pushers = []
            for q in pops:
                popped = self.q_pop[q]
                pushers.append(self.q_pusher[q][len(popped)])
                popped.append(t)
        else:
            pushers = ()
        mod.stall_token += t - mod.t_take
        mod.t_start = t
        if self.races is not None:
            self.races.begin(index, mod.name, pushers)
        pre, port, post, beats = self.costs[index]
        if t + pre + port + post > self.max_cycles:  # refuse before doing the instruction's work
            raise CycleLimitError(self.max_cycles, f"{self._describe(index)} would run from cycle {t} to "
                                  f"{t + pre + port + post} on {mod.name}", cycle=self.now, modules=self.modules())
        if self.uninit is not None:
            insn = self.insns[index]
            self.uninit.step(insn, index, self.datapath.uop_table[insn.uop_bgn:insn.uop_end]
                             if insn.kind in ("GEMM", "ALU") else None)
        self.datapath.execute(self.insns[index], index)
        if port:
            mod.state, mod.post, mod.t_req = "wait_mem", post, t + pre
            self.port.post(mod.master, t + pre, port, beats)
            self._arb_at(t + pre)
        else:
            mod.state = "busy"
            mod.busy += pre + post
            self._at(t + pre + post, self._end, mod)

    def _arbitrate(self, t: int, _=None) -> None:
        self.arb_scheduled.discard(t)
        port = self.port
        master = port.take(t)
        if master == FETCH_MASTER:
            cycle, cycles, nbytes = self.f_req
            self.f_stall_mem += t - cycle
            self.f_busy += cycles
            self.f_bytes += nbytes
            self.f_spans.append((t, port.free_at, self.f_pos, self.f_end - self.f_pos))
            self.f_state = "wait_data"
            self._at(port.free_at, self._fetch_route)
        elif master >= 0:
            mod = self.mod_by_master[master]
            mod.stall_mem += t - mod.t_req
            mod.busy += (mod.t_req - mod.t_start) + port.length[master] + mod.post
            mod.state = "busy"
            self._at(port.free_at + mod.post, self._end, mod)
        if port.count:
            nxt = port.next_decision()
            if nxt not in self.arb_scheduled:
                self._arb_at(nxt)

    def _end(self, t: int, mod: _Module) -> None:
        index = mod.current
        self.retire[index] = (mod.name, mod.t_start, t)
        pushes = self.pushes[index]
        if pushes:
            depth = self.config.TOKEN_QUEUE_DEPTH
            for q in pushes:
                pushed = self.q_push[q]
                held = len(pushed) - bisect_left(self.q_pop[q], t)
                if held + 1 > depth:
                    name = QUEUES[q]
                    raise ProgramError(index, self.insns[index].kind, PUSH_FLAG[(mod.name, name)],
                                       f"pushes a token into the full {name} queue already holding {depth} "
                                       f"tokens at cycle {t}: token_overflow", error_bit="token_overflow")
                pushed.append(t)
                self.q_pusher[q].append(index)
                consumer = self.consumer[q]
                if consumer.state == "wait_token" and consumer.waiting_on == q:
                    consumer.state = "wait_start"
                    self._at(t + self.ql, self._tokens, consumer)
        if index == self.last:
            self.finish_cycle = t
        self._ready(t, mod)

    # --- diagnostics ------------------------------------------------------------------------
    def modules(self) -> dict:
        """Each module's counters at this point of the run, named and ordered as the counter
        registers (``vdla_hw.regmap.MODULE_COUNTERS``): busy and stall cycles, and instructions
        fetched (fetch) or retired (load, compute, store)."""
        retired = Counter(entry[0] for entry in self.retire if entry is not None)
        out = {"fetch": {"busy": self.f_busy, "stall_token": 0, "stall_mem": self.f_stall_mem,
                         "stall_queue": self.f_stall_queue, "insns": self.f_bytes // self.config.insn_bytes}}
        for name, mod in self.mods.items():
            out[name] = {"busy": mod.busy, "stall_token": mod.stall_token, "stall_mem": mod.stall_mem,
                         "stall_queue": 0, "insns": retired[name]}
        return out

    def _describe(self, index: int) -> str:
        return f"instruction {index} ({self.insns[index].kind})"

    def _blocked(self) -> dict[str, str]:
        out = {}
        if self.f_state == "wait_queue":
            out["fetch"] = (f"{self._describe(self.f_pos)} waits for room in the full {self.f_wait_queue} "
                            "command queue")
        else:
            out["fetch"] = "done" if self.f_state == "done" else self.f_state
        for m in self.mods.values():
            if m.state == "wait_token":
                queue = QUEUES[m.waiting_on]
                producer = TOKEN_ENDS[queue][0]
                out[m.name] = (f"{self._describe(m.current)} waits for a token in {queue} "
                               f"(from {producer})")
            elif m.state == "wait_cmd":
                nxt = m.cmd[len(m.popped)]
                out[m.name] = f"waits for {self._describe(nxt)} in its command queue"
            else:
                out[m.name] = "done" if m.state == "done" else m.state
        return out

    def _where(self) -> str:
        parts = []
        for m in self.mods.values():
            if m.state != "done" and m.current >= 0:
                parts.append(f"{m.name} at {self._describe(m.current)}")
        return ", ".join(parts) or "no instruction running"

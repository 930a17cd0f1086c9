"""Run a sweep: every point an independent task, results stored as they complete.

:func:`run_sweep` connects to Ray (an embedded local instance by default, an existing cluster
with ``address``), puts each quantized model in the object store once, and keeps at most
``workers`` tasks in flight, fed by a *source* of points: the full grid (:class:`GridSource`)
or a multi-objective search (:class:`dse.search.SearchSource`). Tasks run with
``max_retries=0``: a task that raises or a worker that dies loses only its point, recorded as
``failed`` and tried again on the next run. With ``executor="local"`` the same loop runs the
tasks one at a time in this process instead, without Ray (:mod:`dse.executors`). Points already
in ``DIR/points.csv`` are not computed again (:mod:`dse.store`), provided their seal holds
(:mod:`dse.row_seal`).
Configurations the configuration itself rejects become ``invalid`` rows without a task. One
sweep at a time writes a directory (:mod:`dse.lock`).

When Ray itself goes (the raylet of the driver's node killed or crashed: the embedded Ray's only
node, or the local raylet of a cluster), no further point can run and Ray would end this process
from its own threads moments later: the sweep stops at the first such error
(:class:`RayDiedError`, one line, exit status 2) with every finished point kept in
``points.csv``, and the points that were in flight are not recorded, so re-running resumes.

Points that share the accelerator work (same configuration apart from the clock, same model
and virtual threads) are not run at the same time when another point can run instead, so the
second finds the first one's programs in the shared cache (:mod:`dse.cache`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socket
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from dse import parts as fpga
from dse.cache import code_key
from dse.executors import EXECUTORS, RayExecutor, local_session
from dse.items import GridSource, Item, Model
from dse.lock import sweep_lock
from dse.metrics import columns
from dse.point import PROBLEMS, point_task
from dse.private_ray import private_ray
from dse.progress import Progress
from dse.row_seal import sweep_key
from dse.sigint import held
from dse.space import Space
from dse.store import PointStore
from vdla_hw.errors import VdlaError
from vdla_hw.files import printable


@dataclass
class SweepOptions:
    address: str | None = None      # an existing Ray cluster; None: embedded local Ray
    workers: int | None = None      # tasks in flight (default: the CPUs Ray offers; 1 with executor "local")
    executor: str = "ray"           # "ray", or "local": one point at a time in this process (dse.executors)
    synth: bool = False             # synthesise every configuration with yosys (slow)
    energy_table: str | None = None
    part: str = fpga.DEFAULT_PART   # the part of the ``part_use`` objective
    progress: bool = True
    figures: bool = True
    stream: object = None


def check_options(options: SweepOptions) -> None:
    """A one-line error for options that do not go together (before any work: ``vdla sweep``
    calls it before the models are prepared)."""
    if options.executor not in EXECUTORS:
        raise VdlaError(f"--executor {options.executor!r}: expected one of {', '.join(EXECUTORS)}")
    if options.executor == "local":
        if options.address:
            raise VdlaError(f"--address {options.address} joins a Ray cluster: not with --executor local, which "
                            "runs every point in this process")
        if options.workers not in (None, 1):
            raise VdlaError(f"--workers {options.workers}: --executor local runs one point at a time in this "
                            "process; leave --executor out for points in parallel on Ray")


def qgraph_hash(q) -> str:
    """sha256 (16 hex) of a quantized graph's nodes, attributes, shapes and scales."""
    import numpy as np

    h = hashlib.sha256()
    h.update(json.dumps([q.name, q.input, list(q.outputs), {k: list(v) for k, v in q.shapes.items()}, q.fracs],
                        sort_keys=True).encode())
    for node in q.nodes:
        h.update(json.dumps([node.name, node.op, node.inputs, node.output]).encode())
        for key in sorted(node.attrs):
            value = node.attrs[key]
            if isinstance(value, np.ndarray):
                h.update(key.encode() + str(value.dtype).encode() + str(value.shape).encode() + value.tobytes())
            else:
                h.update(key.encode() + json.dumps(value, default=str).encode())
    return h.hexdigest()[:16]


LOOPBACK = ("127.", "localhost", "::1", "[::1]")
CONNECT_TIMEOUT_S = 10.0


def _loopback_only() -> None:
    """Keep Ray on the loopback interface: every server of an embedded instance (or of a client of
    a head on 127.0.0.1) binds 127.0.0.1 instead of the machine's network address. Ray 2.58 takes
    its node address from this switch (named for its single-machine platforms), read when a
    node starts; it is set before Ray is imported and, if Ray already was, on its constants."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    import ray._private.ray_constants as constants

    constants.ENABLE_RAY_CLUSTER = False


def check_reachable(address: str) -> None:
    """A one-line error instead of Ray's endless reconnecting when nothing listens at ``address``."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise VdlaError(f"--address {address!r}: expected HOST:PORT of a Ray head (ray start --head --port PORT)")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as err:
        raise VdlaError(f"--address {address}: no Ray head answers there ({err.strerror or err}); start one with "
                        "ray start --head, or leave --address out for an embedded local Ray") from None


def _check_token_mode() -> None:
    """Ray's driver reads ``RAY_AUTH_MODE`` once per process, when ``ray._raylet`` is first
    loaded: a process that used Ray before without token authentication (a sweep that joined an
    open cluster with ``--address``, in the same Python process) would start an embedded instance
    whose servers want the token its driver will not send (Ray: "Failed to start GCS"). Refused
    here in one line instead."""
    from ray._raylet import AuthenticationMode, get_authentication_mode

    if get_authentication_mode() != AuthenticationMode.TOKEN:
        raise VdlaError("this process used Ray before without token authentication, and Ray keeps that "
                        "setting for the process's life, so the sweep's embedded Ray cannot be made private: "
                        "run the sweep in a new process (or give RAY_AUTH_MODE=token and RAY_AUTH_TOKEN "
                        "before Ray is first used)")


def _init_ray(options: SweepOptions, temp_dir: str | None):
    # The driver's own Ray logging stays quiet; worker output is not forwarded (errors come back
    # as exceptions and are recorded in the points).
    kwargs = {"logging_level": logging.ERROR, "log_to_driver": False}
    if options.address:
        check_reachable(options.address)
        if options.address.startswith(LOOPBACK):
            _loopback_only()
        import ray

        try:
            ray.init(address=options.address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as err:
            raise VdlaError(f"--address {options.address}: cannot join the Ray cluster ({err})") from None
    else:
        _loopback_only()
        import ray

        _check_token_mode()
        # address="local": always a new instance of our own, never a cluster that happens to run here
        ray.init(address="local", num_cpus=options.workers or os.cpu_count(), include_dashboard=False,
                 _temp_dir=temp_dir, **kwargs)
    return ray


@contextlib.contextmanager
def ray_session(options: SweepOptions):
    """Ray for the block, shut down on every way out: an embedded instance private to this user
    (:mod:`dse.private_ray`), or the cluster at ``options.address``. A Ctrl-C during Ray's start
    or its shutdown takes effect once that step is over (:func:`dse.sigint.held`), so Ray is
    never left half-started or half-stopped: its processes are gone and its driver is
    disconnected before the interrupt leaves (exit status 130). A second Ctrl-C during the start
    interrupts it at once (a start that hangs)."""
    with (contextlib.nullcontext() if options.address else private_ray()) as temp_dir:
        try:
            with held(second_breaks=True):
                ray = _init_ray(options, temp_dir)
            yield ray
        finally:
            with held():
                ray = sys.modules.get("ray")  # imported by _init_ray unless it refused before
                if ray is not None:
                    ray.shutdown(wait_for_processes=True)  # before the private folder is removed


@contextlib.contextmanager
def executor_session(options: SweepOptions):
    """The executor of ``options`` for the block (:mod:`dse.executors`): Ray's for the
    :func:`ray_session`, or the local one."""
    if options.executor == "local":
        with local_session() as executor:
            yield executor
    else:
        with ray_session(options) as ray:
            yield RayExecutor(ray, options.workers, options.address)


class RayDiedError(VdlaError):
    """Ray's raylet (the process that runs this node's workers) died: the sweep cannot go on."""

    def __init__(self, out_dir: Path, kept: int, cause: Exception):
        self.out_dir, self.kept, self.cause = out_dir, kept, cause
        super().__init__(f"Ray's raylet died ({type(cause).__name__}), so no worker can run: the sweep stopped; "
                         f"{out_dir / 'points.csv'} keeps the {kept} points written so far, and re-running the "
                         "same command resumes from there")


def _failure(err: Exception) -> str:
    """One line saying why a task failed (a Ray error wraps the worker's exception)."""
    cause = getattr(err, "cause", None)
    text = f"{type(cause).__name__}: {cause}" if cause is not None else f"{type(err).__name__}: {err}"
    return " ".join(text.split())[:500]


def run_sweep(space: Space, out_dir: str | Path, models: list[Model], options: SweepOptions = SweepOptions(),
              source=None) -> dict:
    """Evaluate ``space`` for ``models`` into ``out_dir``; returns the summary (also summary.json)."""
    fpga.check_part(options.part)
    check_options(options)
    out_dir = Path(out_dir)
    with sweep_lock(out_dir):
        return _run_locked(space, out_dir, models, options, source)


def _run_locked(space: Space, out_dir: Path, models: list[Model], options: SweepOptions, source) -> dict:
    from dse.report import finish, resource_state

    dims = [d.name for d in space.dimensions]
    cols = columns(dims, fpga.part_names(), options.synth)
    store = PointStore(out_dir, cols, code_key(), sweep_key())
    if source is None:
        if space.search.method == "grid":
            source = GridSource(space, models)
        else:
            from dse.search import SearchSource

            source = SearchSource(space, models, store)
    progress = Progress(source.total, options.stream, options.progress)
    progress.counts["resumed"] = source.resumed
    if store.untrusted:
        progress.problem(untrusted_note(store))
    start = time.perf_counter()
    resources = resource_state(out_dir / "cache", progress.problem)
    if resources.get("stale"):
        progress.note(f"sweep: {resources['basis']}")
    # Ray's driver prints worker deaths and other cluster events on stdout; they belong with the
    # progress on stderr (stdout carries only the summary, e.g. --json).
    with contextlib.redirect_stdout(sys.stderr), executor_session(options) as executor:
        _drive(executor, source, store, progress, models, out_dir, options, resources["basis"])
    return finish(space, out_dir, models, options, store, progress, time.perf_counter() - start, resources)


def untrusted_note(store: PointStore) -> str:
    """One line on the rows of points.csv whose seal failed (dropped by the store)."""
    keys = ", ".join(printable(k, 24) for k in store.untrusted[:3]) + (", ..." if len(store.untrusted) > 3 else "")
    return (f"{store.path}: rows whose seal fails (edited, or written by another user or machine): "
            f"{len(store.untrusted)} (key {keys}); not trusted, so dropped, and computed again where this sweep "
            "has them")


def _drive(executor, source, store: PointStore, progress: Progress, models: list[Model], out_dir: Path,
           options: SweepOptions, resource_basis: str) -> None:
    """Feed points from ``source`` to the executor, at most its ``capacity`` in flight, and record
    each result."""
    from dse.synth_runs import SynthRuns

    capacity = executor.capacity
    refs = {m.hash: executor.put(m.q) for m in models}
    refs_int8 = {m.hash: executor.put(m.q_int8_logits) if m.q_int8_logits is not None else refs[m.hash]
                 for m in models}
    task = executor.task(point_task)
    synth = SynthRuns(executor, out_dir, options, progress.problem) if options.synth else None
    pending: dict = {}
    while True:
        busy = {item.cycle_key for item in pending.values()}
        while len(pending) + (synth.in_flight if synth else 0) < capacity:
            item = source.next(busy)
            if item is None:
                break
            done = store.done(item.key)
            if done is not None:
                progress.add("resumed")
                source.tell(item, done)
            elif item.config is None:
                _record(store, progress, source, item, item.row)
            else:
                graphs = refs_int8 if item.point.knob.get("fc_on_vdla") else refs
                ref = task(graphs[item.model.hash], item.config.to_json(), item.point.knob,
                           str(out_dir / "cache"), options.energy_table, options.part, resource_basis)
                pending[ref] = item
                busy.add(item.cycle_key)
                if synth:
                    synth.request(item.config)
        waiting = list(pending) + (synth.refs() if synth else [])
        if not waiting:
            break  # a source gives nothing only when it is exhausted or waits on results
        ready = executor.wait(waiting, timeout=1.0)
        for ref in ready:
            if synth and synth.owns(ref):
                for item, row in synth.complete(ref):
                    _record(store, progress, source, item, row)
                continue
            item = pending.pop(ref)
            try:
                row = {**item.row, **executor.get(ref)}
            except Exception as err:  # a task that raised or a worker that died: this point only
                if executor.died(err):  # ... unless Ray itself is gone
                    raise RayDiedError(out_dir, len(store.rows), err) from None
                row = {**item.row, "status": "failed", "error": _failure(err)}
            for problem in row.pop(PROBLEMS, None) or ():  # untrusted cache entries the worker found
                progress.problem(problem)
            if synth and row["status"] == "ok":
                held = synth.attach(item, row)
                if held:
                    continue
            _record(store, progress, source, item, row)
        progress.show()
    progress.show(final=True)


def _record(store: PointStore, progress: Progress, source, item: Item, row: dict) -> None:
    store.add(row)
    progress.add(row["status"])
    source.tell(item, row)


"""The design space of a sweep, read from a SPACE.json file, and the points it expands into.

A space names a base configuration, the parameters to vary (configuration parameters of
``vdla_hw.config.PARAMETERS`` and the software knobs of :data:`KNOBS`), the models and the
search method::

    {
      "base": "osdi18",                          preset name, or {"preset": P, KEY: value, ...}
      "models": ["resnet18"],                    optional (vdla sweep --models overrides it)
      "resolution": 224,                         input size of the built-in models
      "parameters": {
        "LOG_BLOCK": [3, 4, 5],                  a list of values, or a range:
        "LOG_WGT_BUFF_SIZE": {"low": 15, "high": 18},               integers low..high
        "CLOCK_MHZ": {"low": 100, "high": 250, "step": 50},         step needed by the grid for floats
        "vthreads": [1, 2, "search"],
        "add_on_vdla": [false, true]
      },
      "search": {"method": "grid"}               or {"method": "nsga2", "trials": 200, "seed": 0,
                                                     "objectives": ["latency_s", "lut"]}
    }

Every error names the file and the key. A point that the configuration rejects (a field that
overflows, a buffer too small) is not an error of the space: it becomes an *invalid point*
carrying the configuration's own message (:func:`point_config`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass
from pathlib import Path

from vdla_hw.config import PARAMETERS, Config
from vdla_hw.errors import ConfigError, VdlaError
from vdla_hw.files import json_loads, read_capped
from vdla_hw.presets import PRESETS

# Software knobs: name -> (allowed values, meaning). ``vthreads`` "search" lets the compiler's
# schedule search pick 1 or 2 virtual threads per layer (what ``vdla run`` does by default).
KNOBS: dict[str, tuple[tuple, str]] = {
    "vthreads": (("search", 1, 2, 3, 4), "virtual threads per layer ('search': the schedule search picks)"),
    "stem_on_vdla": ((False, True), "run the 3-channel stem on VDLA (channels padded to a block)"),
    "add_on_vdla": ((False, True), "run residual adds on the ALU"),
    "fc_on_vdla": ((False, True), "run the classifier as a GEMM"),
}
KNOB_DEFAULTS = {"vthreads": "search", "stem_on_vdla": False, "add_on_vdla": False, "fc_on_vdla": False}
METHODS = ("grid", "nsga2")
MAX_GRID = 100_000


class SpaceError(VdlaError):
    """A SPACE.json file is unreadable or malformed."""

    def __init__(self, source: str, key: str, why: str):
        self.source, self.key, self.why = source, key, why
        super().__init__(f"{source}: {key}: {why}")


@dataclass(frozen=True)
class Dimension:
    """One varied parameter: explicit ``values``, or a ``low``..``high`` range (``step`` optional)."""

    name: str
    values: tuple = ()
    low: float | None = None
    high: float | None = None
    step: float | None = None

    @property
    def is_int(self) -> bool:
        return self.name in PARAMETERS and PARAMETERS[self.name][0] is int

    def grid_values(self, source: str) -> tuple:
        if self.values:
            return self.values
        step = self.step if self.step is not None else (1 if self.is_int else None)
        if step is None:
            raise SpaceError(source, f"parameters.{self.name}", "a float range needs a 'step' for the grid "
                             "(or use the nsga2 search, which samples it)")
        count = int(math.floor((self.high - self.low) / step + 1e-9)) + 1
        values = [self.low + i * step for i in range(count)]
        return tuple(int(v) if self.is_int else round(v, 9) for v in values)


@dataclass(frozen=True)
class Search:
    method: str = "grid"
    trials: int = 0
    seed: int = 0
    population: int = 0
    objectives: tuple = ()       # what the Pareto front (and the search) optimise


@dataclass(frozen=True)
class Space:
    base: dict                    # {"preset": P, KEY: value, ...}
    dimensions: tuple[Dimension, ...]
    search: Search
    models: tuple[str, ...] = ("resnet18",)
    resolution: int = 224
    source: str = "<space>"

    def grid(self) -> list[dict]:
        """Every combination of the dimensions' values (the grid method), in a fixed order."""
        names = [d.name for d in self.dimensions]
        values = [d.grid_values(self.source) for d in self.dimensions]
        size = math.prod(len(v) for v in values)
        if size > MAX_GRID:
            raise SpaceError(self.source, "parameters", f"the grid has {size} points (more than {MAX_GRID}); "
                             "narrow it or use the nsga2 search with a trial budget")
        return [dict(zip(names, combo)) for combo in itertools.product(*values)]


def _check_value(source: str, name: str, value):
    if name in KNOBS:
        allowed = KNOBS[name][0]
        if value not in allowed or (isinstance(value, bool) != isinstance(allowed[-1], bool)):
            raise SpaceError(source, f"parameters.{name}", f"{value!r} is not one of {list(allowed)} "
                             f"({KNOBS[name][1]})")
        return value
    kind = PARAMETERS[name][0]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and value != int(value)):
        raise SpaceError(source, f"parameters.{name}", f"{value!r} is not {'an integer' if kind is int else 'a number'}")
    return kind(value)


def _dimension(source: str, name: str, spec) -> Dimension:
    if name not in PARAMETERS and name not in KNOBS:
        raise SpaceError(source, f"parameters.{name}", f"unknown parameter (configuration parameters: "
                         f"{', '.join(PARAMETERS)}; software knobs: {', '.join(KNOBS)})")
    if isinstance(spec, list):
        if not spec:
            raise SpaceError(source, f"parameters.{name}", "an empty list of values")
        values = tuple(dict.fromkeys(_check_value(source, name, v) for v in spec))
        return Dimension(name, values=values)
    if isinstance(spec, dict):
        if name in KNOBS:
            raise SpaceError(source, f"parameters.{name}", "a software knob takes a list of values, not a range")
        unknown = set(spec) - {"low", "high", "step"}
        if unknown or "low" not in spec or "high" not in spec:
            raise SpaceError(source, f"parameters.{name}", "a range is {\"low\": L, \"high\": H} with an optional \"step\"")
        low, high = _check_value(source, name, spec["low"]), _check_value(source, name, spec["high"])
        step = spec.get("step")
        if low > high:
            raise SpaceError(source, f"parameters.{name}", f"low {low} is above high {high}")
        if step is not None and (isinstance(step, bool) or not isinstance(step, (int, float)) or step <= 0):
            raise SpaceError(source, f"parameters.{name}.step", f"{step!r} is not a positive number")
        return Dimension(name, low=low, high=high, step=step)
    raise SpaceError(source, f"parameters.{name}", "give a list of values or a {\"low\", \"high\"} range")


def _search(source: str, spec) -> Search:
    from dse.metrics import DEFAULT_OBJECTIVES, OBJECTIVES

    if spec is None:
        return Search(objectives=DEFAULT_OBJECTIVES)
    if not isinstance(spec, dict) or spec.get("method") not in METHODS:
        raise SpaceError(source, "search.method", f"must be one of {', '.join(METHODS)}")
    unknown = set(spec) - {"method", "trials", "seed", "population", "objectives"}
    if unknown:
        raise SpaceError(source, "search", f"unknown keys {sorted(unknown)} (method, trials, seed, population, objectives)")
    objectives = spec.get("objectives", list(DEFAULT_OBJECTIVES))
    if (not isinstance(objectives, list) or len(objectives) < 2 or len(set(objectives)) != len(objectives)
            or not all(o in OBJECTIVES for o in objectives)):
        raise SpaceError(source, "search.objectives", f"{objectives!r}: give at least two different of "
                         f"{', '.join(OBJECTIVES)}")
    if spec["method"] == "grid":
        return Search(objectives=tuple(objectives))
    trials = spec.get("trials")
    if isinstance(trials, bool) or not isinstance(trials, int) or trials < 1:
        raise SpaceError(source, "search.trials", f"{trials!r}: nsga2 needs a positive trial budget")
    seed, population = spec.get("seed", 0), spec.get("population", 0)
    for key, value in (("seed", seed), ("population", population)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SpaceError(source, f"search.{key}", f"{value!r} is not a non-negative integer")
    return Search("nsga2", trials, seed, population, tuple(objectives))


def _base(source: str, spec) -> dict:
    if isinstance(spec, str):
        spec = {"preset": spec}
    if not isinstance(spec, dict):
        raise SpaceError(source, "base", "a preset name or an object {\"preset\": P, KEY: value, ...}")
    base = dict(spec)
    preset = base.setdefault("preset", "osdi18")
    if preset not in PRESETS:
        raise SpaceError(source, "base.preset", f"unknown preset {preset!r} (known: {', '.join(PRESETS)})")
    for key, value in base.items():
        if key != "preset" and key not in PARAMETERS:
            raise SpaceError(source, f"base.{key}", f"unknown configuration parameter (known: {', '.join(PARAMETERS)})")
    try:
        Config.from_preset(preset, **{k: v for k, v in base.items() if k != "preset"})
    except ConfigError as err:
        raise SpaceError(source, "base", str(err)) from None
    return base


def parse_space(data: dict, source: str = "<space>") -> Space:
    """A :class:`Space` from the parsed JSON of a SPACE file."""
    if not isinstance(data, dict):
        raise SpaceError(source, "(top level)", "must be a JSON object")
    unknown = set(data) - {"base", "models", "resolution", "parameters", "search"}
    if unknown:
        raise SpaceError(source, "(top level)", f"unknown keys {sorted(unknown)} "
                         "(base, models, resolution, parameters, search)")
    params = data.get("parameters")
    if not isinstance(params, dict) or not params:
        raise SpaceError(source, "parameters", "a non-empty object of parameter -> values or range")
    dims = tuple(_dimension(source, name, spec) for name, spec in params.items())
    models = data.get("models", ["resnet18"])
    if not isinstance(models, list) or not models or not all(isinstance(m, str) for m in models):
        raise SpaceError(source, "models", "a non-empty list of model names or ONNX files")
    resolution = data.get("resolution", 224)
    if isinstance(resolution, bool) or not isinstance(resolution, int) or resolution < 1:
        raise SpaceError(source, "resolution", f"{resolution!r} is not a positive integer")
    space = Space(_base(source, data.get("base", "osdi18")), dims, _search(source, data.get("search")),
                  tuple(models), resolution, source)
    if space.search.method == "grid":
        space.grid()  # the grid must be finite and bounded
    return space


def load_space(path: str | Path) -> Space:
    path = Path(path)
    try:  # a bounded regular file (not /dev/zero)
        text = read_capped(path, "sweep space")
    except VdlaError as err:
        raise SpaceError(str(path), "(file)", f"cannot read ({str(err).removeprefix(f'{path}: ')})") from None
    try:  # JSON of bounded depth and digits
        data = json_loads(text, str(path))
    except VdlaError as err:
        raise SpaceError(str(path), "(file)", str(err).removeprefix(f"{path}: ")) from None
    return parse_space(data, str(path))


@dataclass(frozen=True)
class Point:
    """One point of the space: configuration overrides of the base, software knobs, a model."""

    params: tuple          # ((KEY, value), ...) sorted: the varied configuration parameters
    knobs: tuple           # ((knob, value), ...) sorted: every knob, defaults filled in
    model: str

    @classmethod
    def of(cls, assignment: dict, model: str) -> Point:
        params = tuple(sorted((k, v) for k, v in assignment.items() if k in PARAMETERS))
        knobs = dict(KNOB_DEFAULTS)
        knobs.update({k: v for k, v in assignment.items() if k in KNOBS})
        return cls(params, tuple(sorted(knobs.items())), model)

    @property
    def knob(self) -> dict:
        return dict(self.knobs)

    def assignment(self) -> dict:
        return {**dict(self.params), **{k: v for k, v in self.knobs}}


def knob_values(space: Space, knob: str) -> set:
    """The values knob ``knob`` takes in ``space``: its dimension's, else its default."""
    for d in space.dimensions:
        if d.name == knob:
            return set(d.values)
    return {KNOB_DEFAULTS[knob]}


def point_config(base: dict, point: Point) -> Config:
    """The point's configuration; raises the configuration's own ConfigError when invalid."""
    overrides = {k: v for k, v in base.items() if k != "preset"}
    overrides.update(dict(point.params))
    config = Config.from_preset(base["preset"], **overrides)
    return config


def point_key(fingerprint: str, knobs: tuple, model_hash: str) -> str:
    """The resumption key: configuration fingerprint, software knobs and model hash."""
    text = json.dumps([fingerprint, list(map(list, knobs)), model_hash])
    return hashlib.sha256(text.encode()).hexdigest()[:16]

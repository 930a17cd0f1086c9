"""The work of a sweep: the models it sweeps (:class:`Model`), a point of one model on its way
through the sweep (:class:`Item`, made by :func:`make_item`: its key and the identity part of
its row) and the source of the full grid's items (:class:`GridSource`; the multi-objective
search's is :class:`dse.search.SearchSource`). :mod:`dse.runner` runs them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from dse.cache import digest
from dse.evaluate import cycle_config
from dse.space import Point, Space, point_config, point_key
from vdla_hw.errors import ConfigError


@dataclass
class Model:
    """A quantized network to sweep, with the hash that keys its points."""

    name: str
    q: object
    hash: str
    q_int8_logits: object = None  # the same with int8 logits: for points with the classifier on VDLA


@dataclass
class Item:
    """A point on its way through the sweep."""

    point: Point
    model: Model
    key: str
    row: dict
    config: object = None
    cycle_key: str = ""
    tag: object = None              # the source's own handle (an optuna trial)


def make_item(space: Space, point: Point, model: Model) -> Item:
    """The point's key and the identity part of its row; an invalid configuration's row is complete."""
    row = {"model": model.name, "model_hash": model.hash, **point.assignment()}
    try:
        config = point_config(space.base, point)
    except ConfigError as err:
        key = point_key("invalid-" + digest(space.base, point.params), point.knobs, model.hash)
        row.update(key=key, status="invalid", error=str(err), fingerprint=None)
        return Item(point, model, key, row)
    key = point_key(config.fingerprint, point.knobs, model.hash)
    row.update(key=key, fingerprint=config.fingerprint, config_json=json.dumps(config.stored_params(), sort_keys=True))
    cycle = (cycle_config(config).fingerprint, model.hash, point.knob["vthreads"])
    return Item(point, model, key, row, config, json.dumps(cycle))


class GridSource:
    """Every point of the grid, for every model: first one point of each distinct cycle
    configuration (those that compile and simulate, the long ones), then the others (which reuse
    their programs, a tenth of the time each: they fill the workers' ends evenly), each group in
    grid order."""

    def __init__(self, space: Space, models: list[Model]):
        items = [make_item(space, Point.of(a, m.name), m) for m in models for a in space.grid()]
        seen: set[str] = set()
        first = [item for item in items if item.cycle_key not in seen and not seen.add(item.cycle_key)]
        chosen = {id(item) for item in first}
        self.queue = first + [item for item in items if id(item) not in chosen]
        self.total = len(self.queue)
        self.resumed = 0  # points the source already accounted for (a search seeded from the store)

    def next(self, busy: set[str]) -> Item | None:
        if not self.queue:
            return None
        for i, item in enumerate(self.queue[:64]):
            if item.cycle_key not in busy:
                return self.queue.pop(i)
        return self.queue.pop(0)

    def tell(self, item: Item, row: dict) -> None:
        pass

    def finished(self) -> bool:
        return not self.queue

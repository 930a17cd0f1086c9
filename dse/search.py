"""Multi-objective search for spaces too large to enumerate: Optuna's NSGA-II sampler, driven
with ask/tell so trials run as Ray tasks like grid points.

One study per model, each with the space's trial budget (``search.trials``), minimising (or
maximising, see :data:`dse.metrics.OBJECTIVES`) the space's ``objectives``. Lists become
categorical distributions, integer ranges integer ones, float ranges float ones (stepped when
a step is given). Points already in the sweep directory are told to the study first (they
count against the budget), so a re-run continues the search instead of starting over. An
invalid or failed point, or one without a value for every objective (e.g. resources of a
configuration the RTL does not implement), is told as a failed trial: NSGA-II ranks it below
every feasible one.
"""

from __future__ import annotations

import math

from dse.items import make_item
from dse.metrics import OBJECTIVES

ASK_LIMIT = 5
from dse.space import Point, Space


def distributions(space: Space) -> dict:
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    out = {}
    for d in space.dimensions:
        if d.values:
            out[d.name] = CategoricalDistribution(list(d.values))
        elif d.is_int:
            out[d.name] = IntDistribution(int(d.low), int(d.high), step=int(d.step or 1))
        else:
            out[d.name] = FloatDistribution(float(d.low), float(d.high), step=d.step)
    return out


def _inside(dim, value) -> bool:
    """Whether a stored row's ``value`` lies in the search's distribution of ``dim``."""
    if value is None:
        return False
    if dim.values:
        return value in dim.values
    if not dim.low <= value <= dim.high:
        return False
    step = dim.step or (1 if dim.is_int else None)
    return step is None or abs((value - dim.low) / step - round((value - dim.low) / step)) < 1e-9


def objective_values(row: dict, objectives) -> list[float] | None:
    values = []
    for name in objectives:
        v = row.get(name)
        if row.get("status") != "ok" or not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
            return None
        values.append(float(v))
    return values


class SearchSource:
    """Points asked of one NSGA-II study per model, within the trial budget."""

    def __init__(self, space: Space, models, store):
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.space, self.models, self.store = space, list(models), store
        self.objectives = space.search.objectives
        self.dists = distributions(space)
        self.budget = space.search.trials
        self.total = self.budget * len(self.models)
        directions = ["minimize" if OBJECTIVES[o] > 0 else "maximize" for o in self.objectives]
        self.studies = {}
        for m in self.models:
            sampler = optuna.samplers.NSGAIISampler(population_size=space.search.population or 20,
                                                    seed=space.search.seed)
            self.studies[m.hash] = optuna.create_study(directions=directions, sampler=sampler)
        self._seed_from_store()
        self.resumed = sum(len(s.trials) for s in self.studies.values())
        self.counted = {m.hash: len(self.studies[m.hash].trials) for m in self.models}
        self.asks = dict(self.counted)
        self.waiting: dict[str, list] = {}   # key of a point in flight -> other trials that asked for it
        self.pending = 0

    def _seed_from_store(self) -> None:
        import optuna

        dims = [d.name for d in self.space.dimensions]
        for m in self.models:
            study = self.studies[m.hash]
            for row in self.store.rows.values():
                if row.get("model_hash") != m.hash or row.get("status") not in ("ok", "invalid"):
                    continue
                if len(study.trials) >= self.budget:
                    break
                params = {d: row.get(d) for d in dims}
                if not all(_inside(self.space.dimensions[i], params[d]) for i, d in enumerate(dims)):
                    continue
                values = objective_values(row, self.objectives)
                state = optuna.trial.TrialState.COMPLETE if values else optuna.trial.TrialState.FAIL
                study.add_trial(optuna.trial.create_trial(params=params, distributions=self.dists, values=values,
                                                          state=state))

    def next(self, busy: set[str]):
        """The next trial's point. A point already in the directory is told to the study at once,
        one being evaluated is told when it completes; neither is counted (NSGA-II may propose a
        point twice); asking stops after
        :data:`ASK_LIMIT` x the budget, so a space smaller than the budget still ends."""
        for m in self.models:
            study = self.studies[m.hash]
            while self.counted[m.hash] < self.budget and self.asks[m.hash] < ASK_LIMIT * self.budget:
                trial = study.ask(self.dists)
                self.asks[m.hash] += 1
                item = make_item(self.space, Point.of(dict(trial.params), m.name), m)
                done = self.store.done(item.key)
                if done is not None:
                    self._tell(study, trial, done)
                    continue
                if item.key in self.waiting:  # the same point is being evaluated: told with it
                    self.waiting[item.key].append(trial)
                    continue
                self.counted[m.hash] += 1
                self.pending += 1
                self.waiting[item.key] = []
                item.tag = (m.hash, trial)
                return item
        return None

    def _tell(self, study, trial, row: dict) -> None:
        import optuna

        values = objective_values(row, self.objectives)
        if values is None:
            study.tell(trial, state=optuna.trial.TrialState.FAIL)
        else:
            study.tell(trial, values)

    def tell(self, item, row: dict) -> None:
        if item.tag is None:
            return
        model_hash, trial = item.tag
        self.pending -= 1
        for t in [trial, *self.waiting.pop(item.key, [])]:
            self._tell(self.studies[model_hash], t, row)

    def finished(self) -> bool:
        return not self.pending and all(self.counted[m.hash] >= self.budget or
                                        self.asks[m.hash] >= ASK_LIMIT * self.budget for m in self.models)

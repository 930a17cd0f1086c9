"""Design-space exploration: sweeps of accelerator configurations x models, on Ray or in one process.

A sweep (``vdla sweep SPACE.json -o DIR``) expands a space of configuration parameters and
software knobs into points (:mod:`dse.space`), evaluates each point as an independent task, on
Ray or in the sweep's own process (:mod:`dse.executors`) (:mod:`dse.evaluate`: whole-network
latency from the simulator and the executor's CPU model, activity counts, energy from a
per-access table, resources from a model fitted to yosys runs), stores them resumably (:mod:`dse.store`) and draws the Pareto fronts (:mod:`dse.pareto`,
:mod:`dse.figures`). :func:`dse.runner.run_sweep` is the entry point.
"""

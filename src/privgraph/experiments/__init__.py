"""The experiment pipeline (one trial loop for every method and task), results store, summaries and plots;
grids, sweeps on Ray and the report (:mod:`~privgraph.experiments.grid`, :mod:`~privgraph.experiments.sweep`,
:mod:`~privgraph.experiments.report`)."""

from privgraph.experiments.grid import Grid
from privgraph.experiments.pipeline import Experiment, ExperimentResult, ExperimentSpec, config_hash, run_experiment
from privgraph.experiments.store import DEFAULT_DB, ResultsStore, TrialRecord
from privgraph.experiments.summary import mean_ci, summarize
from privgraph.experiments.sweep import SweepSummary

__all__ = [
    "DEFAULT_DB",
    "Experiment",
    "ExperimentResult",
    "ExperimentSpec",
    "Grid",
    "ResultsStore",
    "SweepSummary",
    "TrialRecord",
    "config_hash",
    "mean_ci",
    "run_experiment",
    "summarize",
]

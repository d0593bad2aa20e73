"""The experiment pipeline (one trial loop for every method and task), results store, summaries and plots."""

from privgraph.experiments.pipeline import Experiment, ExperimentResult, ExperimentSpec, run_experiment
from privgraph.experiments.store import DEFAULT_DB, ResultsStore, TrialRecord
from privgraph.experiments.summary import mean_ci, summarize

__all__ = [
    "DEFAULT_DB",
    "Experiment",
    "ExperimentResult",
    "ExperimentSpec",
    "ResultsStore",
    "TrialRecord",
    "mean_ci",
    "run_experiment",
    "summarize",
]

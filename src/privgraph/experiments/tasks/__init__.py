"""The evaluation tasks of the experiment pipeline: each gives its data, its split, its
release and its evaluation; :mod:`privgraph.experiments.pipeline` runs the one trial loop.

=============== ============================ ============================================
task            methods                      metrics (headline first)
=============== ============================ ============================================
``nc``          node-classification methods  ``accuracy`` (test), on the method's model
                on a ``Data``                (GCN/SAGE/GAT/MLP, LPGNN's KProp)
``attribute``   embedding methods (PPCVGAE,  ``utility_accuracy``/``utility_f1`` (node
                VGAE, DP-GCN)                classification on the embedding) and
                                             ``attack_accuracy``/``attack_f1`` (attribute
                                             inference on the private nodes), PPCVGAE §6
``hetero-nc``   HeteDP's features, RGCN,     ``micro_f1``, ``macro_f1`` on the dataset's
                HGT, metapath2vec            target type (HeteDP §V)
``lp``          HeteDP, RGCN, HGT,           ``roc_auc`` on the dataset's target relation
                metapath2vec
=============== ============================ ============================================

A task's ``release`` is one privacy-spending act (its randomness from its own
stream, :meth:`EvaluationTask.source`); ``evaluate`` is post-processing of it
(training the task's model, scoring).  ``release_search`` names the release
parameters that ``--tune`` may choose on validation (each candidate is a new
release, and the pipeline states the cost).  The randomness streams are
those of the former per-system runners, so seeded results are unchanged.

One module per task (:mod:`.node_classification`, :mod:`.attribute`, :mod:`.hetero_nc`,
:mod:`.link_prediction`; :mod:`.hetero` what the last two share); :mod:`.base` the common ground
and the registry, which the task modules fill when this package imports them (in this order).
"""

from privgraph.experiments.tasks.base import (
    TASK_ALIASES,
    TASK_CLASSES,
    Evaluation,
    EvaluationTask,
    Released,
    register_task,
    task_for,
)

# isort: off
# importing a task module registers its task: TASK_CLASSES keeps this order (nc, attribute, hetero-nc, lp)
from privgraph.experiments.tasks.node_classification import NodeClassification
from privgraph.experiments.tasks.attribute import AttributeInference
from privgraph.experiments.tasks.hetero import HeteroTraining
from privgraph.experiments.tasks.hetero_nc import HeteroNodeClassification
from privgraph.experiments.tasks.link_prediction import SHARE_GRID, LinkPrediction

# isort: on

__all__ = [
    "AttributeInference",
    "EvaluationTask",
    "Evaluation",
    "HeteroNodeClassification",
    "HeteroTraining",
    "LinkPrediction",
    "NodeClassification",
    "Released",
    "SHARE_GRID",
    "TASK_ALIASES",
    "TASK_CLASSES",
    "register_task",
    "task_for",
]

"""Trainers: node classification, DP-SGD and DP-SGD link prediction on heterogeneous graphs."""

from privgraph.train.dpsgd import DPSGDConfig, DPSGDResult, clipped_noisy_gradient, ghost_clipped_noisy_gradient
from privgraph.train.link_prediction import LinkInputs, link_scores, split_auc, train_link_model_dp
from privgraph.train.node_classification import TrainResult, accuracy, train_node_classifier

__all__ = [
    "DPSGDConfig",
    "DPSGDResult",
    "LinkInputs",
    "TrainResult",
    "accuracy",
    "clipped_noisy_gradient",
    "ghost_clipped_noisy_gradient",
    "link_scores",
    "split_auc",
    "train_link_model_dp",
    "train_node_classifier",
]

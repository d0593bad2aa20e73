"""Trainers."""

from privgraph.train.node_classification import TrainResult, accuracy, train_node_classifier

__all__ = ["TrainResult", "accuracy", "train_node_classifier"]

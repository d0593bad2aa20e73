"""train_node_classifier's model selection: best validation accuracy (ours) or least validation loss
(the Blink authors' protocol)."""

import pytest
import torch

from privgraph.data import sbm_graph, stratified_split
from privgraph.nn.models import NodeClassifier
from privgraph.train import train_node_classifier


def _train(selection):
    data = stratified_split(
        sbm_graph(num_nodes=300, num_classes=3, num_features=8, avg_degree=5.0, homophily=0.7, seed=1), seed=1
    )
    torch.manual_seed(0)
    net = NodeClassifier("gcn", data.num_features, 16, 3, dropout=0.0)
    losses = []

    class Spy(torch.nn.Module):  # records the validation loss of every epoch's evaluation
        def __init__(self):
            super().__init__()
            self.net = net

        def forward(self, x, edge_index):
            out = self.net(x, edge_index)
            if not self.training:
                losses.append(float(torch.nn.functional.cross_entropy(out[data.val_mask], data.y[data.val_mask])))
            return out

    result = train_node_classifier(
        Spy(),
        data.x,
        data.edge_index,
        data.y,
        data.y,
        data.train_mask,
        data.val_mask,
        data.test_mask,
        lr=0.1,
        weight_decay=0.0,
        epochs=60,
        patience=None,
        selection=selection,
    )
    return result, losses[:-1]  # the last evaluation is the selected state's test pass


def test_loss_selection_keeps_the_epoch_of_least_validation_loss():
    result, losses = _train("loss")
    assert result.epochs_run == 60 and len(losses) == 60
    assert result.best_epoch == min(range(60), key=losses.__getitem__) + 1


def test_accuracy_selection_is_the_default_and_bad_values_are_refused():
    result, losses = _train("accuracy")
    assert 1 <= result.best_epoch <= 60
    with pytest.raises(ValueError, match="selection"):
        _train("auc")

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


def test_row_wise_validation_on_the_validation_rows_gives_the_same_training():
    """A model that reads no graph (an MLP): validating on the validation rows alone (``row_wise``, dense or
    sparse CSR input) selects the same epoch with the same scores and weights as validating on every row."""
    from privgraph.nn.gap import GAPEncoder, sparse_input

    data = stratified_split(
        sbm_graph(num_nodes=300, num_classes=3, num_features=40, avg_degree=5.0, homophily=0.7, seed=1), seed=1
    )
    x = (data.x > 1.5).float()
    no_graph = torch.empty(2, 0, dtype=torch.long)
    for inputs in (x, sparse_input(x, max_density=1.0)):
        results = []
        for row_wise in (False, True):
            torch.manual_seed(0)
            net = GAPEncoder(40, 3, 16, 2)
            res = train_node_classifier(
                net, inputs, no_graph, data.y, data.y, data.train_mask, data.val_mask, data.test_mask,
                lr=0.2, weight_decay=0.0, epochs=40, patience=None, row_wise=row_wise,
            )  # fmt: skip
            results.append(((res.best_epoch, res.val_accuracy, res.test_accuracy), net.state_dict()))
        (scores, state), (row_scores, row_state) = results
        assert scores == row_scores and all(torch.equal(state[k], row_state[k]) for k in state)
        assert 1 < scores[0] < 40  # the selection is not trivially the first or last epoch

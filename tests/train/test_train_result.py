import torch
from torch import nn

from privgraph.train import TrainResult


def test_repr_shows_scores_not_tensors():
    res = TrainResult(0.8, 0.75, 0.9, 12, 40, 1.5, torch.arange(1000), nn.Linear(3, 2))
    text = repr(res)
    assert "test_accuracy=0.7500" in text and "best_epoch=12" in text and "<1000 classes>" in text
    assert "<Linear>" in text and "tensor(" not in text and len(text) < 300

"""The shared attack metrics against hand computations."""

import numpy as np
import pytest

from privgraph.attacks import attack_metrics, top_k, tpr_at_fpr

SCORES = [0.9, 0.8, 0.7, 0.6, 0.55, 0.4, 0.3, 0.2]
TRUTH = [1, 1, 0, 1, 0, 0, 1, 0]


def test_metrics_match_a_hand_computation():
    predicted = top_k(SCORES, 4)
    assert predicted.tolist() == [1, 1, 1, 1, 0, 0, 0, 0]
    m = attack_metrics(SCORES, TRUTH, predicted, k=3)
    # positive/negative pairs ranked correctly: 4 + 4 + 3 + 1 of 16
    assert m["attack_auc"] == pytest.approx(12 / 16)
    assert m["attack_accuracy"] == pytest.approx(6 / 8)
    # TPR 3/4 − FPR 1/4, equal to Duddu et al.'s 2·(Acc − 0.5) on this balanced set
    assert m["attack_advantage"] == pytest.approx(0.5) == pytest.approx(2 * (m["attack_accuracy"] - 0.5))
    # no threshold with 0 < FPR ≤ 1 %: the best with FPR 0 keeps 0.9 and 0.8 → TPR 2/4
    assert m["attack_tpr_at_1fpr"] == m["attack_tpr_at_01fpr"] == pytest.approx(0.5)
    # top 3 = scores 0.9, 0.8, 0.7 → two links of three, two of the four links found
    assert m["attack_precision"] == pytest.approx(2 / 3)
    assert m["attack_recall"] == pytest.approx(2 / 4)


def test_ties_count_half_and_low_fpr_on_a_large_set():
    assert attack_metrics([1.0, 1.0, 0.0], [1, 0, 0], [1, 0, 0])["attack_auc"] == pytest.approx(0.75)
    # 1000 negatives: FPR 1 % allows 10 of them above the threshold
    neg = np.arange(1000) / 1000.0  # 0 … 0.999
    pos = np.array([0.9995, 0.995, 0.9905, 0.5])
    s = np.concatenate([pos, neg])
    t = np.concatenate([np.ones(4), np.zeros(1000)])
    assert tpr_at_fpr(s, t, 0.001) == pytest.approx(1 / 4)  # 0.9995 beats every negative; 0.995 admits 5
    assert tpr_at_fpr(s, t, 0.01) == pytest.approx(3 / 4)  # 0.9905 admits 9 negatives (0.991 … 0.999): 0.9 %
    # the advantage on an imbalanced set is TPR − FPR, not 2·(Acc − 0.5)
    predicted = (s > 0.98).astype(int)  # three links, 19 negatives
    m = attack_metrics(s, t, predicted)
    fpr = (neg > 0.98).mean()
    assert m["attack_advantage"] == pytest.approx(3 / 4 - fpr)


@pytest.mark.parametrize(
    "scores,truth,message",
    [
        ([0.1, 0.2], [1, 1], "single class"),
        ([0.1, 0.2, 0.3], [1, 0], "differ in length"),
        ([0.1, float("nan")], [1, 0], "NaN"),
        ([0.1, 0.2], [2, 0], "0/1"),
    ],
)
def test_bad_input(scores, truth, message):
    with pytest.raises(ValueError, match=message):
        attack_metrics(scores, truth, [0] * len(truth))


def test_top_k_bounds():
    with pytest.raises(ValueError, match="k must lie"):
        top_k([0.1, 0.2], 3)

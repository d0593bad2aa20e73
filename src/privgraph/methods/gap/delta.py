"""GAP's default δ: the authors' rule, 10^-(number of digits of a count), on a count the release may depend
on without noise."""

from __future__ import annotations

from torch_geometric.data import Data

AUTO_DELTA_MAX = 0.1  # auto_delta's largest value (a count below 10)


def auto_delta(count: int) -> float:
    """The authors' δ = 10^-(number of digits of ``count``) (< 1/count)."""
    return 10.0 ** -len(str(max(int(count), 1)))


def auto_delta_count(data: Data, node_level: bool) -> int:
    """The count the default δ is below the inverse of, taken from what the release may depend on without
    noise: the training nodes under node-level DP (a count treated as public, as DP-SGD's sampling rate
    q = B/N needs it; the split itself is withheld); under edge-level DP the directed pairs n(n-1) of the
    public node set, an upper bound on the directed edge count.  The authors' EDP rule, 10^-(digits of
    |E|), reads |E|: private under edge-level DP, and δ (printed in every report) changes between
    neighbouring graphs at a power of ten, an un-noised statistic of the edges."""
    if node_level:
        return int(data.train_mask.sum())
    n = int(data.num_nodes)
    return n * (n - 1)

import warnings

import pytest
import torch

warnings.filterwarnings("ignore", category=UserWarning)
# Test workloads are tiny: one thread avoids OpenMP oversubscription, which
# slows small graphs down by an order of magnitude when the cores are busy.
torch.set_num_threads(1)


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(1234)

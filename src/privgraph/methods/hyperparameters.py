"""The training hyperparameters every node-classification method's ``fit`` reads, and the search space of
``--tune`` (re-exported by :mod:`privgraph.methods.base`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any


class Settings:
    """Mixin of the frozen settings dataclasses (training hyperparameters): ``update`` with unknown
    names refused, ``to_dict``."""

    def update(self, **changes: Any) -> Any:
        known = {f.name for f in fields(self)}  # type: ignore[arg-type]
        unknown = set(changes) - known
        if unknown:
            raise ValueError(f"unknown hyperparameters {sorted(unknown)}; known: {sorted(known)}")
        return replace(self, **changes)  # type: ignore[type-var]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload]


@dataclass(frozen=True)
class Hyperparameters(Settings):
    """Training and method hyperparameters (defaults used without ``--tune``)."""

    lr: float = 0.01
    weight_decay: float = 5e-4
    dropout: float = 0.5
    hidden: int = 16
    epochs: int = 300
    patience: int = 50
    # which epoch's state is kept: "accuracy" (best validation accuracy, ties: lower loss) or "loss"
    # (least validation loss: the Blink authors' protocol, Blink_GNN src/blink/run_blink.py)
    selection: str = "accuracy"
    kprop_steps: int = 4  # LPGNN feature propagation K
    label_steps: int = 2  # label denoising steps K_y (0: no denoising, forward correction instead)


# The search space of --tune (LPGNN paper's grid for lr/wd/dropout; the K set of Sajadmanesh's talk
# "Privacy-Preserving Deep Learning over Graphs" (2020)).
SEARCH_SPACE: dict[str, list[Any]] = {
    "lr": [0.01, 0.001],
    "weight_decay": [0.0, 1e-4, 1e-3, 1e-2],
    "dropout": [0.0, 0.25, 0.5, 0.75],
    "kprop_steps": [1, 2, 4, 8, 16],
    "label_steps": [0, 1, 2, 4, 8, 16],
}

"""PPCVGAE, the VGAE and DP-GCN as registered methods: embeddings that hide a sensitive attribute.

The user's ``Data`` carries ``x``, ``edge_index``, the binary sensitive
attribute ``sens`` and ``private_mask`` (whose attribute is protected; the
others' is public, PPCVGAE §6.2).  ``privatize`` trains the autoencoder
inside the release (the weights are trained on s and held fixed: the
guarantee covers the release given the weights, as the paper's) and releases
the encoder mean, with calibrated Gaussian noise when ε is given
(:func:`~privgraph.methods.ppcvgae.embedding.release_embedding`).  The release
holds ``z`` and the public fields (labels, split, ``private_mask``); never
``sens``, ``x`` or the graph.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from torch_geometric.data import Data

from privgraph.accounting import PrivacyReport, TrustModel, Unit
from privgraph.mechanisms import RandomSource
from privgraph.mechanisms.randomness import integers
from privgraph.methods.base import (
    SPLIT_FIELDS,
    Method,
    MethodParams,
    Task,
    gaussian_multiplier_event,
    param,
    register_method,
)
from privgraph.methods.ppcvgae.dpgcn import disentangle
from privgraph.methods.ppcvgae.embedding import (
    EmbeddingConfig,
    EmbeddingRelease,
    build_autoencoder,
    check_sensitive,
    release_embedding,
    standardize,
    train_embedding,
    unprotected_attribute,
)
from privgraph.methods.ppcvgae.privacy import (
    CALIBRATIONS,
    CASE_MODELS,
    check_candidate_epsilon,
    flip_candidate,
)
from privgraph.methods.request_view import RequestView
from privgraph.progress import ProgressHook
from privgraph.release import PUBLIC, WITHHELD, PrivateRelease, input_fields


@dataclass(frozen=True)
class AutoencoderParams(MethodParams):
    """The autoencoder's settings (:class:`~privgraph.methods.ppcvgae.embedding.EmbeddingConfig`)."""

    latent: int = param(16, "embedding dimension", bound=">= 1")
    hidden: int = param(32, "hidden width of the encoders", bound=">= 1")
    epochs: int = param(300, "full-batch Adam epochs", bound=">= 1")
    lr: float = param(0.01, "learning rate", bound="> 0")

    def config(self, **extra: Any) -> EmbeddingConfig:
        return EmbeddingConfig(latent=self.latent, hidden=self.hidden, epochs=self.epochs, lr=self.lr, **extra)

    def validate(self) -> None:
        super().validate()  # the declared choices and bounds
        self.config()


@dataclass(frozen=True)
class PPCVGAEParams(AutoencoderParams):
    """PPCVGAE's settings: the threat-model case (§4.1 / §4.2), the penalty of §5.2, the KL weight of the
    ELBO (eq. 3/4), and δ and the Gaussian calibration of PPCVGAE+DP (§5.1)."""

    case: str = param(
        "a",
        "threat model: a — the adversary knows A (CVGAE of §4.1), b — it does not (§4.2)",
        choices=tuple(CASE_MODELS),
    )
    penalty: float = param(10.0, "weight λ of the privacy penalty Δν/N (§5.2)", bound="in [0, inf)")
    kl_weight: float = param(1.0, "weight of the KL term (1: the ELBO of eq. 3/4)", bound="in [0, inf)")
    encoder_penalty: float = param(
        0.0, "weight λ_μ of Δμ²/N on the encoder mean (ours; lowers the noise)", bound="in [0, inf)"
    )
    delta: float = param(1e-4, "δ of the Gaussian release (with ε)", bound="in (0, 1)")
    calibration: str = param(
        "analytic",
        "Gaussian calibration: analytic (Balle & Wang) or classical (eq. 6, ε < 1); "
        "paper: §5.2's max(γ(Δν) − 1, 0), to reproduce the paper only — NOT DP (ε = ∞)",
        choices=CALIBRATIONS,
    )

    def config(self, **extra: Any) -> EmbeddingConfig:
        return super().config(kl_weight=self.kl_weight, penalty=self.penalty, encoder_penalty=self.encoder_penalty)


def _training_seed(rng: RandomSource) -> int:
    """The autoencoder's initialisation seed, drawn from the release's source (training is not noise)."""
    return int(integers(2**31, (1,), rng)[0])


class _EmbeddingMethod(Method):
    """Shared release of the embedding methods (module docstring): the embedding ``z`` and the public
    fields; the sensitive attribute, the features and the graph are withheld.  Subclasses implement
    :meth:`train` and :meth:`release_trained`."""

    trust_models = (TrustModel.CENTRAL,)

    unit = Unit.SENSITIVE_ATTRIBUTE
    task = Task.EMBEDDING
    private_fields = ("sens",)
    public_fields = (*SPLIT_FIELDS, "private_mask")
    shares = ("trained",)  # a model trained once per trial (the attribute task's; Shared)

    def train(self, data: Data, seed: int, progress: ProgressHook | None = None) -> Any:
        """Train the embedding model on ``data`` (initialisation from ``seed``); what
        :meth:`release_trained` releases from.  Training is not noise: the guarantee (if any)
        covers the release given the trained model."""
        raise NotImplementedError

    def release_trained(
        self, trained: Any, data: Data, epsilon: float | None, rng: RandomSource | None
    ) -> EmbeddingRelease:
        """The embedding ``z`` of a trained model with its guarantee and details (noise from ``rng``)."""
        raise NotImplementedError

    def embed(
        self,
        data: Data,
        epsilon: float | None,
        rng: RandomSource,
        progress: ProgressHook | None = None,
        trained: Any = None,
    ) -> EmbeddingRelease:
        """Train (seed drawn from ``rng``) and release once; with ``trained`` (what :meth:`train`
        returned on ``data``: the experiment pipeline trains once per trial and releases at each ε)
        release from it."""
        self.check_release_epsilon(epsilon)
        if trained is None:
            trained = self.train(data, _training_seed(rng), progress)
        return self.release_trained(trained, data, epsilon, rng)

    def check_release_epsilon(self, epsilon: float | None) -> None:
        """Refuse a bad ε before any training (methods without noise take none)."""
        if epsilon is not None:
            raise ValueError(f"{self.name} releases without noise: it takes no epsilon")

    def privatize(self, data: Any, request: RequestView, rng: RandomSource) -> PrivateRelease:
        """A :class:`~privgraph.release.PrivateRelease` holding ``z`` and the public fields, ``sens``
        withheld; the request's shared ``trained``: a model :meth:`train` fitted on ``data`` (:meth:`embed`)."""
        epsilon, progress, trained = request.epsilon, request.progress, request.shared.trained
        if not isinstance(data, Data):
            raise TypeError(f"{self.name} takes a torch_geometric.data.Data, got {type(data).__name__}")
        check_sensitive(data)
        release = self.embed(data, epsilon, rng, progress, trained)
        out = Data(z=release.z, num_nodes=data.num_nodes)
        fields = {name: WITHHELD for name in input_fields(data)}
        fields["sens"] = WITHHELD + " (the protected attribute)"
        for name in self.public_fields:
            if name in data:
                out[name] = data[name]
                fields[name] = PUBLIC
        fields["z"] = (
            "privatized: " if release.guarantee.is_private else "released without a guarantee: "
        ) + release.guarantee.describe()
        return PrivateRelease(
            self.name, self.params.to_dict(), epsilon, out, PrivacyReport([release.guarantee]), fields, release.details
        )


@register_method
class PPCVGAE(_EmbeddingMethod):
    """The CVGAE of the case with the Δν penalty; with ε, PPCVGAE+DP's Gaussian release of the
    encoder mean, (ε, δ)-DP with respect to the candidates {s, s'} (s' flips every private node).

    Case a is the CVGAE of §4.1, case b that of §4.2; the penalty is §5.2's Δν, the DP release §5.1
    (Definition 2; noise calibrated on the encoder mean, see :mod:`~privgraph.methods.ppcvgae.embedding`)
    with the candidates of §6.2.  Privacy unit: the private nodes' sensitive attribute, central model (the
    data owner trains and releases); not standard DP, and none at all without ε (stated in the release)."""

    name = "ppcvgae"
    description = "PPCVGAE: conditional VGAE embeddings hiding a sensitive attribute (+ Gaussian DP w.r.t. candidates)"
    Params = PPCVGAEParams
    delta_param = "delta"

    def spend_event(self, unit: str, epsilon: float, delta: float, data: Any = None) -> dict[str, Any] | None:
        """PPCVGAE+DP's one Gaussian release of the embeddings (z = σ/Δμ of its calibration; not 'paper')."""
        if unit != Unit.SENSITIVE_ATTRIBUTE or self.params.calibration == "paper":
            return None
        return gaussian_multiplier_event(epsilon, delta, self.params.calibration)

    private = True
    epsilon_optional = True  # without ε: the penalised embedding, no formal guarantee (stated)
    # --tune chooses these on the attribute task's two-sided validation objective (utility on the validation
    # split − the attack's advantage on held-out private nodes); the paper states no values.  Each
    # combination trains and releases a candidate; a grid's search_space may replace the values.
    release_search = {"penalty": [10.0, 1000.0], "latent": [16, 64], "epochs": [100, 300], "kl_weight": [1.0, 10.0]}

    def train(self, data, seed, progress=None):
        """The CVGAE of the case trained with the Δν penalty (§5.2) against the flip candidate s'."""
        p = self.params
        check_sensitive(data)
        model = build_autoencoder(p.case, data.x.shape[1], p.config(), seed)
        candidate = flip_candidate(data.sens, data.private_mask)
        trace = train_embedding(model, data, candidate, p.config(), seed, progress)
        return model, candidate, trace[-1]

    def check_release_epsilon(self, epsilon):
        if epsilon is not None:
            check_candidate_epsilon(epsilon, self.params.calibration)

    def release_trained(self, trained, data, epsilon, rng):
        """The encoder mean, plus calibrated Gaussian noise when ``epsilon`` is given (§5.1)."""
        p = self.params
        model, candidate, last = trained
        self.check_release_epsilon(epsilon)
        release = release_embedding(
            model, data, candidate, None if epsilon is None else (epsilon, p.delta), rng, calibration=p.calibration
        )
        release.details["trace_last"] = last
        return release


@register_method
class VGAE(_EmbeddingMethod):
    """The unsanitised VGAE (Kipf & Welling) embedding, the PPCVGAE paper's baseline (§6).

    Releases the encoder mean; no guarantee for the sensitive attribute (stated as unprotected)."""

    name = "vgae"
    description = "VGAE (Kipf & Welling) embedding, unsanitised: the PPCVGAE paper's baseline"
    Params = AutoencoderParams

    def train(self, data, seed, progress=None):
        """The VGAE trained on the reconstruction ELBO."""
        model = build_autoencoder("vgae", data.x.shape[1], self.params.config(), seed)
        train_embedding(model, data, None, self.params.config(), seed, progress)
        return model

    def release_trained(self, trained, data, epsilon, rng):
        """The VGAE's encoder mean, released without a guarantee."""
        return release_embedding(trained, data, None, None, method="vgae")


@dataclass(frozen=True)
class DPGCNParams(MethodParams):
    """DP-GCN's disentangler training: Adam epochs and learning rate."""

    epochs: int = param(300, "Adam epochs of the disentangler", bound=">= 1")
    lr: float = param(0.01, "learning rate", bound="> 0")


@register_method
class DPGCN(_EmbeddingMethod):
    """DP-GCN (Hu et al. 2022), the PPCVGAE paper's comparison (§6): the features' non-sensitive
    representation by orthogonal disentangling of the sensitive subspace.

    Releases that representation; no formal guarantee for the sensitive attribute (stated as unprotected)."""

    name = "dpgcn"
    description = "DP-GCN (Hu et al.): orthogonal disentangling of the sensitive subspace, no formal guarantee"
    Params = DPGCNParams

    def train(self, data, seed, progress=None):
        """The disentangled non-sensitive representation (the public nodes' attribute trains it)."""
        return disentangle(
            standardize(data.x), data.sens, ~data.private_mask, seed, epochs=self.params.epochs, lr=self.params.lr
        )

    def release_trained(self, trained, data, epsilon, rng):
        """The representation, released without a formal guarantee."""
        z, info = trained
        g = unprotected_attribute(
            "DP-GCN's non-sensitive representation (orthogonal projection)",
            "no formal guarantee: removing a linear subspace leaves nonlinear dependence on s",
        )
        return EmbeddingRelease(z, g, dict(info))


__all__ = ["DPGCN", "PPCVGAE", "VGAE", "AutoencoderParams", "DPGCNParams", "PPCVGAEParams"]

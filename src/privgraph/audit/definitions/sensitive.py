"""The sensitive attribute (PPCVGAE and its family): candidates s vs s′, released from weights trained once."""

from __future__ import annotations

from privgraph.accounting import PrivacyGuarantee, Unit
from privgraph.audit.definitions.registry import AuditInput, audits, homogeneous, nominal_claim
from privgraph.audit.neighbours import Neighbours, projection
from privgraph.mechanisms import derive_seed
from privgraph.methods import Method


@audits("ppcvgae", "vgae", "dpgcn")
def _sensitive(method: Method, inp: AuditInput) -> list[Neighbours]:
    """The candidates s and s′ (s′ flips every private node), released by the method's release step from
    weights trained once on s: PPCVGAE's guarantee covers the release given the weights (Definition 2)."""
    from privgraph.methods import PPCVGAE
    from privgraph.methods.ppcvgae.embedding import check_sensitive
    from privgraph.methods.ppcvgae.privacy import flip_candidate

    data = homogeneous(method, inp.data)
    check_sensitive(data)
    worlds = (data, data.clone())
    worlds[1].sens = flip_candidate(data.sens, data.private_mask)
    trained = method.train(data, derive_seed(inp.seed, 98))
    if isinstance(method, PPCVGAE):  # (model, candidate, trace): the candidate is the flip of the input's s
        trained = [(trained[0], flip_candidate(w.sens, w.private_mask), *trained[2:]) for w in worlds]
    else:
        trained = [trained, trained]
    method.check_release_epsilon(inp.epsilon)
    means = [
        method.release_trained(t, w, None, None).z.detach().double().numpy().ravel() for t, w in zip(trained, worlds)
    ]
    notes = [
        "the weights are trained once on s and held fixed (the guarantee's scope); training on s′ "
        "instead would be a different release, not covered by the guarantee"
    ]
    claim, label = None, "sensitive attribute (s vs s′)"
    if getattr(method.params, "calibration", None) == "paper":  # PPCVGAE's opt-in paper noise (not DP)
        from privgraph.accounting import TrustModel

        claim = nominal_claim(
            PrivacyGuarantee(
                Unit.SENSITIVE_ATTRIBUTE,
                TrustModel.CENTRAL,
                inp.epsilon,
                float(method.params.delta),
                "the paper's claim for its noise (§5)",
            )
        )
        label = "sensitive attribute (s vs s′) — calibration=paper, NOT DP: vs the paper's claimed (ε, δ)"
        notes.append("calibration='paper' states ε = ∞ (and its exact δ); the row tests the (ε, δ) the paper claims")
    return [
        Neighbours(
            Unit.SENSITIVE_ATTRIBUTE,
            label,
            "candidates s vs s′; ⟨z − μ(s), μ(s′) − μ(s)⟩ (the Gaussian likelihood ratio)",
            lambda side, rng: method.release_trained(trained[side], worlds[side], inp.epsilon, rng),
            lambda rel: rel.z.detach().double().numpy().ravel() - means[0],
            projection(means[1] - means[0]),
            claim,
            notes,
        )
    ]

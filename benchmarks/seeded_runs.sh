#!/usr/bin/env bash
# Eleven short seeded CLI runs covering every evaluation task of the pipeline (node classification
# with label LDP and tuning, Blink's degree-share selection, EdgeRR's private MCMC (structure=private-mcmc: a
# checkout before the public-dendrogram default ran it without that parameter), PPCVGAE with and without noise, VGAE, (EdgeRR with convergence=waive: 2,000 moves never pass its check, and the run compares accuracy only)
# HeteDP NC and LP with and without the ε_f/ε search, RGCN, metapath2vec); one JSON file each.
# Compare two checkouts with: python benchmarks/compare_runs.py OUT_A OUT_B
# usage: bash benchmarks/seeded_runs.sh OUTDIR   (about 2 minutes on 2 cores)
set -euo pipefail
O=${1:?usage: seeded_runs.sh OUTDIR}; mkdir -p "$O"
P="${PRIVGRAPH:-.venv/bin/privgraph}"
DB=(--db "$O/trials.jsonl" --format json)
$P run lpgnn --epsilon 1 2 --trials 2 --set epochs=30 "${DB[@]}" > "$O/lpgnn.json"
$P run blink --param variant=hybrid --epsilon 2 --trials 2 --tune --tune-budget 2 --set epochs=30 "${DB[@]}" > "$O/blink.json"
$P run lpgnn --epsilon 1 --label-epsilon 2 --trials 2 --tune --tune-budget 3 --set epochs=30 "${DB[@]}" > "$O/lpgnn_y.json"
$P run edgerr --epsilon 2 --private-ratio 0.3 --trials 2 --set epochs=30 --param mcmc_steps=2000 --param convergence=waive --param structure=private-mcmc "${DB[@]}" > "$O/edgerr.json"
$P run ppcvgae --epsilon none 0.5 0.9 --trials 2 --param epochs=30 "${DB[@]}" > "$O/ppcvgae.json"
$P run vgae --trials 2 --param epochs=30 "${DB[@]}" > "$O/vgae.json"
$P run hetedp --task nc --epsilon 1 --trials 2 --set epochs=20 "${DB[@]}" > "$O/hetedp_nc.json"
$P run hetedp --task lp --epsilon 1 --trials 2 --tune --param epochs=2 "${DB[@]}" > "$O/hetedp_lp.json"
$P run hetedp --task lp --epsilon 1 --trials 1 --param epochs=1 --param feature_share=0.3 "${DB[@]}" > "$O/hetedp_lp_fixed.json"
$P run rgcn --task lp --trials 1 --set epochs=10 "${DB[@]}" > "$O/rgcn_lp.json"
$P run metapath2vec --task nc --trials 1 "${DB[@]}" > "$O/m2v_nc.json"
echo "wrote $O"

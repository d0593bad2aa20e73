#!/usr/bin/env bash
# What ran on the GPU machine for docs/benchmarks/device.md, from the repository root there:
# the CUDA tests, then LPGNN / Blink / Blink-Soft / HeteDP on the CPU and the GPU (benchmarks/device_speed.py),
# then HeteDP's ACM trial on 2 pinned cores, before (.gpu/old/src: `git archive 8f86e42^1 src`) and after
# the table path of its per-example clipping.
# It reads .gpu/ (not committed): .gpu/datasets (FacebookPagePage/raw, HGB/acm/raw
# copied from $PRIVGRAPH_DATA) and .gpu/*.whl (dp-accounting, dm-tree, opacus wheels for that machine's Python).
# Its $OUT files: device_speed.jsonl is appended to benchmarks/results/device_speed.jsonl, the two
# hetedp_*.jsonl trials give benchmarks/results/hetedp_trial_2cores.json; then `python benchmarks/device_speed.py table`.
export PYTHONUNBUFFERED=1 PRIVGRAPH_DATA=$PWD/.gpu/datasets PRIVGRAPH_CACHE=/tmp/pgc NUMBA_CACHE_DIR=/tmp/numba
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpu/*.whl
export PYTHONPATH=$PWD/src:/tmp/site
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; lscpu | grep "Model name"
timeout 90 python3 -m pytest tests/test_device.py -q -p no:cacheprovider -n 0 2>&1 | tail -8
timeout 320 python3 benchmarks/device_speed.py run --device cuda --out $OUT/device_speed.jsonl --cases hetedp lpgnn blink soft --soft-sizes 10000 --soft-cpu-max 10000 > $OUT/speed.log 2>&1
echo "speed rc=$?"; grep -v '^{' $OUT/speed.log | tail -5
python3 -c "
import json
for l in open('$OUT/device_speed.jsonl'):
    r = json.loads(l); print(r['case'], r['size'], r['device'], {k: round(v, 2) for k, v in r['parts'].items()})
"
for v in old new; do
  src=$PWD/src; [ $v = old ] && src=$PWD/.gpu/old/src
  start=$(date +%s.%N)
  PYTHONPATH=$src:/tmp/site OMP_NUM_THREADS=2 MKL_NUM_THREADS=2 NUMBA_NUM_THREADS=2 timeout 100 taskset -c 0,1 python3 -m privgraph run hetedp --dataset acm --task lp --epsilon 1 --trials 1 --db $OUT/hetedp_$v.jsonl > $OUT/cli_$v.log 2>&1
  echo "$v rc=$? wall=$(python3 -c "print(round($(date +%s.%N)-$start,1))") trial=$(python3 -c "import json;print([round(json.loads(l)['wall_time'],1) for l in open('$OUT/hetedp_$v.jsonl')])" 2>&1 | tail -1)"
done

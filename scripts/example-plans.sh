#!/usr/bin/env bash
# Compiles the examples under a spread of options into OUT_DIR with ZCC, so
# that two builds' plans can be compared byte for byte (a refactoring must
# leave them identical):
#   scripts/example-plans.sh ZCC OUT_DIR
#   cmp -s or: diff -r OUT_A OUT_B
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
zcc=${1:?usage: example-plans.sh ZCC OUT_DIR}
out=${2:?usage: example-plans.sh ZCC OUT_DIR}
mkdir -p "$out"
n=0
plan() {
  local name=$1 model=$2
  shift 2
  "$zcc" "$root/examples/$model.mlir" -o "$out/$name.zplan" "$@"
  n=$((n + 1))
}
for model in mlp gpt_block; do
  plan "${model}_adamw" $model --optimizer adamw --lr 0.001
  plan "${model}_sgd" $model --optimizer sgd --lr 0.05 --momentum 0.9 --nesterov
  plan "${model}_none" $model --optimizer none
  plan "${model}_accumulate" $model --optimizer adamw --lr 0.001 --accumulate
  plan "${model}_bf16" $model --optimizer adamw --lr 0.001 --precision bf16
  plan "${model}_clip" $model --optimizer adamw --lr 0.001 --clip-grad-norm 0.5
  plan "${model}_dp" $model --optimizer adamw --lr 0.001 --data-parallel --bucket-bytes 0.05MiB
  plan "${model}_zero" $model --optimizer adamw --lr 0.001 --data-parallel \
    --bucket-bytes 0.05MiB --shard-optimizer-state --world-size 2
  plan "${model}_schedule" $model --optimizer adamw --lr 0.001 --lr-warmup-steps 5 \
    --lr-decay cosine --lr-decay-steps 25 --min-lr 0.0001 --weight-decay 0.1 \
    --weight-decay-min-rank 2
done
plan gpt_block_budget gpt_block --optimizer adamw --lr 0.001 --memory-budget 300000
plan gpt_block_bf16_budget gpt_block --optimizer adamw --lr 0.001 --precision bf16 \
  --memory-budget 250000
echo "$n plans in $out"

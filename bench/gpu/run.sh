#!/usr/bin/env bash
# The GPU suite and the GPU benchmarks, on a machine with an NVIDIA GPU and
# plans compiled elsewhere (bench/gpu/make_plans.sh):
#   bench/gpu/run.sh PLANS_DIR [OUT_DIR]
# or, with a folder from bench/gpu/prepare.sh (plans and libraries):
#   bench/gpu/run.sh DIR [OUT_DIR]
# Builds the runtime alone (-DZCC_BUILD_COMPILER=OFF: no MLIR needed), then
# runs each check in turn, going on after a failure so one run reports them
# all: the CUDA smoke test, the conformance suite against the CPU executor,
# zrun traces compared bit for bit (graph, eager, no-reuse, poison), the
# graph/eager benchmark, the PyTorch comparison (where PyTorch is installed),
# the same at real sizes (GPT-2 small) and zrun under compute-sanitizer
# (where installed), the kill-and-resume test and the 4,096-microbatch soak.
# Logs go to OUT_DIR
# (default bench/gpu/out), the last lines printed are a table of the steps,
# and the exit status is non-zero when any step failed.
#
# A GPU machine with no package manager: pack the libraries on a Debian
# machine (bench/gpu/pack_deps.sh DIR), copy DIR over and set ZCC_GPU_DEPS=DIR.
# ZCC_GPU_STEP_TIMEOUT (seconds, default 300) bounds each step.
# ZCC_GPU_ONLY (an extended regular expression) runs only the steps whose
# names match it; ZCC_GPU_SKIP_BUILD=1 uses the build already there (so
# several instances can share it: bench/gpu/run_parallel.sh).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
plans=$(cd "${1:?usage: run.sh PLANS_DIR|PREPARED_DIR [OUT_DIR]}" && pwd) || exit 2
if [ -d "$plans/plans" ] && [ -d "$plans/deps" ]; then
  export ZCC_GPU_DEPS=${ZCC_GPU_DEPS:-$plans/deps}
  plans=$plans/plans
fi
# Plans that make_plans.sh compressed (mostly constants: the Llama model's
# 20 MB are 0.3 MB in xz), unpacked beside them with Python's lzma (the GPU
# machine may have no xz).
for packed in "$plans"/*.zplan.xz; do
  [ -f "$packed" ] && [ ! -f "${packed%.xz}" ] || continue
  python3 -c 'import lzma, shutil, sys
with lzma.open(sys.argv[1]) as i, open(sys.argv[2], "wb") as o:
    shutil.copyfileobj(i, o)' "$packed" "${packed%.xz}" ||
    echo "run.sh: could not unpack $packed"
done
out=${2:-$root/bench/gpu/out}
build=${ZCC_GPU_BUILD_DIR:-$root/build-gpu}
step_timeout=${ZCC_GPU_STEP_TIMEOUT:-300}
mkdir -p "$out"
out=$(cd "$out" && pwd)

if [ -n "${ZCC_GPU_DEPS:-}" ]; then
  deps=$(cd "$ZCC_GPU_DEPS" && pwd) || exit 2
  export CMAKE_PREFIX_PATH=$deps${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export PATH=$deps/bin:$PATH
  export LD_LIBRARY_PATH=$deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export BLA_VENDOR=${BLA_VENDOR:-OpenBLAS}
fi
[ -d /usr/local/cuda/bin ] && export PATH=$PATH:/usr/local/cuda/bin

for tool in cmake ninja flatc nvcc; do
  command -v "$tool" > /dev/null || {
    echo "run.sh: '$tool' is missing; on Debian/Ubuntu: apt-get install cmake ninja-build" \
         "flatbuffers-compiler libflatbuffers-dev libopenblas-dev nlohmann-json3-dev" \
         "zlib1g-dev libzip-dev libgtest-dev (and the CUDA toolkit for nvcc), or see ZCC_GPU_DEPS above" >&2
    exit 1
  }
done

summary=()
failed=0
# step NAME LOG COMMAND...: runs COMMAND under the step timeout, appending
# its output to OUT/LOG, and records its exit status.
step() {
  local name=$1 log=$2
  shift 2
  if [ -n "${ZCC_GPU_ONLY:-}" ] && ! [[ $name =~ $ZCC_GPU_ONLY ]]; then
    return 0
  fi
  echo "== $name" | tee -a "$out/$log"
  local start=$SECONDS
  if [ "$(type -t "$1")" = function ]; then
    timeout "$step_timeout" bash -c "$(declare -f "$1"); \"\$@\"" _ "$@" 2>&1 | tee -a "$out/$log"
  else
    timeout "$step_timeout" "$@" 2>&1 | tee -a "$out/$log"
  fi
  local rc=${PIPESTATUS[0]}
  local verdict=ok
  if [ "$rc" = 124 ]; then
    verdict="TIMED OUT after ${step_timeout}s"
  elif [ "$rc" != 0 ]; then
    verdict="FAILED (exit $rc)"
  fi
  [ "$verdict" = ok ] || failed=$((failed + 1))
  summary+=("| $name | $verdict | $((SECONDS - start)) | $log |")
}

# An imported model's weights (bench/gpu/model_plans.py), as zrun's flag.
weights() {
  local file=${1%.zplan}.safetensors
  [ -f "$file" ] && echo "--load-checkpoint $file"
}

# Traces of one plan on the GPU in every mode must match bit for bit: the
# same kernels in the same order on the same bytes, only placed differently.
compare_traces() {
  local plan=$1 steps=$2 base="" mode launch name dir=$build/traces
  mkdir -p "$dir"
  for run in graph:planned eager:planned graph:no-reuse graph:poison; do
    launch=${run%%:*} mode=${run#*:}
    name="$dir/$(basename "$plan" .zplan)-$launch-$mode.txt"
    "$build/bin/zrun" "$plan" --device cuda --launch "$launch" --mode "$mode" \
      --steps "$steps" --trace $(weights "$plan") > "$name" ||
      { echo "zrun $launch $mode failed"; return 1; }
    grep '^step ' "$name" > "$name.steps"
    if [ -z "$base" ]; then
      base=$name.steps
      tail -n 2 "$base"
    elif ! cmp -s "$base" "$name.steps"; then
      echo "trace of $launch/$mode differs from graph/planned:"
      diff "$base" "$name.steps" | head -n 6
      return 1
    else
      echo "$launch/$mode: $(wc -l < "$name.steps") steps bit-identical to graph/planned"
    fi
  done
}

# Two plans that must train to the same bits on CUDA (graph launch).
compare_plans() {
  local a=$1 b=$2 steps=$3 dir=$build/traces
  mkdir -p "$dir"
  for plan in "$a" "$b"; do
    "$build/bin/zrun" "$plan" --device cuda --steps "$steps" --trace |
      grep '^step ' > "$dir/$(basename "$plan" .zplan).pair" ||
      { echo "zrun $plan failed"; return 1; }
  done
  if cmp -s "$dir/$(basename "$a" .zplan).pair" "$dir/$(basename "$b" .zplan).pair"; then
    echo "$(basename "$a") and $(basename "$b"): $steps steps bit-identical"
  else
    diff "$dir/$(basename "$a" .zplan).pair" "$dir/$(basename "$b" .zplan).pair" | head -n 6
    return 1
  fi
}

# Data parallel at world size 1 (issue 20): each bucket's all_reduce (and
# ZeRO-1's reduce_scatter and all_gather) through a one-rank NCCL
# communicator captured in the graph is the identity, so the steps are the
# plain plan's bit for bit (ZeRO-1: the losses; its params hash covers its
# flattened optimizer state).
compare_data_parallel() {
  local steps=$1 dir=$build/traces launch plan name
  mkdir -p "$dir"
  for launch in graph eager; do
    "$build/bin/zrun" "$plans/gpt_block.zplan" --device cuda --launch "$launch" \
      --steps "$steps" --trace | grep '^step ' > "$dir/plain-$launch.steps" || return 1
    for plan in gpt_block_dp gpt_block_zero; do
      name=$dir/$plan-$launch.txt
      "$build/bin/zrun" "$plans/$plan.zplan" --device cuda --launch "$launch" \
        --steps "$steps" --trace > "$name" || { echo "zrun $plan $launch failed"; return 1; }
      grep '^device:' "$name"
      if [ -n "${ZCC_REQUIRE_NCCL:-}" ] && ! grep -q '^device:.*NCCL' "$name"; then
        echo "$plan: the collectives did not go through NCCL"
        return 1
      fi
      local fields=1-6
      [ "$plan" = gpt_block_dp ] && fields=1-8
      if ! cmp -s <(grep '^step ' "$name" | cut -d' ' -f$fields) \
                  <(cut -d' ' -f$fields "$dir/plain-$launch.steps"); then
        echo "$plan $launch differs from the plain plan:"
        diff <(grep '^step ' "$name" | cut -d' ' -f$fields) \
             <(cut -d' ' -f$fields "$dir/plain-$launch.steps") | head -n 6
        return 1
      fi
      echo "$plan $launch: $steps steps bit-identical to the plain plan (fields $fields)"
    done
  done
}

# An imported model's eval entry (dropout off, BatchNorm on its running
# statistics) on the GPU against the CPU executor: the validation losses
# after 4 and 8 training steps agree to 1e-3 (f32 kernels differ in their
# order of addition, so not bit for bit), and the GPU run allocates nothing
# after load.
compare_eval() {
  local plan=$1 dir=$build/traces name device
  name=$(basename "$plan" .zplan)
  mkdir -p "$dir"
  for device in cpu cuda; do
    "$build/bin/zrun" "$plan" --device $device --steps 8 --eval-data synthetic \
      --eval-every 4 $(weights "$plan") > "$dir/$name-eval-$device.txt" ||
      { echo "zrun $name --device $device failed"; cat "$dir/$name-eval-$device.txt"; return 1; }
  done
  grep -q 'allocations after load *0' "$dir/$name-eval-cuda.txt" ||
    { echo "$name: the CUDA run allocated after load"; grep allocations "$dir/$name-eval-cuda.txt"; return 1; }
  paste <(grep '^eval after step' "$dir/$name-eval-cpu.txt") \
        <(grep '^eval after step' "$dir/$name-eval-cuda.txt") |
    awk -F'\t' '{ split($1, a, " "); split($2, b, " "); n++;
                  d = a[6] - b[6]; if (d < 0) d = -d; s = a[6] < 0 ? -a[6] : a[6];
                  printf "eval after step %s: cpu %s cuda %s\n", a[4], a[6], b[6];
                  if (a[4] != b[4] || d > 1e-3 * (s > 1 ? s : 1)) bad++ }
                END { if (n != 2 || bad) { print "eval losses differ (or missing)"; exit 1 } }'
}

export build out plans
export -f weights

# NCCL for data-parallel plans: its header at build time and libnccl.so.2
# at run time (loaded, not linked), from NCCL_ROOT or PyTorch's nvidia-nccl
# wheel. With it, the conformance suite requires the NCCL path to be taken.
if [ -z "${NCCL_ROOT:-}" ]; then
  NCCL_ROOT=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null) ||
    NCCL_ROOT=
fi
library_flags=()
if [ -n "$NCCL_ROOT" ] && [ -f "$NCCL_ROOT/include/nccl.h" ]; then
  echo "== NCCL from $NCCL_ROOT"
  library_flags=(-DNCCL_ROOT="$NCCL_ROOT")
  export LD_LIBRARY_PATH=$NCCL_ROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export ZCC_REQUIRE_NCCL=1
else
  echo "== no NCCL found (NCCL_ROOT, or pip's nvidia-nccl): data-parallel steps run without it"
fi

# cuDNN for bf16 attention: cudnn.h at build time and libcudnn.so.9 at run
# time (loaded, not linked), from CUDNN_ROOT or PyTorch's nvidia-cudnn wheel;
# cudnn-frontend's headers from the prepared deps. The frontend loads the
# CUDA runtime's shared library too, which the toolkit has.
if [ -z "${CUDNN_ROOT:-}" ]; then
  CUDNN_ROOT=$(python3 -c 'import nvidia.cudnn as n; print(list(n.__path__)[0])' 2>/dev/null) ||
    CUDNN_ROOT=
fi
if [ -n "$CUDNN_ROOT" ] && [ -d "$CUDNN_ROOT/lib" ]; then
  echo "== cuDNN from $CUDNN_ROOT"
  library_flags+=(-DCUDNN_ROOT="$CUDNN_ROOT")
  export LD_LIBRARY_PATH=$CUDNN_ROOT/lib:$LD_LIBRARY_PATH
fi
if [ -n "${ZCC_GPU_DEPS:-}" ] && [ -d "$deps/cudnn-frontend" ]; then
  library_flags+=(-DCUDNN_FRONTEND_ROOT="$deps/cudnn-frontend")
fi
for dir in /usr/local/cuda/lib64 /usr/local/cuda/lib; do
  [ -d "$dir" ] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$dir
done

echo "== build the runtime alone in $build"
start=$SECONDS
if [ -n "${ZCC_GPU_SKIP_BUILD:-}" ]; then
  echo "ZCC_GPU_SKIP_BUILD: using the build in $build"
elif ! { cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
         -DZCC_BUILD_COMPILER=OFF -DZCC_ENABLE_CUDA=ON "${library_flags[@]}" \
         -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" &&
       ninja -C "$build" zcc-cuda-info zcc-cuda-conformance-tests zcc-conformance-tests \
         zcc-gpu-bench zrun; } > "$out/build.log" 2>&1; then
  tail -n 40 "$out/build.log"
  echo "run.sh: the runtime build failed (log: $out/build.log)"
  exit 1
fi
echo "built in $((SECONDS - start)) s"

step "CUDA smoke test" conformance.txt "$build/bin/zcc-cuda-info" --smoke
step "conformance: CUDA (graph and eager) against the CPU" conformance.txt \
  env ZCC_PLANS_DIR="$plans" "$build/bin/zcc-cuda-conformance-tests"
step "conformance: the emulator against the CPU" conformance.txt \
  env ZCC_PLANS_DIR="$plans" "$build/bin/zcc-conformance-tests" --gtest_brief=1
for model in mlp gpt_block gpt_block_bf16; do
  step "traces: $model graph/eager/no-reuse/poison, 50 steps" zrun.txt \
    compare_traces "$plans/$model.zplan" 50
done
if [ -f "$plans/gpt_block_bf16_converted.zplan" ]; then
  step "updates reading bf16 gradients: gpt_block_bf16 against its converting plan (data parallel, NCCL at world size 1), 50 steps" \
    zrun.txt compare_plans "$plans/gpt_block_bf16.zplan" \
    "$plans/gpt_block_bf16_converted.zplan" 50
fi
# Imported models (bench/gpu/model_plans.py): convolutions, pooling and
# BatchNorm state; grouped-query attention, rotary embeddings, RMSNorm.
for model in cnn llama_tiny; do
  [ -f "$plans/$model.zplan" ] || { summary+=("| $model | no plan: skipped | 0 | |"); continue; }
  step "traces: $model graph/eager/no-reuse/poison, 20 steps" zrun.txt \
    compare_traces "$plans/$model.zplan" 20
  step "eval entry: $model on CUDA against the CPU" zrun.txt \
    compare_eval "$plans/$model.zplan"
done
step "data parallel, world size 1 (NCCL in the graph): gpt_block dp and ZeRO-1, 50 steps" \
  zrun.txt compare_data_parallel 50
for plan in gpt_block gpt_block_bf16; do
  for launch in graph eager; do
    step "zrun $plan --launch $launch, 200 steps" zrun.txt \
      "$build/bin/zrun" "$plans/$plan.zplan" --device cuda --launch $launch \
      --steps 200 --print-every 20
  done
done

# A CUDA run SIGKILLed at random moments and resumed is the uninterrupted
# run, bit for bit (test/tools/zrun/kill_resume.py; issue 49).
if [ -f "$plans/gpt_block_resume.zplan" ]; then
  step "kill and resume on CUDA: gpt_block, 200 steps, 20 stops" zrun.txt \
    python3 "$root/test/tools/zrun/kill_resume.py" "$build/bin/zrun" \
    "$plans/gpt_block_resume.zplan" --kills 20 --sigterm 2 -- --steps 200 \
    --microbatches 2 --device cuda
fi

# 4,096 microbatches a step (issue 48's carried line; the failure that
# motivated zcc grew 164 MiB a microbatch): the device memory is what one
# microbatch takes, and nothing is allocated after load.
soak() {
  local n one many
  for n in 1 4096; do
    "$build/bin/zrun" "$plans/gpt_block_resume.zplan" --device cuda --microbatches $n \
      --steps 2 > "$build/soak-$n.txt" || { echo "zrun --microbatches $n failed"; return 1; }
    grep -E 'device memory|allocations after load|^step' "$build/soak-$n.txt" | sed "s/^/$n: /"
    grep -q 'allocations after load *0$' "$build/soak-$n.txt" ||
      { echo "--microbatches $n allocated after load"; return 1; }
  done
  one=$(grep 'device memory' "$build/soak-1.txt")
  many=$(grep 'device memory' "$build/soak-4096.txt")
  [ -n "$one" ] && [ "$one" = "$many" ] ||
    { echo "device memory differs: '$one' against '$many'"; return 1; }
  echo "4096 microbatches: $many, as for one"
}
if [ -f "$plans/gpt_block_resume.zplan" ]; then
  step "soak: gpt_block, 4096 microbatches a step, 2 steps" zrun.txt soak
fi

step "benchmark: graph replay against eager launch, 1000 steps" zcc.md \
  "$build/bin/zcc-gpu-bench" "$plans/mlp.zplan" "$plans/mlp_b512.zplan" \
  "$plans/gpt_block.zplan" "$plans/gpt_block_b32.zplan" --steps 1000
step "PyTorch eager and torch.cuda.graph, the same models" torch.md \
  python3 "$root/bench/gpu/torch_bench.py" --steps 1000
# The same GPT at real sizes (make_plans.sh), fewer steps: 200 ms each at
# GPT-2 small.
if [ -f "$plans/gpt2_small.zplan" ]; then
  step "benchmark at real size: GPT 4x256 (batch 8, sequence 128), zcc" real-size.md \
    "$build/bin/zcc-gpu-bench" "$plans/gpt_mid.zplan" \
    $(ls "$plans"/gpt_mid_bf16.zplan 2>/dev/null) --steps 200 --warmup 10
  step "benchmark at real size: GPT 4x256 (batch 8, sequence 128), PyTorch" real-size.md \
    python3 "$root/bench/gpu/torch_bench.py" --model gpt --gpt 4,256,4,128,512 --batch 8 \
    --steps 200 --warmup 10 --modes eager,graph,eager-bf16,graph-bf16
  step "benchmark: data parallel at world size 1, GPT 4x256 (batch 8), zcc (NCCL in the graph)" \
    data-parallel.md "$build/bin/zcc-gpu-bench" "$plans/gpt_mid.zplan" "$plans/gpt_mid_dp.zplan" \
    --steps 200 --warmup 10
  step "benchmark: data parallel at world size 1, GPT 4x256 (batch 8), PyTorch DDP on NCCL" \
    data-parallel.md python3 "$root/bench/gpu/torch_bench.py" --model gpt --gpt 4,256,4,128,512 \
    --batch 8 --steps 200 --warmup 10 --modes eager,ddp
  step "benchmark at real size: GPT-2 small (batch 8, sequence 1024), zcc; budgets 75%, 50%" \
    real-size.md "$build/bin/zcc-gpu-bench" "$plans/gpt2_small.zplan" \
    $(ls "$plans"/gpt2_small_m75.zplan "$plans"/gpt2_small_m50.zplan \
         "$plans"/gpt2_small_bf16.zplan "$plans"/gpt2_small_tf32.zplan \
         "$plans"/gpt2_small_copies.zplan "$plans"/gpt2_small_bf16_copies.zplan \
         "$plans"/gpt2_small_bf16_two_loss_kernels.zplan \
         2>/dev/null) \
    --steps 20 --warmup 3
  step "benchmark at real size: GPT-2 small (batch 8, sequence 1024), PyTorch" real-size.md \
    python3 "$root/bench/gpu/torch_bench.py" --model gpt --gpt 12,768,12,1024,50304 \
    --batch 8 --steps 20 --warmup 3 \
    --modes eager,graph,eager-bf16,graph-bf16,compile-bf16,graph-tf32
fi
# The Llama-style model at GPT-2 small's width and depth (issue 48's second
# model; bench/gpu/llama_model.py): transformers' LlamaForCausalLM imported
# by zcc.from_torch (model_plans.py --bench), against the same module in
# PyTorch.
if [ -f "$plans/llama_small_bf16.zplan" ]; then
  step "benchmark at real size: Llama-style 12x768 (GQA 12/4, batch 8, sequence 1024), zcc" \
    real-size.md "$build/bin/zcc-gpu-bench" "$plans/llama_small_bf16.zplan" \
    $(ls "$plans"/llama_small.zplan 2>/dev/null) --steps 20 --warmup 3
  step "benchmark at real size: Llama-style 12x768 (GQA 12/4, batch 8, sequence 1024), PyTorch" \
    real-size.md python3 "$root/bench/gpu/torch_bench.py" --model llama --batch 8 \
    --steps 20 --warmup 3 --modes eager,graph,eager-bf16,graph-bf16,compile-bf16
fi

if command -v compute-sanitizer > /dev/null; then
  for tool in memcheck racecheck synccheck initcheck; do
    step "compute-sanitizer $tool: gpt_block, eager, 3 steps" sanitizer.txt \
      compute-sanitizer --tool $tool --error-exitcode 9 \
      "$build/bin/zrun" "$plans/gpt_block.zplan" --device cuda --launch eager --steps 3
  done
  step "compute-sanitizer memcheck: gpt_block, graph, 3 steps" sanitizer.txt \
    compute-sanitizer --tool memcheck --error-exitcode 9 \
    "$build/bin/zrun" "$plans/gpt_block.zplan" --device cuda --launch graph --steps 3
  for tool in memcheck initcheck; do
    step "compute-sanitizer $tool: gpt_block bf16, eager, 3 steps" sanitizer.txt \
      compute-sanitizer --tool $tool --error-exitcode 9 \
      "$build/bin/zrun" "$plans/gpt_block_bf16.zplan" --device cuda --launch eager --steps 3
  done
else
  summary+=("| compute-sanitizer | not installed: skipped | 0 | |")
fi

# Where the bf16 step's time goes (issue 48): one eager step of GPT-2 small
# in bf16 under ncu, kernels by time (ncu's times are at base clocks with
# cold caches: read the shares). Last, so a short lease cuts only this.
profile_bf16() {
  timeout 200 ncu --csv --clock-control none --metrics gpu__time_duration.sum \
    "$build/bin/zrun" "$plans/gpt2_small_bf16.zplan" --device cuda --launch eager \
    --steps 1 > "$out/ncu-gpt2-bf16.csv" 2> "$out/ncu-gpt2-bf16.err" || return 1
  python3 "$root/bench/gpu/ncu_summary.py" "$out/ncu-gpt2-bf16.csv" 1 --top 30
}
if command -v ncu > /dev/null && [ -f "$plans/gpt2_small_bf16.zplan" ] &&
   [ -z "${ZCC_GPU_NO_PROFILE:-}" ]; then
  export root
  step "profile: GPT-2 small bf16, one eager step (ncu)" profile.md profile_bf16
fi

{
  echo
  echo "| step | result | seconds | log |"
  echo "|---|---|---|---|"
  printf '%s\n' "${summary[@]}"
  echo
  echo "$failed step(s) failed; logs in $out"
} | tee "$out/summary.md"
[ "$failed" = 0 ]

#!/bin/bash
# The GPU checks of issue 15 (and the 16-core scaling of issue 11) as one command on the lent
# machine, from the repository root, with .device_pack carried (tools/bench/device_pack.sh):
#
#   device run, carry [".device_pack"], command "bash tools/bench/device_check.sh", timeout 590
#
# In order of importance, each step only while time is left (a step skipped for time says so):
# 1. tests/gpu: every backend op, CUDA against the CPU backend; the default model on CUDA against
#    PyTorch's golden vectors (expert choices identical), CUDA vs CPU on a long batch, bf16 text;
# 1b. train_bench.py: train.py's step on the GPU, loop vs dense experts, f32 vs bf16 autocast;
# 2. device_bench --backend cuda at batch 1, 16, 128, 1024 (10 s utterances), f32 and bf16,
#    beside PyTorch eager on the same GPU, model and batch (moe_bench_torch.py --device cuda);
# 3. device_bench --live: 1,000 to 16,000 streams stepped a chunk at a time (front ends on 14
#    threads): step time and streams at real time;
# 4. engine_bench with GPU lanes (lane_backend = cuda, one lane): live channels paced in real
#    time (p99 final latency, real time kept) and offline throughput, end to end;
# 5. scaling_bench.py: sluice transcribe on 1..16 CPU cores beside PyTorch on the same cores.
# Everything goes to $OUT/device_check.txt (JSON lines to $OUT/device_check.jsonl), to be
# committed under tools/bench/results/ with the numbers quoted where they are used.
set -u
budget=${DEVICE_CHECK_SECONDS:-560}
out=${OUT:-/tmp/device_check}
mkdir -p "$out"
log="$out/device_check.txt"
json="$out/device_check.jsonl"
: >"$log"
: >"$json"
say() { echo "$@" | tee -a "$log"; }
# step NAME SECONDS: whether NAME may start (SECONDS: its own limit, which must fit what is left).
step() {
  local left=$((budget - SECONDS))
  say
  if [ "$left" -lt "$2" ]; then say "## $1: SKIPPED (time: ${left} s left, it needs up to $2 s)"; return 1; fi
  say "## $1 (at ${SECONDS} s)"
}

root=$(pwd)
pack=$(mktemp -d)
tar -C "$pack" -xJf .device_pack/pack.tar.xz
# The test binary reads models/ and tests/data/ under the source path it was built in.
src=$(strings "$pack/bin/sluice_gpu_tests" | grep -m1 -E '^/.*/models/default$' | sed 's|/models/default$||')
if [ -n "$src" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$root" "$src"; fi
torch_libs=$(python3 -c 'import glob, os, nvidia; print(":".join(sorted(glob.glob(os.path.join(list(nvidia.__path__)[0], "*", "lib")))))' 2>/dev/null || true)
export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${torch_libs}"
export SLUICE_CUDA_PLUGIN="$pack/bin/libsluice_cuda.so"
export PYTHONUNBUFFERED=1

say "## machine"
{ date -u; nvidia-smi -L; nproc; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'; } 2>&1 | tee -a "$log"

if step "tests/gpu (CUDA vs CPU op table, default model vs PyTorch golden, bf16 text)" 90; then
  timeout 90 "$pack/bin/sluice_gpu_tests" --no-colors=true -s 2>&1 | tail -80 | tee -a "$log"
fi

if step "train_bench: the recipe's training step on the GPU (loop vs dense, f32 vs bf16 autocast)" 75; then
  # PyTorch of the machine; needs no build. NOTES-debian12.md measured ~3,200x real time for the
  # loop on this GPU (2026-11-30); train.py --device cuda uses dense (and --amp bf16 if asked).
  timeout 75 python3 tools/bench/train_bench.py --device cuda --batch 64 --seconds 10 --steps 5 --warmup 3 \
    --json 2>&1 | tee -a "$log" "$json"
fi

if step "device_bench (CUDA, f32 and bf16) beside PyTorch eager on the same GPU" 150; then
  for math in f32 bf16; do
    timeout 45 "$pack/bin/device_bench" --model models/default --backend cuda --batch 1,16,128,1024 --seconds 10 \
      --runs 5 --math "$math" --host-threads 14 --json 2>&1 | tee -a "$log" "$json"
  done
  for dtype in f32 bf16; do
    for b in 1 16 128 1024; do
      timeout 20 python3 tools/bench/moe_bench_torch.py --model models/default --device cuda --dtype "$dtype" \
        --batch "$b" --seconds 10 --runs 5 --json 2>&1 | tee -a "$log" "$json"
    done
  done
fi

if step "device_bench --live (CUDA)" 90; then
  timeout 90 "$pack/bin/device_bench" --model models/default --backend cuda --live 1000,4000,10000,16000 --runs 3 \
    --host-threads 14 --json 2>&1 | tee -a "$log" "$json"
fi

if step "engine_bench with GPU lanes (lane_backend = cuda, 1 lane): live, then offline" 150; then
  timeout 100 "$pack/bin/engine_bench" --sections live --channels 2000,8000 --live-s 15 --lanes 1 --lane-backend cuda \
    --json "$out/engine_live.json" 2>&1 | grep -v '^\[' | tail -12 | tee -a "$log"
  timeout 50 "$pack/bin/engine_bench" --sections offline --copies 64 --repeats 2 --lanes 1 --lane-backend cuda \
    --json "$out/engine_offline.json" 2>&1 | grep -v '^\[' | tail -12 | tee -a "$log"
fi

if step "scaling_bench: sluice transcribe on 1..16 cores beside PyTorch (CPU)" 150; then
  timeout 150 python3 tools/bench/scaling_bench.py --sluice "$pack/bin/sluice" --copies 64 --runs 2 \
    --cores 1,4,16 --json "$out/scaling.json" 2>&1 | tail -30 | tee -a "$log"
fi
say
say "done at ${SECONDS} s, $(date -u)"

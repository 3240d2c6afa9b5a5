#!/bin/bash
# The GPU checks of issue 15 (and the 16-core scaling of issue 11) as one command on the lent
# machine, from the repository root, with .device_pack carried (tools/bench/device_pack.sh):
#
#   device run, carry [".device_pack"], command "bash tools/bench/device_check.sh", timeout 540
#
# 1. tests/gpu: every backend op, CUDA against the CPU backend, and the default model on CUDA
#    against PyTorch's golden vectors (expert choices identical);
# 2. device_bench --backend cuda at batch 1, 16, 128, 1024 (10 s utterances) beside PyTorch eager
#    on the same GPU, model and batch (moe_bench_torch.py --device cuda, f32 and bf16 autocast),
#    and live streams stepped a chunk at a time (1,000 to 16,000, front ends on 14 threads);
# 3. scaling_bench.py: sluice transcribe on 1..16 cores beside PyTorch on the same cores.
# Everything goes to $OUT/device_check.txt (and the JSON lines to $OUT/device_check.jsonl), to be
# committed under tools/bench/results/ with the numbers quoted where they are used.
set -u
out=${OUT:-/tmp/device_check}
mkdir -p "$out"
log="$out/device_check.txt"
json="$out/device_check.jsonl"
: >"$log"
: >"$json"
say() { echo "$@" | tee -a "$log"; }
step() { say; say "## $*"; }

root=$(pwd)
pack=$(mktemp -d)
tar -C "$pack" -xJf .device_pack/pack.tar.xz
# The test binary reads models/ and tests/data/ under the source path it was built in.
src=$(strings "$pack/bin/sluice_gpu_tests" | grep -m1 -E '^/.*/models/default$' | sed 's|/models/default$||')
if [ -n "$src" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")" && ln -s "$root" "$src"; fi
torch_libs=$(python3 -c 'import glob, os, nvidia; print(":".join(sorted(glob.glob(os.path.join(list(nvidia.__path__)[0], "*", "lib")))))' 2>/dev/null || true)
export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:/usr/local/cuda/lib:${torch_libs}"
export SLUICE_CUDA_PLUGIN="$pack/bin/libsluice_cuda.so"

step "machine"
{ date -u; nvidia-smi -L; nproc; python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'; } 2>&1 | tee -a "$log"

step "tests/gpu (CUDA vs CPU op table, default model vs PyTorch golden)"
timeout 180 "$pack/bin/sluice_gpu_tests" --no-colors=true -s 2>&1 | tail -60 | tee -a "$log"

step "device_bench (CUDA) beside PyTorch eager on the same GPU"
for math in f32 bf16; do
  timeout 100 "$pack/bin/device_bench" --model models/default --backend cuda --batch 1,16,128,1024 --seconds 10 \
    --runs 5 --math "$math" --json 2>&1 | tee -a "$log" "$json"
done
timeout 150 "$pack/bin/device_bench" --model models/default --backend cuda --live 1000,4000,10000,16000 --runs 3 \
  --host-threads 14 --json 2>&1 | tee -a "$log" "$json"
for dtype in f32 bf16; do
  for b in 1 16 128 1024; do
    timeout 60 python3 tools/bench/moe_bench_torch.py --model models/default --device cuda --dtype "$dtype" \
      --batch "$b" --seconds 10 --runs 5 --json 2>&1 | tee -a "$log" "$json"
  done
done

step "scaling_bench: sluice transcribe on 1..16 cores beside PyTorch (CPU)"
timeout 240 python3 tools/bench/scaling_bench.py --sluice "$pack/bin/sluice" --copies 64 --runs 2 \
  --cores 1,2,4,8,16 --json "$out/scaling.json" 2>&1 | tail -30 | tee -a "$log"
say
say "done $(date -u)"

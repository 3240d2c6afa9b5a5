#!/bin/bash
# Fine-tune the default model on the lent GPU machine in one command (issue 10, point 4): the
# carried real speech and TTS audio is decoded and augmented on every core, train.py trains on the GPU (dense
# experts, bf16 autocast, LR decay over the time left), and the best dev-CER weights come back.
#
#   here:   /usr/bin/python3 tools/train/device_data.py pack --out .device_train
#           (the clean real speech of the recipe's splits and 1.2 h of its rendered TTS voices as
#           12 kbit/s Opus, up to what the 64 MiB working-tree limit leaves; data/ must hold the
#           recipe's shards: recipe_cpu.sh)
#   there:  device run, carry [".device_train"], command "bash tools/train/device_train.sh",
#           timeout 590
#   back:   $OUT/model (model.json, tokens.txt, weights.safetensors in bf16: export.py --model-dir
#           re-exports it with golden vectors here), $OUT/log.jsonl, $OUT/device_train.txt.
#
#   bash tools/train/device_train.sh --smoke    the same steps on the CPU, two training steps
#                                               (what test_device_train.py runs)
# Environment: DEVICE_TRAIN_SECONDS (whole-command budget, default 560), DEVICE_TRAIN_PACK
# (default .device_train), DEVICE_TRAIN_WORK (scratch, default /tmp/device_train), OUT, PYTHON.
set -euo pipefail
budget=${DEVICE_TRAIN_SECONDS:-560}
pack=${DEVICE_TRAIN_PACK:-.device_train}
work=${DEVICE_TRAIN_WORK:-/tmp/device_train}
out=${OUT:-/tmp/device_train_out}
PY=${PYTHON:-python3}
smoke=0
[ "${1:-}" = "--smoke" ] && smoke=1
export PYTHONUNBUFFERED=1 SLUICE_LIBOPUS="$pack/libopus.so.0" OMP_WAIT_POLICY=PASSIVE
mkdir -p "$out" "$work"
log="$out/device_train.txt"
: >"$log"
say() { echo "$@" | tee -a "$log"; }

say "## machine"
{ date -u; nvidia-smi -L 2>/dev/null || echo "no nvidia-smi"; nproc
  $PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())'; } 2>&1 | tee -a "$log"
[ -f "$pack/train.pack" ] || { say "device_train: no $pack/train.pack (run device_data.py pack here and carry it)"; exit 2; }
cat "$pack/manifest.json" >>"$log"

if (( smoke )); then
  copies=2 workers=2
  train_args=(--device cpu --threads 1 --max-steps 2 --batch-frames 3000 --log-every 1)
else
  copies=4 workers=$(nproc)
  # ~1,600 s of audio per step; bf16 autocast; the dense (sync-free) experts are train.py's
  # default on CUDA.
  train_args=(--device cuda --amp bf16 --batch-frames 160000 --lr 1.5e-3 --warmup 50 --log-every 10)
fi

say "## data (decode, augment x$copies, fbank) at ${SECONDS} s"
rm -rf "$work/data" "$work/run"
$PY tools/train/device_data.py unpack --pack "$pack" --out "$work/data" --copies "$copies" \
  --workers "$workers" 2>&1 | tee -a "$log"
# The asterisk prompts are the sets closest to calls: heard twice per epoch.
splits=$(ls "$work/data/shards" | grep '^train' | sed 's/^train_real$/train_real:2/' | paste -sd, -)

left=$(( budget - SECONDS - 45 ))
(( left > 60 )) || { say "device_train: ${left} s left for training: too little"; exit 3; }
hours=$($PY -c "print($left / 3600)")
say "## train on $splits for ${left} s at ${SECONDS} s"
set +e
$PY tools/train/train.py --data "$work/data" --out "$work/run" --init models/default \
  --train-splits "$splits" --epochs 100000 --lr-schedule time --hours-budget "$hours" \
  --checkpoint-min 100000 "${train_args[@]}" 2>&1 | tee -a "$log" | grep -v '"step"'
status=${PIPESTATUS[0]}
set -e
(( status == 0 )) || { say "device_train: train.py failed ($status)"; exit 4; }
cp "$work/run/log.jsonl" "$out/log.jsonl"
ck="$work/run/best.pt"
[ -f "$ck" ] || ck="$work/run/last.pt"
say "## export $ck at ${SECONDS} s"
$PY tools/train/export.py --ckpt "$ck" --out "$out/model" --dtype bf16 2>&1 | tee -a "$log"
rmdir "$out/model/golden" 2>/dev/null || true
grep '"dev"' "$out/log.jsonl" | tail -3 | tee -a "$log" || true
say "## done at ${SECONDS} s"

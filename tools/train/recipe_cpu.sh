#!/usr/bin/env bash
# The CPU fine-tune recipe of the default model, as run for issue 10 (no GPU lent): data, training,
# export with golden vectors, word LM, evaluation. Resumable: every step skips what it already has
# (make_data/real_data/uqm_data/fotaq_data/bass_data shards, train.py's last.pt).
#
#   tools/train/recipe_cpu.sh [--commercial] [--hours-budget H] [--out DIR] [--data DIR]
#                             [--tts-hours H] [--epochs N] [--weight SPLIT:W ...] [--nproc N]
#
#   --commercial     no non-commercial data: no The Ur-Quan Masters voice acting (uqm_data.py,
#                    CC BY-NC-SA) and make_data.py --commercial-only (drops the non-commercial
#                    RHVoice voices). Without it the model is for evaluation (see MODEL_CARD.md).
#   --hours-budget   train.py's wall-time limit (default 1.4 h: what a 3-hour session on 2 cores
#                    leaves); the LR schedule is --epochs (default 4) and the best dev-CER epoch
#                    is exported.
#   --tts-hours      hours of recording-based TTS (make_data.py --mix human; default 1). The
#                    test and dev sets do not change with it (same seed, same shards).
#   --weight S:W     how much of split S one epoch hears (train.py --train-splits S:W): e.g.
#                    train:1.5 or train_fotaq:0.4. Without weights every split is heard once,
#                    and the games' ~12 h drown the TTS and asterisk speech (session 26's run
#                    lost the phone recording's words that way).
#   --nproc N        train.py --nproc N --threads 1: N processes of one thread each (DDP over
#                    gloo), each step N batches; on this 2-core machine 2 processes trained
#                    44.2 utterances/s against 28.1 for one process of 2 threads (the same 24
#                    batches, median of 3 runs, session 28). Default 1 (one process, 2 threads:
#                    the runs before session 28, one batch per step).
# Needs: tools/setup.sh --train (voices, torch, contrib/non-free for the voice packages).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
commercial=0
budget=1.4
tts_hours=1
epochs=4
declare -A weight=()
data=data
out=runs/recipe_cpu
nproc=1
while (( $# )); do
  case "$1" in
    --commercial) commercial=1 ;;
    --hours-budget) budget=$2; shift ;;
    --out) out=$2; shift ;;
    --data) data=$2; shift ;;
    --tts-hours) tts_hours=$2; shift ;;
    --epochs) epochs=$2; shift ;;
    --nproc) nproc=$2; shift ;;
    --weight) [[ $2 == *:* ]] || { echo "recipe_cpu: --weight wants SPLIT:W, not $2" >&2; exit 2; }
              weight[${2%%:*}]=${2#*:}; shift ;;
    *) echo "recipe_cpu: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
splits=train,train_real
mix_args=(--mix human --hours "$tts_hours" --seed 3 --dev-utts 150 --test-utts 200 --workers 2)
if (( commercial )); then
  mix_args+=(--commercial-only)
else
  $PY tools/train/uqm_data.py --out "$data" --copies 2 --workers 2
  splits+=,train_uqm
fi
# The talkie games' voice acting (Debian main, freeware; both licences: may be given away and
# modified, redistributed marked as modified with attribution, not sold on their own; no
# non-commercial clause, so --commercial keeps them): real speech of ~36 and ~25 characters.
$PY tools/train/fotaq_data.py --out "$data" --copies 2 --workers 2
splits+=,train_fotaq
$PY tools/train/bass_data.py --out "$data" --copies 2 --workers 2
splits+=,train_bass
$PY tools/train/real_data.py --out "$data" --copies 3 --seed 3 --workers 2
$PY tools/train/make_data.py --out "$data" "${mix_args[@]}"

# Word LM: make_data's LM text plus the real-speech training transcripts, minus every sentence of
# a test split (the acoustic training keeps its few common lines, such as "goodbye").
mkdir -p "$out"
$PY - "$data" "$out/lm_corpus.txt" <<'EOF'
import glob, json, os, sys
data, dst = sys.argv[1], sys.argv[2]
def texts(splits):
    out = []
    for split in splits:
        for p in sorted(glob.glob(os.path.join(data, "shards", split, "*.json"))):
            out += [u["text"] for u in json.load(open(p))["utts"]]
    return out
test = set(texts(["test_clean", "test_phone", "test_unseen", "test_unseen_phone", "test_real",
                  "test_real_phone", "test_uqm", "test_uqm_phone", "test_fotaq", "test_fotaq_phone",
                  "test_bass", "test_bass_phone"]))
lines = [l.rstrip("\n") for l in open(os.path.join(data, "text", "lm_corpus.txt"))]
lines += list(dict.fromkeys(texts(["train_uqm", "train_real", "train_fotaq", "train_bass"])))
kept = [l for l in lines if l and l not in test]
open(dst, "w").write("\n".join(kept) + "\n")
print(f"lm corpus: {len(kept)} sentences ({len(lines) - len(kept)} dropped as test sentences)")
EOF
$PY tools/train/build_lm.py --corpus "$out/lm_corpus.txt" --out "$out/lm.arpa"

weighted=()
IFS=, read -ra split_list <<< "$splits"
for sp in "${split_list[@]}"; do
  weighted+=("$sp${weight[$sp]:+:${weight[$sp]}}")
  unset "weight[$sp]"
done
if (( ${#weight[@]} )); then
  echo "recipe_cpu: --weight names a split the recipe does not train on: ${!weight[*]}" >&2
  exit 2
fi
splits=$(IFS=,; echo "${weighted[*]}")
echo "recipe_cpu: training on $splits"
$PY tools/train/train.py --data "$data" --out "$out" --init models/default --train-splits "$splits" \
  --epochs "$epochs" --lr 6e-4 --warmup 100 --batch-frames 16000 --checkpoint-min 10 \
  --nproc "$nproc" --threads "$(( nproc > 1 ? 1 : 2 ))" \
  --hours-budget "$budget"
$PY tools/train/export.py --ckpt "$out/best.pt" --out "$out/model" \
  --golden-wavs "$(ls "$data"/audio/test_real/*/test_real-all-circuits-busy-now-0.wav | head -1)" \
                "$(ls "$data"/audio/test_unseen/*/test_unseen-00000-0000.wav | head -1)"
cp "$out/lm.arpa" "$out/model/lm.arpa"
eval_splits=test_unseen,test_unseen_phone,test_real,test_real_phone,test_fotaq,test_fotaq_phone
eval_splits+=,test_bass,test_bass_phone
(( commercial )) || eval_splits+=,test_uqm,test_uqm_phone
$PY tools/train/evaluate.py --model-dir "$out/model" --data "$data" --splits "$eval_splits" \
  --all-asterisk --threads 2 --json "$out/model/eval.json"
echo "recipe_cpu: model in $out/model; to make it the default: copy it over models/default and"
echo "write MODEL_CARD.md with tools/train/model_card.py (--baseline the old eval.json)"

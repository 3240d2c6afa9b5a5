#!/usr/bin/env bash
# Runs every libFuzzer target built in a fuzz build folder for a bounded time each.
#   tests/fuzz/run.sh <build dir> <seconds per target> [target names...]
# Each target starts from its committed seeds (tests/fuzz/corpus/<name>, never written to) plus
# what earlier runs found (<build dir>/fuzz_corpus/<name>); crashes, leaks, timeouts and
# out-of-memory inputs are saved as <build dir>/fuzz_artifacts/<name>/. Exits non-zero if any
# target found something, after running all of them.
set -uo pipefail
build=${1:?usage: run.sh <build dir> <seconds per target> [targets...]}
seconds=${2:?usage: run.sh <build dir> <seconds per target> [targets...]}
shift 2
# Per-input limits: a parser that takes a second or half a gigabyte on a few KB is a bug.
timeout_s=${FUZZ_TIMEOUT_S:-10}
rss_mb=${FUZZ_RSS_MB:-2048}

names=("$@")
if (( ${#names[@]} == 0 )); then
  for f in "$build"/fuzz_targets/*.txt; do names+=("$(basename "$f" .txt)"); done
fi
(( ${#names[@]} > 0 )) || { echo "fuzz: no targets in $build/fuzz_targets" >&2; exit 2; }

failed=()
for name in "${names[@]}"; do
  read -r bin seeds max_len < "$build/fuzz_targets/$name.txt"
  work="$build/fuzz_corpus/$name"
  artifacts="$build/fuzz_artifacts/$name"
  mkdir -p "$work" "$artifacts"
  echo "== fuzz $name: ${seconds}s, max_len $max_len, seeds $(ls "$seeds" | wc -l)"
  if ! "$bin" -max_total_time="$seconds" -max_len="$max_len" -timeout="$timeout_s" \
       -rss_limit_mb="$rss_mb" -print_final_stats=1 -artifact_prefix="$artifacts/" \
       "$work" "$seeds" > "$build/fuzz_$name.log" 2>&1; then
    failed+=("$name")
    tail -n 60 "$build/fuzz_$name.log"
    echo "fuzz: $name FAILED; inputs in $artifacts, log $build/fuzz_$name.log"
  else
    grep -E "^stat::number_of_executed_units|^stat::new_units_added|^stat::peak_rss_mb" \
      "$build/fuzz_$name.log" | tr '\n' ' '
    echo
  fi
done
if (( ${#failed[@]} > 0 )); then
  echo "fuzz: failures in ${failed[*]}"
  exit 1
fi
echo "fuzz: ${#names[@]} targets ran ${seconds}s each, nothing found"

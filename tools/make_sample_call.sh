#!/usr/bin/env bash
# Makes tests/data/sample_call_8k_mulaw_stereo.wav: a short synthetic call center conversation,
# agent on the left channel and customer on the right, as a softswitch records it
# (8 kHz, G.711 mu-law, stereo, with a little line noise). Rerun to regenerate; needs espeak-ng, sox.
set -euo pipefail
out=${1:-tests/data/sample_call_8k_mulaw_stereo.wav}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

turns=(
  "agent|Thank you for calling Northwind Bank, my name is Sarah. How can I help you today?"
  "customer|Hi, I was charged twice for the same payment on my credit card."
  "agent|I am sorry to hear that. Can you give me your account number please?"
  "customer|Sure, it is four seven one two, eight eight three zero."
  "agent|Thank you. I can see both charges of forty nine dollars. I will refund one of them today."
)
gap=0.6
i=0
for t in "${turns[@]}"; do
  who=${t%%|*}; text=${t#*|}
  voice=$([[ $who == agent ]] && echo "en-us+f3" || echo "en-us+m3")
  espeak-ng -v "$voice" -s 165 -w "$tmp/t$i.wav" "$text"
  sox "$tmp/t$i.wav" -r 8000 -c 1 "$tmp/s$i.wav" sinc 300-3400 pad 0 $gap
  # The other party is silent while this one speaks.
  sox "$tmp/s$i.wav" "$tmp/z$i.wav" vol 0
  if [[ $who == agent ]]; then
    sox -M "$tmp/s$i.wav" "$tmp/z$i.wav" "$tmp/p$i.wav"
  else
    sox -M "$tmp/z$i.wav" "$tmp/s$i.wav" "$tmp/p$i.wav"
  fi
  i=$((i + 1))
done
sox "$tmp"/p*.wav "$tmp/call.wav"
len=$(soxi -D "$tmp/call.wav")
sox -n -r 8000 -c 2 "$tmp/noise.wav" synth "$len" pinknoise vol 0.004
sox -m "$tmp/call.wav" "$tmp/noise.wav" -r 8000 -c 2 -e mu-law -b 8 "$out" pad 0.5 0.5
soxi "$out" >&2

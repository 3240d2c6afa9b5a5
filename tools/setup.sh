#!/usr/bin/env bash
# Installs every Debian 12 package sluice needs. Idempotent: when all are present it
# touches nothing and makes no network call.
#   tools/setup.sh            build + test dependencies
#   tools/setup.sh --train    also the Python training/reference stack (torch, torchaudio, TTS voices)
set -euo pipefail

build_pkgs=(
  build-essential cmake ninja-build ccache pkg-config git
  libcaf-dev libboost1.81-dev libopus-dev libopusfile-dev libspdlog-dev libfmt-dev
  doctest-dev libsoxr-dev libspeexdsp-dev libtomlplusplus-dev nlohmann-json3-dev
  libexpected-dev libopenblas-dev libopenblas0-pthread libsqlite3-dev libssl-dev
  clang libclang-rt-14-dev  # make fuzz: libFuzzer (clang 14's runtime)
  libsofia-sip-ua-dev libspandsp-dev  # net/sip: the SIP stack; G.722 and G.711 loss concealment
  libxml2-dev  # net/sip: SIPREC recording metadata
  libsentencepiece-dev  # moe: word-piece models' tokenizer (the model directory's pieces.model)
  libfftw3-dev  # dsp: the real FFT (VAD spectrum, fbank)
)
# Tools the test suite uses to make real audio at test time.
test_pkgs=( sox libsox-fmt-all espeak-ng opus-tools python3 python3-numpy fortunes fortunes-min wamerican
  python3-sentencepiece  # the independent reference of the C++ word-piece tokenizer's tests
  python3-soundfile  # tools/train/test_uqm_data.py cuts WAV/Ogg audio with it
  python3-prometheus-client chromium
  sip-tester  # SIPp: the real SIP peer of tests/net/sip
  baresip-core  # baresip: a real SIP phone placing a call into sluice (tests/net/sip)
  # The real RTSP peers of tests/net/rtsp: ffmpeg and GStreamer's rtspclientsink push to sluice;
  # gst-rtsp-server (through python3-gi) serves the stream sluice pulls.
  ffmpeg gstreamer1.0-tools gstreamer1.0-rtsp gstreamer1.0-plugins-base gstreamer1.0-plugins-good
  python3-gi python3-gst-1.0 gir1.2-gst-rtsp-server-1.0 )
train_pkgs=(
  python3 python3-torch python3-torchaudio python3-numpy python3-soundfile
  python3-sentencepiece  # word-piece output units (tools/train/pieces.py)
  flite festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts fortunes fortunes-min wamerican
  asterisk-core-sounds-en asterisk-core-sounds-en-wav asterisk-core-sounds-en-g722  # real human speech
  pocketsphinx-testdata  # independent evaluation only: never train or tune on it
  # TTS voices built from human recordings (contrib / non-free: see enable_train_components).
  rhvoice rhvoice-english libttspico-utils
  mbrola mbrola-us1 mbrola-us2 mbrola-us3 mbrola-en1
)
# contrib and non-free hold the MBROLA voices, RHVoice and pico. Only the training set-up enables
# them, in a file of their own, so the engine's run-time packages still come from main alone.
train_sources=/etc/apt/sources.list.d/sluice-train-contrib-nonfree.sources

want=( "${build_pkgs[@]}" "${test_pkgs[@]}" )
[[ "${1:-}" == "--train" ]] && want+=( "${train_pkgs[@]}" )

missing=()
for p in "${want[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=( "$p" )
done

# Real human speech for tools/train/test_fotaq_real.py (and fotaq_data.py): the talkie game's one
# data file, unpacked from its Debian package (main) without installing it (that would pull
# scummvm and a desktop stack). Fetched once; present, it makes no network call.
fotaq_pkg=flight-of-the-amazon-queen
fotaq_dir="${XDG_CACHE_HOME:-$HOME/.cache}/sluice/$fotaq_pkg"
fetch_fotaq() {
  [[ -f "$fotaq_dir/queen.1c" || -f /usr/share/scummvm/$fotaq_pkg/queen.1c ]] && return 0
  local tmp
  tmp=$(mktemp -d)
  if ! (cd "$tmp" && apt-get download -qq "$fotaq_pkg" >/dev/null 2>&1); then
    "${sudo_cmd[@]}" apt-get update -qq
    (cd "$tmp" && apt-get download -qq "$fotaq_pkg" >/dev/null)
  fi
  dpkg -x "$tmp"/"$fotaq_pkg"_*.deb "$tmp/x"
  mkdir -p "$fotaq_dir"
  # through a .part name in the same folder: an interrupted copy never looks complete
  mv "$tmp/x/usr/share/scummvm/$fotaq_pkg/queen.1c" "$fotaq_dir/queen.1c.part"
  mv "$fotaq_dir/queen.1c.part" "$fotaq_dir/queen.1c"
  rm -rf "$tmp"
  echo "setup: unpacked $fotaq_pkg's queen.1c into $fotaq_dir" >&2
}
# The same for tools/train/test_bass_real.py (and bass_data.py): Beneath a Steel Sky's three data
# files (66 MB package, main).
bass_pkg=beneath-a-steel-sky
bass_dir="${XDG_CACHE_HOME:-$HOME/.cache}/sluice/$bass_pkg"
fetch_bass() {
  [[ -f "$bass_dir/sky.cpt" || -f /usr/share/scummvm/$bass_pkg/sky.cpt ]] && return 0
  local tmp f
  tmp=$(mktemp -d)
  if ! (cd "$tmp" && apt-get download -qq "$bass_pkg" >/dev/null 2>&1); then
    "${sudo_cmd[@]}" apt-get update -qq
    (cd "$tmp" && apt-get download -qq "$bass_pkg" >/dev/null)
  fi
  dpkg -x "$tmp"/"$bass_pkg"_*.deb "$tmp/x"
  mkdir -p "$bass_dir"
  # sky.cpt last: fetch_bass takes its presence to mean all three are there.
  for f in sky.dnr sky.dsk sky.cpt; do
    mv "$tmp/x/usr/share/scummvm/$bass_pkg/$f" "$bass_dir/$f.part"
    mv "$bass_dir/$f.part" "$bass_dir/$f"
  done
  rm -rf "$tmp"
  echo "setup: unpacked $bass_pkg's sky.dnr, sky.dsk and sky.cpt into $bass_dir" >&2
}
sudo_cmd=()
[[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)

if (( ${#missing[@]} == 0 )); then
  fetch_fotaq
  fetch_bass
  exit 0
fi

# libboost-dev / libboost-all-dev (and python3-scipy, through pythran) pull Boost 1.74, which
# conflicts with the 1.81 that Beast needs: never install them.
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if [[ "${1:-}" == "--train" && ! -f "$train_sources" ]]; then
  echo "setup: enabling contrib and non-free for the training voices ($train_sources)" >&2
  "${sudo_cmd[@]}" tee "$train_sources" >/dev/null <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fetch_fotaq
fetch_bass
echo "setup: done" >&2

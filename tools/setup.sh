#!/usr/bin/env bash
# Installs every Debian 12 package sluice needs. Idempotent: when all are present it touches
# nothing and makes no network call.
#   tools/setup.sh            build + test dependencies
#   tools/setup.sh --train    also the Python training/reference stack (torch, torchaudio, TTS voices)
#                             and the games' data (below)
#   tools/setup.sh --test-data   also the games' data files for the real-speech tests (make test:
#                             fetch_game below; a game whose fetch failed is tried again next run)
set -euo pipefail

build_pkgs=(
  build-essential cmake ninja-build ccache pkg-config git
  libcaf-dev libboost1.81-dev libopus-dev libopusfile-dev libspdlog-dev libfmt-dev
  doctest-dev libsoxr-dev libspeexdsp-dev libtomlplusplus-dev nlohmann-json3-dev
  libexpected-dev libopenblas-dev libopenblas0-pthread libsqlite3-dev libssl-dev
  clang libclang-rt-14-dev  # make fuzz: libFuzzer (clang 14's runtime)
  libsofia-sip-ua-dev libspandsp-dev  # net/sip: the SIP stack; G.722 and G.711 loss concealment
  libxml2-dev  # net/sip: SIPREC recording metadata
  libsrtp2-dev  # net/sip: SRTP/SRTCP (RFC 3711) of SIP calls with SDES keys
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
game_data=0
[[ "${1:-}" == "--train" || "${1:-}" == "--test-data" ]] && game_data=1

missing=()
for p in "${want[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=( "$p" )
done

# Real human speech for tools/train/test_fotaq_real.py / test_bass_real.py (and fotaq_data.py,
# bass_data.py): the talkie games' data files, unpacked from their Debian packages (main) without
# installing them (that would pull scummvm and a desktop stack) into
# ${XDG_CACHE_HOME:-~/.cache}/sluice/PACKAGE/. Fetched once; present, they make no network call.
# fetch_game PACKAGE FILE... (the last file is written last: its presence means all are there)
fetch_game() {
  local pkg=$1
  shift
  local dir="${XDG_CACHE_HOME:-$HOME/.cache}/sluice/$pkg" last="${*: -1}" tmp f
  [[ -f "$dir/$last" || -f "/usr/share/scummvm/$pkg/$last" ]] && return 0
  tmp=$(mktemp -d) || return 1
  if ! (cd "$tmp" && apt-get download -qq "$pkg" >/dev/null 2>&1); then
    "${sudo_cmd[@]}" apt-get update -qq &&
      (cd "$tmp" && apt-get download -qq "$pkg" >/dev/null) || { rm -rf "$tmp"; return 1; }
  fi
  dpkg -x "$tmp/$pkg"_*.deb "$tmp/x" && mkdir -p "$dir" || { rm -rf "$tmp"; return 1; }
  for f in "$@"; do
    # through a .part name in the same folder: an interrupted copy never looks complete
    mv "$tmp/x/usr/share/scummvm/$pkg/$f" "$dir/$f.part" && mv "$dir/$f.part" "$dir/$f" ||
      { rm -rf "$tmp"; return 1; }
  done
  rm -rf "$tmp"
  echo "setup: unpacked $pkg's $* into $dir" >&2
}
# Not fatal: without the games' data the build and every other test still run; the real-data
# tests print why they skip.
fetch_game_data() {
  (( game_data )) || return 0
  local g
  for g in "flight-of-the-amazon-queen queen.1c" "beneath-a-steel-sky sky.dnr sky.dsk sky.cpt"; do
    # shellcheck disable=SC2086
    fetch_game $g || echo "setup: could not fetch ${g%% *}'s data: its real-data test will skip" >&2
  done
}
sudo_cmd=()
[[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)

if (( ${#missing[@]} == 0 )); then
  fetch_game_data
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
fetch_game_data
echo "setup: done" >&2

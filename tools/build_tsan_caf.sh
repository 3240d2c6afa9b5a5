#!/usr/bin/env bash
# Builds CAF 0.17.6 (libcaf_core, libcaf_io) with ThreadSanitizer, for `make tsan`.
#
# Why: Debian's libcaf_core.so is not built with -fsanitize=thread, so TSan cannot see the
# atomics CAF orders its mailboxes and scheduler queues with, and reports every message passed
# between two actors as a race. Built from Debian's own source package (the same upstream
# tarball Debian 12's libcaf-dev is built from, with the same build configuration: log level
# QUIET, no runtime checks), installed under PREFIX; `make tsan` compiles sluice against it.
#
#   tools/build_tsan_caf.sh PREFIX      idempotent: does nothing when PREFIX holds a finished build
#
# The source comes through apt with a private source list and state directory (the system's
# apt configuration is not touched): apt checks the signature of Debian's source index, and the
# tarball's SHA-256 is checked against that index here.
set -euo pipefail

prefix=$(realpath -m "${1:?usage: $0 PREFIX}")
version=0.17.6
stamp="$prefix/.sluice-tsan-caf-$version"
[[ -f "$stamp" ]] && exit 0

work="$prefix.work"
rm -rf "$work"
mkdir -p "$work/apt/lists/partial" "$work/apt/sources.d" "$work/dl"
cat > "$work/apt/sources.d/debian-src.sources" <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
apt_opts=(-o "Dir::Etc::SourceList=$work/apt/none.list" -o "Dir::Etc::SourceParts=$work/apt/sources.d"
          -o "Dir::State::Lists=$work/apt/lists" -o "APT::Sandbox::User=root")
echo "tsan-caf: fetching Debian's source index" >&2
# A source that cannot be fetched is "tsan-caf: cannot fetch" (CI skips TSan on it, visibly).
apt-get "${apt_opts[@]}" -qq update || { echo "tsan-caf: cannot fetch: apt-get update failed" >&2; exit 3; }

orig="actor-framework_${version}.orig.tar.gz"
want_sha=$(cd "$work/dl" && apt-get "${apt_opts[@]}" source --print-uris "actor-framework" |
           awk -v f="$orig" '$2 == f { sub(/^SHA256:/, "", $4); print $4 }')
[[ -n "$want_sha" ]] || { echo "tsan-caf: cannot fetch: Debian's source index has no $orig" >&2; exit 3; }
# The mirror may lack the small debian.tar.xz (packaging only, not needed for this build):
# apt then fails after fetching the tarball, which is checked by its hash below either way.
(cd "$work/dl" && apt-get "${apt_opts[@]}" -qq source --download-only "actor-framework" >/dev/null) ||
  echo "tsan-caf: apt-get source failed (above); checking whether the tarball came anyway" >&2
[[ -f "$work/dl/$orig" ]] || { echo "tsan-caf: cannot fetch: $orig did not come" >&2; exit 3; }
got_sha=$(sha256sum "$work/dl/$orig" | cut -d' ' -f1)
[[ "$got_sha" == "$want_sha" ]] || { echo "tsan-caf: $orig SHA-256 $got_sha, the index says $want_sha" >&2; exit 1; }

tar -xzf "$work/dl/$orig" -C "$work"
src="$work/actor-framework-$version"
echo "tsan-caf: building libcaf_core and libcaf_io with -fsanitize=thread into $prefix" >&2
# -include limits: receive_buffer.hpp uses std::numeric_limits without including <limits>, which
# GCC 12's headers no longer pull in indirectly (Debian's packaging patches this; only the
# upstream tarball is fetched here).
flags="-fsanitize=thread -O1 -g1 -fno-omit-frame-pointer"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
# Through ccache when there is one, as the rest of the tree: a second clean build of the same
# source in the same place (CI) is then mostly cache hits.
command -v ccache >/dev/null && gen+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S "$src" -B "$work/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=None -DCMAKE_INSTALL_PREFIX="$prefix" \
  -DCMAKE_CXX_FLAGS="$flags -include limits" -DCMAKE_C_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
  -DCAF_NO_EXAMPLES=yes -DCAF_NO_UNIT_TESTS=yes -DCAF_NO_TOOLS=yes -DCAF_NO_PYTHON=yes \
  -DCAF_NO_OPENCL=yes -DCAF_NO_OPENSSL=yes -DCAF_NO_SUMMARY=yes -DCAF_LOG_LEVEL=QUIET >/dev/null
cmake --build "$work/build" -j "$(nproc)"
cmake --install "$work/build" >/dev/null
rm -rf "$work"
touch "$stamp"
echo "tsan-caf: installed in $prefix" >&2

#!/bin/sh
# Packs what tools/bench/device_check.sh needs on the lent GPU machine, which has no Debian
# packages: the CUDA plugin, the GPU op tests, device_bench, engine_bench and the sluice binary (stripped),
# with every shared library they load from this machine except glibc's own and CUDA's (cudart,
# cuBLAS, NCCL come from the machine's CUDA toolkit / PyTorch), into .device_pack/pack.tar.xz
# (git-ignored; name .device_pack in the device tool's `carry`). Run here after `make build`.
#
#   sh tools/bench/device_pack.sh [BUILD_DIR]     (default build/release)
set -eu
build=${1:-build/release}
out=.device_pack
rm -rf "$out"
mkdir -p "$out/stage/bin" "$out/stage/lib"
cmake --build "$build" --target sluice_cuda sluice_gpu_tests device_bench engine_bench sluice
for f in kernels/libsluice_cuda.so tests/sluice_gpu_tests tools/bench/device_bench tools/bench/engine_bench tools/sluice; do
  cp "$build/$f" "$out/stage/bin/"
done
strip --strip-unneeded "$out"/stage/bin/*
for f in "$out"/stage/bin/*; do
  ldd "$f" | awk '/=> \// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*|libcuda.so.*) ;;
    libcudart.so.*|libcublas.so.*|libcublasLt.so.*|libnccl.so.*) ;;
    *) cp -L "$lib" "$out/stage/lib/" ;;
  esac
done
tar -C "$out/stage" -cJf "$out/pack.tar.xz" bin lib
rm -rf "$out/stage"
ls -la "$out/pack.tar.xz"

#!/usr/bin/env bash
# Packs the runtime build's libraries from this Debian machine into one
# prefix, for a GPU machine that has CMake, Ninja and nvcc but no package
# manager or network (the runtime-only build needs flatc and the flatbuffers
# headers, OpenBLAS, nlohmann-json, libzip, zlib and GoogleTest):
#   bench/gpu/pack_deps.sh DIR
# There, before bench/gpu/run.sh:
#   export CMAKE_PREFIX_PATH=DIR PATH=DIR/bin:$PATH LD_LIBRARY_PATH=DIR/lib
set -euo pipefail
out=${1:?usage: pack_deps.sh DIR}
arch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
inc=/usr/include
lib=/usr/lib/$arch
for f in /usr/bin/flatc $inc/flatbuffers/flatbuffers.h $inc/nlohmann/json.hpp \
         $inc/zlib.h $inc/zip.h $inc/zipconf.h $lib/libzip.so.4 \
         $inc/gtest/gtest.h $lib/libgtest.a $lib/libopenblas.so.0 \
         $inc/CLI/CLI.hpp /usr/share/cmake/CLI11/CLI11Config.cmake; do
  [ -e "$f" ] || { echo "pack_deps.sh: $f is missing: run scripts/install-deps.sh" >&2; exit 1; }
done
rm -rf "$out"
mkdir -p "$out/bin" "$out/include" "$out/lib"
cp -L /usr/bin/flatc "$out/bin/"
cp -rL $inc/flatbuffers $inc/nlohmann $inc/gtest $inc/gmock $inc/CLI "$out/include/"
# CLI11 (zrun's command line): headers and its relocatable CMake package.
mkdir -p "$out/share/cmake"
cp -rL /usr/share/cmake/CLI11 "$out/share/cmake/"
cp -L $inc/zlib.h $inc/zconf.h $inc/zip.h $inc/zipconf.h "$out/include/"
# OpenBLAS's cblas.h (Debian keeps it behind an alternatives link).
blas_inc=$(dirname "$(readlink -f $inc/$arch/cblas.h)")
cp -L "$blas_inc"/cblas.h "$blas_inc"/openblas_config.h "$out/include/"
# cudnn-frontend's headers (scripts/cudnn-frontend.sh) and cudnn.h, for
# the CUDA executor's cuDNN attention; libcudnn comes from the GPU machine.
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ -f "$root/.cache/cudnn-frontend/include/cudnn_frontend.h" ]; then
  mkdir -p "$out/cudnn-frontend"
  cp -r "$root/.cache/cudnn-frontend/include" "$out/cudnn-frontend/"
fi
cp -L $lib/libgtest.a $lib/libgtest_main.a $lib/libgmock.a $lib/libgmock_main.a "$out/lib/"
# Shared libraries under their sonames, with the link-time names beside them
# (libzip's libcrypto.so.3 is on every machine with OpenSSL 3).
for so in libopenblas.so.0 libgfortran.so.5 libquadmath.so.0 libz.so.1 \
          libzip.so.4 libbz2.so.1.0; do
  cp -L "$lib/$so" "$out/lib/"
done
ln -s libopenblas.so.0 "$out/lib/libopenblas.so"
ln -s libz.so.1 "$out/lib/libz.so"
ln -s libzip.so.4 "$out/lib/libzip.so"
du -sh "$out"

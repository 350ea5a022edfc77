#!/bin/sh
# tools/gpu-check packs every CUDA test program it names from this build, so a test that moved or
# was renamed fails here, in every CI run, rather than on the rare day a GPU is lent.
#   gpu_check_pack_test.sh SOURCE_DIR BUILD_DIR
set -eu
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$1"
tools/gpu-check pack "$dir" "$2" >/dev/null
for t in cuda_device_test cuda_differential_test index_fusion_test reduce_fusion_test; do
  test -x "$dir/bin/$t" || { echo "gpu-check pack left out $t" >&2; exit 1; }
done

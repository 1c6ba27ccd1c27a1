# Sourced by the GPU run scripts (bench/gpu/*_run.sh) on the GPU machine:
#   . gpu_env.sh <bundle dir>
# LD_LIBRARY_PATH gets the bundle's lib/, NVRTC 13 from the CUDA toolkit and the driver's
# libcuda where ldconfig does not know it; Python runs unbuffered; kernels go to a fresh cache;
# BIN is the bundle's bin/ and OUT ($OUT, else <bundle>/out) exists.
BIN=$1/bin
OUT=${OUT:-$1/out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$1/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
  if [ -e "$d/libnvrtc.so.13" ]; then LD_LIBRARY_PATH+=":$d"; break; fi
done
if ! ldconfig -p | grep -q "libcuda.so.1 "; then
  for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu; do
    if [ -e "$d/libcuda.so.1" ]; then LD_LIBRARY_PATH+=":$d"; break; fi
  done
fi
export LD_LIBRARY_PATH PYTHONUNBUFFERED=1
KILN_CACHE_DIR=$(mktemp -d /tmp/kiln-cache.XXXXXX)
export KILN_CACHE_DIR

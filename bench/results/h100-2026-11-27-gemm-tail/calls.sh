#!/usr/bin/env bash
# Device calls of this folder's README: `bash calls.sh N` from the bundle folder (bundle-att/,
# carried to the GPU machine, with this file, mm_ncu_torch.py and bench/gpu/{mm_sweep_torch,
# attention_torch}.py copied beside run_on_gpu.sh); each call writes $OUT/call<N>.log.
cd "$(dirname "$0")"
export OUT=${OUT:-/tmp/out}; mkdir -p $OUT
. ./run_on_gpu.sh --env
set +u
f() { grep -E "^\[  FAILED|Failure|PASSED|tests ran|Expected|Which|HUNG" | head -20; }
NCU_METRICS=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.avg,sm__cycles_active.min,sm__cycles_active.max,launch__grid_size,launch__block_size,launch__cluster_dim_x,launch__cluster_dim_y,launch__shared_mem_per_block_dynamic,launch__registers_per_thread
ncu_show() { grep -E "Context|gpu__time|per_second|gmma|cycles_active|launch__" "$1" | sed "s/  */ /g" | head -24; }

# Where 4096^3 loses to cuBLAS: the epilogue without per-element bounds checks where the tiles
# divide the result (default) against with them (a local build reading KILN_X_BOUNDS), MM4096 and
# W5 twice in alternation, torch in the same call; then Nsight Compute on cuBLAS's 4096^3 kernel
# and kiln's (MM4096, W5's two GEMMs): duration, clock, tensor-pipe time, how evenly the SMs are
# busy (sm__cycles_active min / avg / max: the tail wave), grid and cluster.
call1() {
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  timeout 120 bin/cuda_test --gtest_filter='GemmSm90Run.*' > $OUT/first.log 2>&1
  rc=$?; echo "first run exit $rc"; f < $OUT/first.log
  if [ $rc -eq 124 ]; then echo HUNG; return 1; fi
  for rep in 1 2; do
    timeout 100 bin/anchor_bench --device cuda --only MM4096,MM8192,W5 2>&1 | grep -E "^(MM|W5)" | grep -v realize | cut -c1-70 | sed "s/^/[whole $rep] /"
    KILN_X_BOUNDS=1 timeout 100 bin/anchor_bench --device cuda --only MM4096,MM8192,W5 2>&1 | grep -E "^(MM|W5)" | grep -v realize | cut -c1-70 | sed "s/^/[checks $rep] /"
  done
  timeout 120 python3 mm_sweep_torch.py MM4096 MM8192 2>&1 | grep -v RESULT
  timeout 120 python3 -u anchors/wl_torch.py W5 > $OUT/w5_torch.log 2>&1; grep -oE '"var": "[a-z-]+"|"ms": [0-9.]+' $OUT/w5_torch.log | paste - - | head -4
  timeout 120 ncu --kernel-name regex:'gemm|nvjet|xmma|cutlass|sm90' --launch-skip 20 --launch-count 1 --metrics $NCU_METRICS \
    python3 mm_ncu_torch.py MM4096 > $OUT/ncu_torch4096.txt 2>&1
  echo "--- ncu torch.mm 4096"; ncu_show $OUT/ncu_torch4096.txt
  timeout 120 ncu --kernel-name regex:kiln_k0 --launch-skip 3 --launch-count 1 --metrics $NCU_METRICS \
    bin/anchor_bench --device cuda --only MM4096 > $OUT/ncu_kiln4096.txt 2>&1
  echo "--- ncu kiln MM4096"; ncu_show $OUT/ncu_kiln4096.txt
  timeout 120 ncu --kernel-name regex:'kiln_k[01]_dot' --launch-skip 6 --launch-count 2 --metrics $NCU_METRICS \
    bin/anchor_bench --device cuda --only W5 > $OUT/ncu_kilnw5.txt 2>&1
  echo "--- ncu kiln W5"; ncu_show $OUT/ncu_kilnw5.txt
}

case "$1" in
1) call1 2>&1 | tee $OUT/call1.log ;;
esac

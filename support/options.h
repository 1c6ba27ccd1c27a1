// Every environment variable kiln reads, parsed in this one place.
//
// options() reads the environment on each call (a few getenv calls): tests and tools change
// variables between realizes, and each compile or device creation sees the values of that
// moment. Hot paths (a replayed run) do not call it. A malformed number keeps its default, is
// reported once on stderr and listed in `invalid`; where a wrong default would do the wrong
// thing (a device index) the reader turns it into an error with check(), so
// `KILN_VULKAN_DEVICE=x` fails with a message instead of picking device 0.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace kiln::support {

struct Options {
  // --- debugging (README: Debugging)
  int debug = 0;                 // KILN_DEBUG: 1 kernels and times, 2 fusion, 3 IR per pass, 4 sources
  std::string dump_dir;          // KILN_DUMP_DIR: every stage to files ("" = off)
  bool dump_svg = true;          // KILN_DUMP_SVG=0: Graphviz .dot files without running dot on them
  bool fusion = true;            // KILN_FUSION=0: one kernel per primitive
  std::string device;            // KILN_DEVICE: the default device's name ("" = best available)

  // --- the kernel cache on disk (runtime/disk_cache.h)
  // KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln; "" when KILN_DISK_CACHE=0
  // or no location is known.
  std::string cache_dir;
  std::string profile;  // KILN_PROFILE: a Chrome trace of the whole run is written there at exit
  // KILN_PEAK_GBPS, KILN_PEAK_GFLOPS, KILN_PEAK_MATRIX_GFLOPS: the device's peaks for profiles'
  // rooflines, replacing what kiln reads or measures (0: keep kiln's).
  int peak_gbps = 0, peak_gflops = 0, peak_matrix_gflops = 0;
  // KILN_CACHE_BYTES: device bytes (arenas) the in-memory executable cache may hold; beyond it the
  // least recently used executables are dropped (suffixes K, M, G accepted).
  int64_t cache_bytes = int64_t(4) << 30;

  // --- GPU renderer knobs (codegen/c_family)
  bool gpu_shuffle = true;       // KILN_GPU_SHUFFLE=0: reductions through shared memory only
  bool gpu_row_cache = true;     // KILN_GPU_ROW_CACHE=0: row reductions re-read the row per pass
  bool gpu_subgroup_rows = true; // KILN_GPU_SUBGROUP_ROWS=0: short rows take a workgroup each, not a subgroup
  bool chain_reduce = true;  // KILN_CHAIN_REDUCE=0: a split reduction's partials are folded by a kernel of their own (passes/chain_reduce.h)
  bool gpu_column_tiles = true;  // KILN_GPU_COLUMN_TILES=0: column reductions take a thread per output
  bool gpu_row_vec4 = true;      // KILN_GPU_ROW_VEC4=0: long contiguous rows are read 4 bytes at a time
  int gpu_column_groups = 0;     // KILN_GPU_COLUMN_GROUPS: groups of 32 threads per column tile (comparisons; 0: the fewest of 8, 16, 32 giving half a wave of threads)
  int column_split_outputs = 0;  // KILN_COLUMN_SPLIT_OUTPUTS: GPU column reductions split below this many outputs per multiprocessor (comparisons; 0: 128)
  // KILN_GPU_SEGMENTS=thread|block|queue: how a segment_reduce kernel maps segments to threads
  // (codegen/c_family/segment.cc; "" = by row width), for comparisons.
  std::string gpu_segments;
  int gpu_segments_grid = 0;
  int split_k_chunk = 0;         // KILN_SPLIT_K_CHUNK: smallest k chunk of a split-K f32/f64 dot on GPUs (comparisons; 0: 128)     // KILN_GPU_SEGMENTS_GRID: at most this many blocks of the queue kernel (tests; 0: as many as fit)

  // --- process groups (dist/)
  // KILN_DIST_TIMEOUT: seconds a rank waits for the others of its group to join a collective
  // (or to start) before the collective fails with DeadlineExceeded naming the missing ranks.
  int dist_timeout_s = 300;
  std::string mpi_library;       // KILN_MPI_LIBRARY: the MPI library to open (default libmpi.so.40, Open MPI)

  // --- CUDA (backends/cuda)
  int cuda_device = 0;           // KILN_CUDA_DEVICE
  // Folders to look for the CUDA headers NVRTC needs, in order: $KILN_CUDA_INCLUDE,
  // $CUDA_HOME/include, $CUDA_PATH/include (the build's toolkit is tried after these).
  std::vector<std::string> cuda_include_dirs;
  // The Hopper contraction path (codegen/c_family/contraction_sm90.cc) and its variants, for
  // comparisons (bench/results/h100-2026-11-23-gemm):
  bool cuda_sm90_gemm = true;    // KILN_CUDA_SM90_GEMM=0: contractions keep the mma.sync kernel
  int cuda_sm90_bn = 0;          // KILN_CUDA_SM90_BN=64|128|256: force a tile width (default: by shape)
  int cuda_sm90_bk = 64;         // KILN_CUDA_SM90_BK=32: 32-deep stages (64B swizzle, twice as many)
  int cuda_sm90_wait = 1;        // KILN_CUDA_SM90_WAIT=0: wait for each k block's wgmma
  int cuda_sm90_cluster = 1;     // KILN_CUDA_SM90_CLUSTER=2: pairs of m-tiles share the rhs tile (multicast)
  std::string cuda_sm90_schedule;  // KILN_CUDA_SM90_SCHEDULE=pingpong: warpgroups take turns on 128x128 tiles
  int cuda_sm90_grid = 0;        // KILN_CUDA_SM90_GRID: at most this many CTAs (tests; 0: one per SM)
  bool cuda_sm90_staged = true;  // KILN_CUDA_SM90_STAGED=0: epilogue stores straight from registers
  // KILN_CUDA_SM90_TMA_STORE: how a staged epilogue stores: 0 by 16-byte st.global, 1 by TMA at
  // any k; unset (-1): by TMA where k >= 512.
  int cuda_sm90_tma_store = -1;
  int cuda_sm90_tma_buffers = 0;     // KILN_CUDA_SM90_TMA_BUFFERS=2|4: the TMA epilogue's chunk buffers per warpgroup (0: by k)
  // KILN_CUDA_SM90_STREAMK: 0 never, 1 wherever the tiles are no multiple of the grid; unset (-1):
  // where the last wave leaves 1% or more of the run idle and k has 8 blocks or more.
  int cuda_sm90_stream_k = -1;
  int cuda_sm90_group = 8;       // KILN_CUDA_SM90_GROUP: m-tiles per group of the tile order
  bool simt_runs = true;  // KILN_SIMT_RUNS=0: the SIMT contraction keeps strided rows and columns at every k (comparisons)
  bool cuda_cp_async = true;     // KILN_CUDA_CP_ASYNC=0: bf16/f16 mma.sync contractions stage operands through registers
  bool vulkan_coop_matrix = true;  // KILN_VULKAN_COOP_MATRIX=0: Vulkan devices open without cooperative matrices
  int vulkan_coop_warps = 4;  // KILN_VULKAN_COOP_WARPS=8: subgroups per cooperative-matrix tile (64x32 each)
  int vulkan_coop_bk = 32;    // KILN_VULKAN_COOP_BK=64: k per block (one shared stage instead of two)
  // KILN_VULKAN_TRANSFER_QUEUE: 1 (default) uploads on the device's copy-engine queue where it has
  // one; 0 on the compute queue; 2 on the compute queue with the copy queue's own timeline (tests
  // the bookkeeping on any device).
  int vulkan_transfer_queue = 1;
  // KILN_VULKAN_LOOP_BATCH: trips of a device loop recorded into one submission where the device
  // has conditional rendering (dispatches skipped once the condition fails; the host reads the
  // condition back after each batch). 1: one submission and read-back per trip.
  int vulkan_loop_batch = 16;
  int cuda_attention_rows = 128;  // KILN_CUDA_ATTENTION_ROWS=64: queries per fused-attention block (mma.sync kernel)
  bool cuda_sm90_attention = true;  // KILN_CUDA_SM90_ATTENTION=0: attention keeps the mma.sync kernel on sm_90
  std::string cuda_sm90_attention_schedule;  // KILN_CUDA_SM90_ATTENTION_SCHEDULE=plain|pipelined|pingpong
  int cuda_sm90_attention_cluster = 1;  // KILN_CUDA_SM90_ATTENTION_CLUSTER=2: block pairs share k/v tiles (multicast)
  bool cuda_copy_stream = true;  // KILN_CUDA_COPY_STREAM=0: uploads on the compute stream (for comparisons)
  // KILN_COMPILE_THREADS: threads one program's compile may use (NVRTC's --split-compile, Vulkan's
  // kernels and the CPU's LLVM modules compiled side by side); 0 (default): every hardware
  // thread, 1: one.
  int compile_threads = 0;
  int copy_threads = 0;  // KILN_COPY_THREADS: threads of a large host copy (support/copy_bytes.h; 0: half the hardware threads, at most 8)
  // KILN_AUTOTUNE=1: kernels with code variants get the fastest measured on the device, kept on
  // disk per device and shape class (replay/autotune.h); default 0: the heuristics decide.
  bool autotune = false;

  // --- Vulkan (backends/vulkan)
  int vulkan_device = -1;        // KILN_VULKAN_DEVICE (-1: discrete GPU, then integrated, then CPU)
  bool vulkan_validation = false;  // KILN_VULKAN_VALIDATION=1
  bool vulkan_spirv_opt = true;    // KILN_VULKAN_SPIRV_OPT=0 skips the SPIRV-Tools optimizer
  int vulkan_in_flight = 64;       // KILN_VULKAN_IN_FLIGHT: runs of one executable in flight
  int vulkan_spin_us = -1;         // KILN_VULKAN_SPIN_US: host waits poll this long before blocking
                                   // (-1: 50 on GPUs, 0 on CPU devices, whose threads need the cores)
  bool vulkan_queue_order = true;  // KILN_VULKAN_QUEUE_ORDER=0: order runs by semaphore waits
  bool vulkan_skip_done_waits = true;  // KILN_VULKAN_SKIP_DONE_WAITS=0: submissions keep waits already satisfied (comparisons)
  int vulkan_drop_barrier = -1;    // KILN_VULKAN_DROP_BARRIER (test hook): omit this step's barrier
  // KILN_VULKAN_BATCH: runs issued while the GPU is busy wait to be handed to the driver together,
  // up to this many per vkQueueSubmit (1: each run is submitted at once).
  int vulkan_batch = 16;
  // KILN_VULKAN_REUSE_BYTES: bytes of freed device buffers Vulkan keeps for reuse in stream order
  // (default 2 GiB; 0: every buffer is freed once the GPU is done with it).
  int64_t vulkan_reuse_bytes = int64_t(2) << 30;
  // KILN_VULKAN_BATCH_HOLD (test hook): 1: batched runs wait for a full batch or a host wait; 2:
  // also for the Context's flusher thread, never handed over by the submitting thread.
  int vulkan_batch_hold = 0;
  std::string vulkan_loader;       // KILN_VULKAN_LOADER: the libvulkan to dlopen
  // KILN_HIP_SKIP_KFD_CHECK=1 (test hook): the hip device looks for the HIP runtime even without
  // /dev/kfd (tests/hip/runtime_test.cc runs it against a stand-in libamdhip64).
  bool hip_skip_kfd_check = false;

  // Variables whose value could not be parsed: name -> the value seen.
  std::map<std::string, std::string, std::less<>> invalid;

  // Whether compilers keep generated source and assembly for dumps (KILN_DUMP_DIR or KILN_DEBUG>=4).
  bool keep_sources() const { return !dump_dir.empty() || debug >= 4; }
  // InvalidArgument naming the variable when its value could not be parsed, else OK.
  absl::Status check(std::string_view variable) const;
};

// The options in the environment now.
Options options();
// KILN_DEBUG alone and KILN_FUSION alone (one getenv each: cheap enough for every replay).
int debug_level();
bool fusion_enabled();

}  // namespace kiln::support

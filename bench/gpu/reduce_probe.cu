// A design probe for issue 18's W4 target (95% of the copy ceiling): hand-written CUDA variants
// of W4a (sum of 2^26 floats) and W4b (mean over axis 0 of 16384 x 4096) with the shapes kiln's
// split pass gives today, beside single-pass alternatives, timed back to back with CUDA events on
// the GPU machine (`nvcc -O3 -arch=sm_90 reduce_probe.cu && ./a.out`). Not part of kiln: it
// decides which kernel shape the renderer should emit before the renderer is changed.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <vector>

#define CK(x)                                                                    \
  do {                                                                           \
    cudaError_t e = (x);                                                         \
    if (e != cudaSuccess) {                                                      \
      std::printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e));      \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

constexpr int R = 16384, C = 4096;
constexpr long N = 1L << 26;

// ---------------------------------------------------------------- W4a
// Today: 512 rows of 131072 by 1024-thread blocks, then one block sums 512 partials.
__global__ void a_rows(const float* x, float* part) {
  float acc = 0;
  const float* row = x + long(blockIdx.x) * 131072;
  for (int i = threadIdx.x; i < 131072; i += 1024) acc += row[i];
  for (int m = 16; m; m /= 2) acc += __shfl_xor_sync(~0u, acc, m);
  __shared__ float s[32];
  if (threadIdx.x % 32 == 0) s[threadIdx.x / 32] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    acc = s[threadIdx.x];
    for (int m = 16; m; m /= 2) acc += __shfl_xor_sync(~0u, acc, m);
    if (threadIdx.x == 0) part[blockIdx.x] = acc;
  }
}
__device__ float block_sum(float acc) {
  __shared__ float s[32];
  for (int m = 16; m; m /= 2) acc += __shfl_xor_sync(~0u, acc, m);
  if (threadIdx.x % 32 == 0) s[threadIdx.x / 32] = acc;
  __syncthreads();
  float r = 0;
  if (threadIdx.x < 32) {
    r = threadIdx.x < blockDim.x / 32 ? s[threadIdx.x] : 0.f;
    for (int m = 16; m; m /= 2) r += __shfl_xor_sync(~0u, r, m);
  }
  __syncthreads();
  return r;  // valid in warp 0
}
__global__ void a_final(const float* part, int n, float* out) {
  float acc = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) acc += part[i];
  float r = block_sum(acc);
  if (threadIdx.x == 0) *out = r;
}
// Single pass: the same rows, then the last block to finish (a ticket) sums the partials in order.
template <bool V4>
__global__ void a_last(const float* x, float* part, unsigned* ticket, float* out) {
  float acc = 0;
  if (V4) {
    const float4* row = reinterpret_cast<const float4*>(x + long(blockIdx.x) * 131072);
    for (int i = threadIdx.x; i < 131072 / 4; i += 1024) {
      float4 v = row[i];
      acc += (v.x + v.y) + (v.z + v.w);
    }
  } else {
    const float* row = x + long(blockIdx.x) * 131072;
    for (int i = threadIdx.x; i < 131072; i += 1024) acc += row[i];
  }
  float r = block_sum(acc);
  __shared__ bool last;
  if (threadIdx.x == 0) {
    part[blockIdx.x] = r;
    __threadfence();
    last = atomicAdd(ticket, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  acc = 0;
  for (int i = threadIdx.x; i < gridDim.x; i += blockDim.x) acc += __ldcg(part + i);
  r = block_sum(acc);
  if (threadIdx.x == 0) {
    *out = r;
    *ticket = 0;
  }
}

// ---------------------------------------------------------------- W4b
// Today: thread per (column, chunk of 256 rows), 64 chunks; then a thread... (kiln: a subgroup)
// per column sums 64 partials.
__global__ void b_part(const float* x, float* part) {
  int o = blockIdx.x * 256 + threadIdx.x;  // 262144 threads
  int col = o % C, p = o / C;
  float acc = 0;
  for (int r = 0; r < 256; ++r) acc += x[long(p * 256 + r) * C + col];
  part[col * 64 + p] = acc;
}
__global__ void b_fin(const float* part, float* out) {
  int col = blockIdx.x * 8 + threadIdx.x / 32, lane = threadIdx.x % 32;
  float acc = part[col * 64 + lane] + part[col * 64 + lane + 32];
  for (int m = 16; m; m /= 2) acc += __shfl_xor_sync(~0u, acc, m);
  if (lane == 0) out[col] = acc * (1.f / R);
}
// The same partials, 4 columns per thread (16-byte loads), partials laid [p][col].
__global__ void b_part4(const float* x, float* part, int P) {
  int o = blockIdx.x * 256 + threadIdx.x;
  int q = o % (C / 4), p = o / (C / 4);
  int rows = R / P;
  float4 acc = {0, 0, 0, 0};
  const float4* xv = reinterpret_cast<const float4*>(x);
  for (int r = 0; r < rows; ++r) {
    float4 v = xv[long(p * rows + r) * (C / 4) + q];
    acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
  }
  reinterpret_cast<float4*>(part)[long(p) * (C / 4) + q] = acc;
}
__global__ void b_fin_cols(const float* part, int P, float* out) {
  int col = blockIdx.x * 256 + threadIdx.x;
  float acc = 0;
  for (int p = 0; p < P; ++p) acc += part[long(p) * C + col];
  out[col] = acc * (1.f / R);
}
// One pass: a block of TC columns x W warps-worth of row groups; rows split W ways, then a shared
// combine in fixed order. Grid C / TC.
template <int TC, int W>
__global__ void b_one(const float* x, float* out, int R = ::R, int C = ::C) {
  int lane = threadIdx.x % TC, g = threadIdx.x / TC;
  int col = blockIdx.x * TC + lane;
  float acc = 0;
#pragma unroll 8
  for (int r = g; r < R; r += W) acc += x[long(r) * C + col];
  __shared__ float s[W][TC + 1];
  s[g][lane] = acc;
  __syncthreads();
  if (g == 0) {
    float t = 0;
    for (int k = 0; k < W; ++k) t += s[k][lane];
    out[col] = t * (1.f / ::R);
  }
}
// Today's W4a with 16-byte loads in the rows kernel.
__global__ void a_rows4(const float* x, float* part) {
  float acc = 0;
  const float4* row = reinterpret_cast<const float4*>(x + long(blockIdx.x) * 131072);
  for (int i = threadIdx.x; i < 131072 / 4; i += 1024) {
    float4 v = row[i];
    acc += (v.x + v.y) + (v.z + v.w);
  }
  float r = block_sum(acc);
  if (threadIdx.x == 0) part[blockIdx.x] = r;
}
// Split with a last-block finish per column tile: block (tile, p) of 256 threads (TC=256 columns,
// one per thread) or 64 threads x 4 columns; the last of the P blocks of a tile sums its columns.
template <bool V4>
__global__ void b_last(const float* x, float* part, unsigned* tickets, float* out, int P) {
  constexpr int TC = V4 ? 1024 : 256;
  int tiles = C / TC;
  int tile = blockIdx.x % tiles, p = blockIdx.x / tiles;
  int rows = R / P;
  if (V4) {
    int q = tile * 256 + threadIdx.x;
    float4 acc = {0, 0, 0, 0};
    const float4* xv = reinterpret_cast<const float4*>(x);
#pragma unroll 4
    for (int r = 0; r < rows; ++r) {
      float4 v = xv[long(p * rows + r) * (C / 4) + q];
      acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
    }
    reinterpret_cast<float4*>(part)[long(p) * (C / 4) + q] = acc;
  } else {
    int col = tile * 256 + threadIdx.x;
    float acc = 0;
#pragma unroll 4
    for (int r = 0; r < rows; ++r) acc += x[long(p * rows + r) * C + col];
    part[long(p) * C + col] = acc;
  }
  __threadfence();
  __syncthreads();
  __shared__ bool last;
  if (threadIdx.x == 0) last = atomicAdd(tickets + tile, 1u) == unsigned(P - 1);
  __syncthreads();
  if (!last) return;
  __threadfence();
  for (int c = threadIdx.x; c < TC; c += 256) {
    int col = tile * TC + c;
    float t = 0;
    for (int k = 0; k < P; ++k) t += __ldcg(part + long(k) * C + col);
    out[col] = t * (1.f / R);
  }
  if (threadIdx.x == 0) tickets[tile] = 0;
}

// ---------------------------------------------------------------- harness
template <class F>
float time_ms(F f, int iters = 200) {
  for (int i = 0; i < 20; ++i) f();
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  CK(cudaEventRecord(a));
  for (int i = 0; i < iters; ++i) f();
  CK(cudaEventRecord(b));
  CK(cudaEventSynchronize(b));
  float ms;
  CK(cudaEventElapsedTime(&ms, a, b));
  CK(cudaGetLastError());
  return ms / iters;
}

int main() {
  float *x, *y, *part, *out;
  unsigned* tickets;
  CK(cudaMalloc(&x, N * 4));
  CK(cudaMalloc(&y, N * 4));
  CK(cudaMalloc(&part, 16 << 20));
  CK(cudaMalloc(&out, 16384 * 4));
  CK(cudaMalloc(&tickets, 4096));
  CK(cudaMemset(tickets, 0, 4096));
  std::vector<float> h(N);
  for (long i = 0; i < N; ++i) h[i] = float((i * 7919) % 1000) / 1000.f - 0.5f;
  CK(cudaMemcpy(x, h.data(), N * 4, cudaMemcpyHostToDevice));
  // Ceiling: device-to-device copy of the same bytes (read + write).
  float cp = time_ms([&] { cudaMemcpyAsync(y, x, N * 4, cudaMemcpyDeviceToDevice); });
  double ceil_gbs = 2.0 * N * 4 / (cp * 1e6);
  std::printf("copy 256 MiB: %.4f ms, ceiling %.0f GB/s\n", cp, ceil_gbs);
  auto report = [&](const char* name, float ms) {
    double gbs = N * 4 / (ms * 1e6);
    std::printf("%-40s %.4f ms %6.0f GB/s %5.1f%%\n", name, ms, gbs, 100 * gbs / ceil_gbs);
  };
  // Reference values.
  double sa = 0;
  for (long i = 0; i < N; ++i) sa += h[i];
  std::vector<double> sb(C, 0);
  for (long i = 0; i < N; ++i) sb[i % C] += h[i];
  auto check_a = [&](const char* name) {
    float v;
    CK(cudaMemcpy(&v, out, 4, cudaMemcpyDeviceToHost));
    if (std::fabs(v - sa) > 1e-3 * (1 + std::fabs(sa))) std::printf("  %s WRONG: %f vs %f\n", name, v, sa);
  };
  auto check_b = [&](const char* name) {
    std::vector<float> v(C);
    CK(cudaMemcpy(v.data(), out, C * 4, cudaMemcpyDeviceToHost));
    for (int c = 0; c < C; ++c)
      if (std::fabs(v[c] - sb[c] / R) > 1e-4) {
        std::printf("  %s WRONG at %d: %f vs %f\n", name, c, v[c], sb[c] / R);
        break;
      }
  };
  for (int rep = 0; rep < 2; ++rep) {
    report("W4a two kernels (today)", time_ms([&] { a_rows<<<512, 1024>>>(x, part); a_final<<<1, 512>>>(part, 512, out); }));
    check_a("a2");
    report("W4a last block", time_ms([&] { a_last<false><<<512, 1024>>>(x, part, tickets, out); }));
    check_a("alast");
    report("W4a last block float4", time_ms([&] { a_last<true><<<512, 1024>>>(x, part, tickets, out); }));
    check_a("alast4");
    report("W4b two kernels (today)", time_ms([&] { b_part<<<1024, 256>>>(x, part); b_fin<<<512, 256>>>(part, out); }));
    check_b("b2");
    for (int P : {16, 32, 64}) {
      char nm[80];
      std::snprintf(nm, sizeof nm, "W4b two kernels float4 P=%d", P);
      report(nm, time_ms([&] { b_part4<<<P * 4, 256>>>(x, part, P); b_fin_cols<<<16, 256>>>(part, P, out); }));
      check_b(nm);
      std::snprintf(nm, sizeof nm, "W4b last block P=%d", P);
      report(nm, time_ms([&] { b_last<false><<<16 * P, 256>>>(x, part, tickets, out, P); }));
      check_b(nm);
      std::snprintf(nm, sizeof nm, "W4b last block float4 P=%d", P);
      report(nm, time_ms([&] { b_last<true><<<4 * P, 256>>>(x, part, tickets, out, P); }));
      check_b(nm);
    }
    report("W4b one pass 32 cols x 32 warps", time_ms([&] { b_one<32, 32><<<C / 32, 1024>>>(x, out); }));
    check_b("one32x32");
    report("W4b one pass 32 cols x 8 warps", time_ms([&] { b_one<32, 8><<<C / 32, 256>>>(x, out); }));
    report("W4a two kernels float4 rows", time_ms([&] { a_rows4<<<512, 1024>>>(x, part); a_final<<<1, 512>>>(part, 512, out); }));
    check_a("a2v4");
    for (int cols : {1024, 2048, 3072, 8192, 16384}) {
      char nm[80];
      std::snprintf(nm, sizeof nm, "one pass 32x32, %d cols x %ld rows", cols, N / cols);
      report(nm, time_ms([&] { b_one<32, 32><<<cols / 32, 1024>>>(x, out, int(N / cols), cols); }));
    }
    report("W4b one pass 16 cols x 64", time_ms([&] { b_one<16, 64><<<C / 16, 1024>>>(x, out); }));
    check_b("one16x64");
  }
  return 0;
}

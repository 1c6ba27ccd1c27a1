// A stand-in libcuda.so.1 for testing how kiln reports a missing or unusable driver without a
// GPU. $KILN_FAKE_CUDA_MODE picks the failure: "nodevice" (cuInit says there is no device) or
// "old" (a driver for CUDA 12.4).
#include <cstdlib>
#include <cstring>

extern "C" {

int cuDriverGetVersion(int* v) {
  const char* mode = std::getenv("KILN_FAKE_CUDA_MODE");
  *v = mode && std::strcmp(mode, "old") == 0 ? 12040 : 13000;
  return 0;
}

int cuInit(unsigned) { return 100; }  // CUDA_ERROR_NO_DEVICE

int cuGetProcAddress_v2(const char*, void** pfn, int, unsigned long long, int* status) {
  *pfn = nullptr;
  if (status) *status = 1;  // CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
  return 500;               // CUDA_ERROR_NOT_FOUND
}

}  // extern "C"

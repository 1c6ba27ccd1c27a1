// Host-side helpers shared by the op tests (reference.h) and the differential fuzzer
// (tests/fuzz/): moving interpreter tensors to and from a device, and comparing a device's
// result with the interpreter's element by element.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/interpreter.h"
#include "kiln/dtype.h"

namespace kiln::runtime {
class Buffer;
class Device;
}  // namespace kiln::runtime

namespace kiln::testing {

// Reads a device buffer holding `dtype`/`shape` into a host tensor (f16/bf16 widen exactly).
absl::StatusOr<ir::HostTensor> download_host(const runtime::Buffer& buf, DType dtype, const Shape& shape);
// Allocates a buffer on `device` and stores `t` in it, rounded/wrapped to t.dtype.
absl::StatusOr<std::shared_ptr<runtime::Buffer>> upload_host(runtime::Device* device, const ir::HostTensor& t);

// Default tolerances of the op tests: |got - want| <= atol * max(1, max|want|) + rtol * |want|.
void default_tolerance(DType dt, double* rtol, double* atol);

// Per-element tolerance: |got - want| <= abs_tol + rel_tol * |want|. Integers and bool must be
// equal. NaN must match NaN and an infinity must match exactly, unless abs_tol is itself
// infinite: then the caller could not bound the error and every value passes.
struct ElementTolerance {
  double abs_tol = 0;
  double rel_tol = 0;
};

struct Comparison {
  int64_t bad = 0;         // elements outside the tolerance
  double worst_ratio = 0;  // largest |got - want| / allowed over all elements (0 when exact)
  std::string report;      // the first few bad elements, "  [i] got a want b\n" each
  bool ok() const { return bad == 0; }
};

// Compares one output. Shapes and dtypes must already agree.
Comparison compare_host(const ir::HostTensor& want, const ir::HostTensor& got, ElementTolerance tol,
                        int max_reported = 8);

}  // namespace kiln::testing

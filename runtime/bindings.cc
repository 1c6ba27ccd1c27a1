#include "runtime/bindings.h"

#include "absl/strings/str_cat.h"

namespace kiln::runtime {

absl::Status check_bindings(const std::string& backend, const Device* device, const std::vector<ir::BufferDesc>& buffers,
                            int num_inputs, int num_outputs, const std::vector<Buffer*>& inputs,
                            const std::vector<Buffer*>& outputs, size_t num_params, const ParamValues& params) {
  if (params.size() != num_params)
    return absl::InvalidArgumentError(
        absl::StrCat(backend, ": the program takes ", num_params, " params; the run passes ", params.size()));
  if (int(inputs.size()) != num_inputs || int(outputs.size()) != num_outputs)
    return absl::InvalidArgumentError(absl::StrCat(backend, ": the program takes ", num_inputs, " inputs and ", num_outputs,
                                                   " outputs; the run binds ", inputs.size(), " and ", outputs.size()));
  for (const std::vector<Buffer*>* list : {&inputs, &outputs})
    for (size_t i = 0; i < list->size(); ++i)
      if (!(*list)[i] || (*list)[i]->device() != device)
        return absl::InvalidArgumentError(absl::StrCat(backend, ": ", list == &inputs ? "input " : "output ", i,
                                                       " is not a buffer of this device"));
  for (const ir::BufferDesc& b : buffers) {
    if (b.kind == ir::BufferKind::kIntermediate) continue;
    const bool in = b.kind == ir::BufferKind::kInput;
    const Buffer* buf = in ? inputs[size_t(b.index)] : outputs[size_t(b.index)];
    const char* what = in ? "input " : "output ";
    if (buf->bytes() < b.bytes())
      return absl::InvalidArgumentError(
          absl::StrCat(backend, ": ", what, b.index, " holds ", buf->bytes(), " bytes; the program needs ", b.bytes()));
  }
  return absl::OkStatus();
}

}  // namespace kiln::runtime

// The launches of a Metal executable (launch_plan.h).
#include "backends/metal/launch_plan.h"

namespace kiln::runtime::metal {

LaunchPlan plan_launches(const CompiledProgram& c) {
  LaunchPlan plan;
  // Per step: whether it or a step it waits for, followed through steps that launch nothing,
  // is a launched kernel.
  std::vector<bool> reaches_launch(c.steps.size(), false);
  for (size_t i = 0; i < c.steps.size(); ++i) {
    const ir::Step& step = c.steps[i];
    bool after_launch = false;
    for (int d : step.deps) after_launch = after_launch || reaches_launch[size_t(d)];
    const CompiledKernel& k = c.kernels[size_t(step.kernel)];
    if (k.launches_nothing()) {
      reaches_launch[i] = after_launch;
      continue;
    }
    reaches_launch[i] = true;
    Launch l;
    l.kernel = step.kernel;
    l.args_offset = plan.args_bytes;
    l.barrier = after_launch;
    const size_t slots = k.buffers.size() + k.params.size();
    const size_t bytes = slots == 0 ? 8 : slots * 8;
    plan.args_bytes += (bytes + kArgumentBlockAlignment - 1) / kArgumentBlockAlignment * kArgumentBlockAlignment;
    plan.launches.push_back(l);
  }
  return plan;
}

void write_arguments(const CompiledKernel& k, const std::vector<uint64_t>& addresses, const ParamValues& params,
                     uint64_t* block) {
  size_t slot = 0;
  for (int b : k.buffers) block[slot++] = addresses[size_t(b)];
  for (int s : k.params) block[slot++] = params[size_t(s)];
}

}  // namespace kiln::runtime::metal

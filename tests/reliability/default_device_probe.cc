// Run with KILN_DEVICE naming a device that is not present (ctest: reliability.missing_default_device):
// kiln reports it once and uses the best available device, which works.
#include <cstdio>

#include "kiln/kiln.h"

int main() {
  kiln::Device d = kiln::default_device();
  double v = (kiln::full({4}, 1.5) * 2.0).sum().item();
  std::printf("default device %s computed %g\n", d.name().c_str(), v);
  return v == 12.0 ? 0 : 1;
}

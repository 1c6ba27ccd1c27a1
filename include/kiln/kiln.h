// The kiln public API: lazy tensors compiled into fused kernels for the CPU and GPUs.
#pragma once

#include "kiln/control.h"
#include "kiln/conv.h"
#include "kiln/device.h"
#include "kiln/dist.h"
#include "kiln/dtype.h"
#include "kiln/error.h"
#include "kiln/export.h"
#include "kiln/jit.h"
#include "kiln/model.h"
#include "kiln/profile.h"
#include "kiln/stats.h"
#include "kiln/tensor.h"

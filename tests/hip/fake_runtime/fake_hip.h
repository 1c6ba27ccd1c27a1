// The test side of the stand-in libamdhip64.so (fake_libamdhip64.cc): what it reports, the
// failures it can be told to make, and the log of every call it received, which a test reads
// back to check what kiln's HIP runtime asked the "driver" to do. The fake cannot execute AMDGPU
// code, so the log is the only thing to check: which code objects were loaded, which kernels
// were asked for, the graphs built (nodes, dependencies, arguments) and the launches, in order.
//
// The fake is one AMD GPU: "AMD Instinct MI210 (kiln stand-in)", gfx90a:sramecc+:xnack-, 104 CUs,
// 64 GiB, wavefront 64, HIP runtime version 60241134. Device memory is host memory.
//
// Environment (read at every call, so a test may change it between calls):
//   KILN_FAKE_HIP_DEVICES=0        no GPU: hipInit and hipGetDeviceCount fail with hipErrorNoDevice
//   KILN_FAKE_HIP_FAIL=a,b,...     every call of the named entry points fails: hipMalloc with
//                                  hipErrorOutOfMemory, hipModuleLoadData with hipErrorInvalidImage,
//                                  hipModuleGetFunction with hipErrorNotFound, hipGraphCreate,
//                                  hipGraphAddKernelNode and hipGraphInstantiate with
//                                  hipErrorNotSupported, launches with hipErrorLaunchFailure, any
//                                  other with hipErrorUnknown
// Without them the fake still fails as the real runtime would: hipMalloc beyond the 64 GiB,
// hipModuleLoadData of an image that is not an AMDGPU code object with kernel metadata
// (hipErrorInvalidImage) or is for another processor (hipErrorNoBinaryForGpu), a kernel name the
// module lacks (hipErrorNotFound), a block larger than the kernel's .max_flat_workgroup_size
// (hipErrorInvalidConfiguration), a launch whose global_buffer arguments do not point into live
// allocations (hipErrorIllegalAddress), copies outside an allocation (hipErrorInvalidValue).
//
// The log: one line per call, "<entry point> key=value key=value ...", with " error=<name>" last
// when the call failed. Handles are named by kind and number (stream S1, module M1, function F1,
// graph G1, node N1, exec E1, event V1); addresses and kernel arguments are 0x-prefixed hex.
// Lines with a kernel launch or node carry fn=<kernel name> func=F<n> grid=x,y,z block=x,y,z
// shared=<bytes> args=<a0>,<a1>,... (each explicit argument's bytes, as the code object's metadata
// sizes them, as an unsigned integer). hipGraphLaunch is followed by one "launch" line per node of
// the graph, in the order they were added (each after its dependencies), with the arguments the
// instantiated graph holds at that launch:
//   hipModuleLoadData module=M1 bytes=12345 processor=gfx90a kernels=k0,k1
//   hipModuleGetFunction module=M1 name=k0 func=F1
//   hipGraphAddKernelNode graph=G1 node=N2 deps=N1 fn=k0 func=F1 grid=1,1,1 block=64,1,1 shared=0 args=0x0,0x7f00
//   hipGraphLaunch exec=E1 stream=S1
//   launch exec=E1 node=N1 fn=k0 func=F1 grid=1,1,1 block=64,1,1 shared=0 args=0x7f00,0x7e00
#pragma once

extern "C" {

// The log so far (a snapshot, valid until the next call of this function).
const char* kiln_fake_hip_log();
// Empties the log.
void kiln_fake_hip_clear_log();

}  // extern "C"

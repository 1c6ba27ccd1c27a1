// Layer probe: what kiln_codegen_gpu may include and what it must not see (tests/layers/CMakeLists.txt).

#if !__has_include("codegen/c_family/gpu_program.h")
#error "kiln_codegen_gpu cannot see codegen/c_family/gpu_program.h, which it depends on"
#endif
#if !__has_include("ir/program.h")
#error "kiln_codegen_gpu cannot see ir/program.h, which it depends on"
#endif
#if __has_include("passes/fuse.h")
#error "kiln_codegen_gpu can see passes/fuse.h: an include running backwards would compile"
#endif
#if __has_include("runtime/device.h")
#error "kiln_codegen_gpu can see runtime/device.h: an include running backwards would compile"
#endif
#if __has_include("backends/cuda/driver_api.h")
#error "kiln_codegen_gpu can see backends/cuda/driver_api.h: an include running backwards would compile"
#endif

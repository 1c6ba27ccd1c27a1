// Layer probe: what kiln_ir may include and what it must not see (tests/layers/CMakeLists.txt).

#if !__has_include("ir/graph.h")
#error "kiln_ir cannot see ir/graph.h, which it depends on"
#endif
#if __has_include("passes/fuse.h")
#error "kiln_ir can see passes/fuse.h: an include running backwards would compile"
#endif
#if __has_include("runtime/device.h")
#error "kiln_ir can see runtime/device.h: an include running backwards would compile"
#endif
#if __has_include("codegen/c_family/gpu_program.h")
#error "kiln_ir can see codegen/c_family/gpu_program.h: an include running backwards would compile"
#endif
#if __has_include("frontend/lazy.h")
#error "kiln_ir can see frontend/lazy.h: an include running backwards would compile"
#endif

// Layer probe: what kiln_runtime may include and what it must not see (tests/layers/CMakeLists.txt).

#if !__has_include("runtime/device.h")
#error "kiln_runtime cannot see runtime/device.h, which it depends on"
#endif
#if !__has_include("ir/program.h")
#error "kiln_runtime cannot see ir/program.h, which it depends on"
#endif
#if __has_include("passes/pipeline.h")
#error "kiln_runtime can see passes/pipeline.h: an include running backwards would compile"
#endif
#if __has_include("codegen/c_family/gpu_program.h")
#error "kiln_runtime can see codegen/c_family/gpu_program.h: an include running backwards would compile"
#endif
#if __has_include("backends/cpu/thread_pool.h")
#error "kiln_runtime can see backends/cpu/thread_pool.h: an include running backwards would compile"
#endif
#if __has_include("replay/compile_or_replay.h")
#error "kiln_runtime can see replay/compile_or_replay.h: an include running backwards would compile"
#endif
#if __has_include("frontend/lazy.h")
#error "kiln_runtime can see frontend/lazy.h: an include running backwards would compile"
#endif

// Layer probe: what kiln_frontend may include and what it must not see (tests/layers/CMakeLists.txt).

#if !__has_include("frontend/lazy.h")
#error "kiln_frontend cannot see frontend/lazy.h, which it depends on"
#endif
#if !__has_include("replay/compile_or_replay.h")
#error "kiln_frontend cannot see replay/compile_or_replay.h, which it depends on"
#endif
#if __has_include("backends/cpu/thread_pool.h")
#error "kiln_frontend can see backends/cpu/thread_pool.h: an include running backwards would compile"
#endif
#if __has_include("backends/cuda/driver_api.h")
#error "kiln_frontend can see backends/cuda/driver_api.h: an include running backwards would compile"
#endif
#if __has_include("codegen/c_family/gpu_program.h")
#error "kiln_frontend can see codegen/c_family/gpu_program.h: an include running backwards would compile"
#endif
#if __has_include("passes/fuse.h")
#error "kiln_frontend can see passes/fuse.h: an include running backwards would compile"
#endif
#if !__has_include("dist/threads.h")
#error "kiln_frontend cannot see dist/threads.h, which it depends on"
#endif

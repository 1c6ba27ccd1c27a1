// Layer probe: what kiln_replay may include and what it must not see (tests/layers/CMakeLists.txt).

#if !__has_include("replay/compile_or_replay.h")
#error "kiln_replay cannot see replay/compile_or_replay.h, which it depends on"
#endif
#if !__has_include("runtime/registry.h")
#error "kiln_replay cannot see runtime/registry.h, which it depends on"
#endif
#if __has_include("backends/cpu/thread_pool.h")
#error "kiln_replay can see backends/cpu/thread_pool.h: an include running backwards would compile"
#endif
#if __has_include("backends/vulkan/vk_api.h")
#error "kiln_replay can see backends/vulkan/vk_api.h: an include running backwards would compile"
#endif
#if __has_include("codegen/c_family/gpu_program.h")
#error "kiln_replay can see codegen/c_family/gpu_program.h: an include running backwards would compile"
#endif
#if __has_include("frontend/lazy.h")
#error "kiln_replay can see frontend/lazy.h: an include running backwards would compile"
#endif

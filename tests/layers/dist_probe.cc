// Layer probe: what kiln_dist may include and what it must not see (tests/layers/CMakeLists.txt).

#if !__has_include("dist/threads.h")
#error "kiln_dist cannot see dist/threads.h, which it depends on"
#endif
#if !__has_include("ir/collective.h")
#error "kiln_dist cannot see ir/collective.h, which it depends on"
#endif
#if __has_include("runtime/device.h")
#error "kiln_dist can see runtime/device.h: a process group must not know about devices"
#endif
#if __has_include("passes/pipeline.h")
#error "kiln_dist can see passes/pipeline.h: an include running backwards would compile"
#endif
#if __has_include("frontend/lazy.h")
#error "kiln_dist can see frontend/lazy.h: an include running backwards would compile"
#endif

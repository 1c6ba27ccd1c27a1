// Layer probe: what kiln_artifact may include and what it must not see (tests/layers/CMakeLists.txt).
// passes/ is a private dependency (compile.cc), so the layers above do not see it through here.

#if !__has_include("artifact/artifact.h")
#error "kiln_artifact cannot see artifact/artifact.h, which it depends on"
#endif
#if !__has_include("runtime/registry.h")
#error "kiln_artifact cannot see runtime/registry.h, which it depends on"
#endif
#if __has_include("passes/pipeline.h")
#error "kiln_artifact exports passes/pipeline.h: passes must stay private to it"
#endif
#if __has_include("backends/cpu/profiles.h")
#error "kiln_artifact can see backends/cpu/profiles.h: profiles must come through the registry"
#endif
#if __has_include("frontend/lazy.h")
#error "kiln_artifact can see frontend/lazy.h: an include running backwards would compile"
#endif
#if __has_include("tools/kilnc/npy.h")
#error "kiln_artifact can see tools/: the library must not depend on tools"
#endif

// Thread-local scratch on the recording and realize paths. libkiln is a shared library, so plain
// thread_local compiles to a __tls_get_addr call per access (the general-dynamic model); these
// variables use the initial-exec model instead, one register-relative load. kiln is linked at
// program start (not dlopen'd), which initial-exec requires.
#pragma once

#define KILN_FAST_TLS __attribute__((tls_model("initial-exec"))) thread_local

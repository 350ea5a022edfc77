// SF_THREAD_LOCAL: a thread_local the library reads on every op.
//
// In a shared library the default TLS model calls __tls_get_addr on each access (about 5% of an
// op's recording time). The initial-exec model reads the variable at a fixed offset from the
// thread pointer instead. It is safe for a library linked into the program, and glibc keeps
// spare static TLS space for the few bytes these variables take when it is loaded with dlopen.
#pragma once

#if defined(__GNUC__)
#define SF_THREAD_LOCAL thread_local __attribute__((tls_model("initial-exec")))
#else
#define SF_THREAD_LOCAL thread_local
#endif

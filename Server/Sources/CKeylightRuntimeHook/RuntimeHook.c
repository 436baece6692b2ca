#include "CKeylightRuntimeHook.h"

// Declared by the Swift runtime (libswift_Concurrency) as a pointer to a swiftcall function; only
// its address is taken here, so the pointee's type does not matter.
extern const void *swift_task_enqueueGlobal_hook;

bool keylight_install_enqueue_global_hook(const void *hook) {
    const void *expected = 0;
    return __atomic_compare_exchange_n(&swift_task_enqueueGlobal_hook, &expected, hook, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

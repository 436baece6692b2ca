#ifndef CKEYLIGHT_RUNTIME_HOOK_H
#define CKEYLIGHT_RUNTIME_HOOK_H

#include <stdbool.h>

/// Installs `hook` as the Swift runtime's global-enqueue hook (`swift_task_enqueueGlobal_hook`)
/// when none is installed yet, atomically; true when it was installed.
///
/// The hook is found by the linker, not by `dlsym`: the static Swift runtime keeps the symbol out
/// of the binary's dynamic symbol table, where `dlsym` looks, but resolves it at link time.
bool keylight_install_enqueue_global_hook(const void *hook);

#endif

#ifndef C_CHILD_PROCESS_H
#define C_CHILD_PROCESS_H

#include <spawn.h>

/// Adds "close every descriptor from `lowest` up" to `actions` (glibc's
/// posix_spawn_file_actions_addclosefrom_np, 2.34 and later, which Swift's Glibc module does not
/// declare); returns 0, or an errno value (ENOSYS where the C library has no such action, and
/// then only descriptors marked close-on-exec are closed). See Haul's ChildProcess.swift.
int haul_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest);

#endif

#ifndef C_PROCESS_MEMORY_H
#define C_PROCESS_MEMORY_H

/// Sets glibc malloc's mmap and trim thresholds (mallopt(3)); returns 1 when both were taken,
/// 0 when one was refused or the C library is not glibc. See Haul's ProcessMemory.swift.
int haul_keep_freed_buffers(int mmap_threshold, int trim_threshold);

#endif

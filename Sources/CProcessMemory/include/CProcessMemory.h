#ifndef C_PROCESS_MEMORY_H
#define C_PROCESS_MEMORY_H

#include <stdint.h>

/// Sets glibc malloc's mmap and trim thresholds (mallopt(3)); returns 1 when both were taken,
/// 0 when one was refused or the C library is not glibc. See Haul's ProcessMemory.swift.
int haul_keep_freed_buffers(int mmap_threshold, int trim_threshold);

/// Sets glibc malloc's most arenas (mallopt(3) M_ARENA_MAX); returns 1 when taken, 0 when
/// refused or the C library is not glibc.
int haul_limit_arenas(int arenas);

/// The program's own relocation table (DT_RELA) in memory: its address and length in bytes.
/// Returns 1 when there is one, 0 when not (or not 64-bit Linux), both then 0.
int haul_relocation_table(uintptr_t *start, uintptr_t *length);

/// Unmaps from the process the whole pages of that table, which
/// the loader reads once before main and nothing reads again: madvise(MADV_DONTNEED) on a
/// read-only file mapping, so a later read would only fault them back from the file. Returns
/// the bytes released, 0 where there is no such table (or not Linux), -1 when madvise failed.
long haul_release_relocation_pages(void);

#endif

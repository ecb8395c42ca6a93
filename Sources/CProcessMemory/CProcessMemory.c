#if defined(__linux__)
#define _GNU_SOURCE 1 // dl_iterate_phdr
#endif

#include "CProcessMemory.h"

#include <stdlib.h> // on glibc, defines __GLIBC__

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#if defined(__linux__)
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

int haul_keep_freed_buffers(int mmap_threshold, int trim_threshold) {
#if defined(__GLIBC__)
    return mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1 && mallopt(M_TRIM_THRESHOLD, trim_threshold) == 1;
#else
    (void)mmap_threshold;
    (void)trim_threshold;
    return 0;
#endif
}

int haul_limit_arenas(int arenas) {
#if defined(__GLIBC__)
    return mallopt(M_ARENA_MAX, arenas) == 1;
#else
    (void)arenas;
    return 0;
#endif
}

#if defined(__linux__) && defined(__LP64__)
// The first object dl_iterate_phdr reports is the program itself.
static int haul_program_relocations(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    uintptr_t *range = data;
    for (int index = 0; index < info->dlpi_phnum; index++) {
        const ElfW(Phdr) *header = &info->dlpi_phdr[index];
        if (header->p_type != PT_DYNAMIC) continue;
        uintptr_t table = 0, length = 0;
        for (const ElfW(Dyn) *entry = (const ElfW(Dyn) *)(info->dlpi_addr + header->p_vaddr);
             entry->d_tag != DT_NULL; entry++) {
            if (entry->d_tag == DT_RELA) table = entry->d_un.d_ptr;
            if (entry->d_tag == DT_RELASZ) length = entry->d_un.d_val;
        }
        // The loader may have rebased the entry in place, or not.
        if (table != 0 && table < info->dlpi_addr) table += info->dlpi_addr;
        range[0] = table;
        range[1] = length;
    }
    return 1;
}
#endif

int haul_relocation_table(uintptr_t *start, uintptr_t *length) {
#if defined(__linux__) && defined(__LP64__)
    uintptr_t range[2] = {0, 0};
    dl_iterate_phdr(haul_program_relocations, range);
    *start = range[0];
    *length = range[1];
    return range[0] != 0;
#else
    *start = 0;
    *length = 0;
    return 0;
#endif
}

long haul_release_relocation_pages(void) {
#if defined(__linux__) && defined(__LP64__)
    uintptr_t table = 0, length = 0;
    if (!haul_relocation_table(&table, &length)) return 0;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t start = (table + page - 1) & ~(page - 1);
    uintptr_t end = (table + length) & ~(page - 1);
    if (end <= start) return 0;
    if (madvise((void *)start, end - start, MADV_DONTNEED) != 0) return -1;
    return (long)(end - start);
#else
    return 0;
#endif
}

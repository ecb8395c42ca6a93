#if defined(__linux__)
#define _GNU_SOURCE 1 // copy_file_range
#endif

#include "CFileClone.h"

#include <errno.h>

#if defined(__linux__)
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <unistd.h>
#endif

int haul_clone_file(int target, int source) {
#if defined(__linux__) && defined(FICLONE)
    return ioctl(target, FICLONE, source);
#else
    (void)target;
    (void)source;
    errno = ENOTSUP;
    return -1;
#endif
}

long haul_copy_range(int source, int target, long length) {
#if defined(__linux__)
    return (long)copy_file_range(source, NULL, target, NULL, (size_t)length, 0);
#else
    (void)source;
    (void)target;
    (void)length;
    errno = ENOSYS;
    return -1;
#endif
}

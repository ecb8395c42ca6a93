#ifndef C_FILE_CLONE_H
#define C_FILE_CLONE_H

/// Makes the open file `target` share every block of the open file `source` (Linux's FICLONE
/// ioctl: a reflink, copy-on-write, on Btrfs, XFS and the like). Returns 0 on success, else -1
/// with errno set (EOPNOTSUPP, EXDEV, EINVAL where the file system cannot); -1 with ENOTSUP
/// where the system has no such call. Swift does not import ioctl(2), a variadic function.
int haul_clone_file(int target, int source);

/// Copies up to `length` bytes from the open file `source` to `target` in the kernel, from and
/// to their current offsets (Linux's copy_file_range(2), which glibc declares only with
/// _GNU_SOURCE). Returns the bytes copied (0 at the source's end), else -1 with errno set;
/// -1 with ENOSYS where the system has no such call.
long haul_copy_range(int source, int target, long length);

#endif

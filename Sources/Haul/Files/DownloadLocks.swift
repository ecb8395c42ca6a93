import HaulCore
import NIOConcurrencyHelpers

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Exclusive locks on downloads across processes: two `haul get` runs of the same command must
/// not write the same `.part` nor overwrite each other's checkpoints. One file,
/// `STATE/downloads.lock`, opened once; each download locks one byte of it (a POSIX record
/// lock, `fcntl(F_SETLK)`) at an offset hashed from its id. A lock file per download cost an
/// inode per download (the kernel's inode allocation was the largest cost of ten thousand small
/// files) and left one file behind per download ever made.
///
/// The kernel drops the locks when the process dies, so a `kill -9` never leaves a download
/// locked. POSIX record locks belong to the process: they never conflict within it (the manager
/// never runs a download twice), and closing any descriptor of the file would drop them all, so
/// this is the only one.
final class DownloadLocks: Sendable {
    private let descriptor: Int32
    private let path: String
    /// Offsets locked by this process: unlocking a byte another download of ours also hashes to
    /// would unlock it for both.
    private let held = NIOLockedValueBox([Int64: Int]())

    init(stateDirectory: String) throws {
        path = Paths.join(stateDirectory, "downloads.lock")
        descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw FileSystemErrors.error(errno, "cannot open lock", path) }
    }

    deinit {
        close(descriptor)
    }

    /// A lease on the download, or nil when another process holds it.
    func acquire(_ id: DownloadID) throws -> Lease? {
        let offset = Self.offset(of: id)
        return try held.withLockedValue { held -> Lease? in
            if held[offset, default: 0] == 0 {
                guard try setLock(F_WRLCK, at: offset) else { return nil }
            }
            held[offset, default: 0] += 1
            return Lease(locks: self, offset: offset)
        }
    }

    fileprivate func release(_ offset: Int64) {
        held.withLockedValue { held in
            held[offset, default: 1] -= 1
            if held[offset] == 0 {
                held[offset] = nil
                // Unlocking a byte of the descriptor this object keeps open fails only on a bug
                // (EBADF, EINVAL), and the kernel drops the lock with the process anyway.
                _ = try? setLock(F_UNLCK, at: offset)
            }
        }
    }

    /// False when another process holds the byte.
    private func setLock(_ type: Int32, at offset: Int64) throws -> Bool {
        var lock = flock()
        lock.l_type = Int16(type)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = off_t(offset)
        lock.l_len = 1
        guard fcntl(descriptor, F_SETLK, &lock) == 0 else {
            if errno == EAGAIN || errno == EACCES { return false }
            throw FileSystemErrors.error(errno, "cannot lock", path)
        }
        return true
    }

    /// FNV-1a of the id, in 62 bits: ten million ids share a byte with odds of about one in a
    /// hundred thousand, and then only two processes running both at once are affected: the
    /// second leaves that download to the first, as if it were the same one.
    static func offset(of id: DownloadID) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in id.rawValue.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Int64(hash >> 2)
    }

    /// Held while the download runs; released when dropped.
    final class Lease: Sendable {
        private let locks: DownloadLocks
        private let offset: Int64

        fileprivate init(locks: DownloadLocks, offset: Int64) {
            self.locks = locks
            self.offset = offset
        }

        deinit {
            locks.release(offset)
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import HaulCore

/// An exclusive lock on one download across processes (`flock` on
/// `STATE/locks/ID.lock`): two `haul get` runs of the same command must not write the same
/// `.part` nor overwrite each other's checkpoints. The kernel drops the lock when the process
/// dies, so a `kill -9` never leaves a download locked.
final class DownloadLock: Sendable {
    private let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }

    /// The lock, or nil when another process holds it. Throws when the lock file cannot be made.
    static func acquire(stateDirectory: String, id: DownloadID) throws -> DownloadLock? {
        let directory = Paths.join(stateDirectory, "locks")
        try DestinationFiles.makeDirectory(directory)
        let path = Paths.join(directory, id.rawValue + ".lock")
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw FileSystemErrors.error(errno, "cannot open lock", path) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            close(descriptor)
            return nil
        }
        return DownloadLock(descriptor: descriptor)
    }
}

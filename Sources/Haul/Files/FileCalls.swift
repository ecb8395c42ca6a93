#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The system calls that write, sync and close a download's `.part`: the real ones, or a test's
/// that hold them back (to show that a disk that blocks stalls nothing but its own download, and
/// that no file is closed under a running fsync). Each gets the file's path, so a test can pick
/// one download's file. They return what the system call returns, with `errno` set on failure.
struct FileCalls: Sendable {
    var write:
        @Sendable (
            _ descriptor: Int32, _ vectors: UnsafePointer<iovec>, _ count: Int32, _ offset: Int64, _ path: String
        ) -> Int
    var sync: @Sendable (_ descriptor: Int32, _ path: String) -> Int32
    var close: @Sendable (_ descriptor: Int32, _ path: String) -> Int32

    static let system = FileCalls(
        write: { descriptor, vectors, count, offset, _ in pwritev(descriptor, vectors, count, off_t(offset)) },
        sync: { descriptor, _ in fsync(descriptor) },
        close: { descriptor, _ in systemClose(descriptor) })
}

private func systemClose(_ descriptor: Int32) -> Int32 {
    close(descriptor)
}

import CProcessMemory

/// How the process's allocator treats the buffers a download passes through: call
/// `keepFreedBuffers()` once, at the start of a program that downloads (the `haul` executable
/// does; a library user may).
///
/// Every read of a socket lands in a buffer from NIO's pool, and every TLS record in NIOSSL's
/// plaintext buffer. A download holds those buffers until their batch is written, so the next
/// read finds the pooled one still in use and allocates a new one: one allocation of 64-256 KiB
/// per read, freed a moment later on the writing thread. glibc's malloc gives such sizes back to
/// the kernel when they are freed (it serves them with `mmap` below its threshold's first rise,
/// and trims an arena's top past twice that), so each new buffer is fresh pages: 1 GiB over one
/// TLS connection took 120,000-185,000 page faults, and `perf` put nine tenths of them under the
/// socket read into a newly allocated buffer. With freed memory kept (an `mmap` threshold of
/// 4 MiB, an arena's top trimmed past 8 MiB) it took 22,000-61,000, and 2,800-3,000 over plain
/// HTTP (from 30,000-50,000); the CPU time went from about 1.1-1.3 s to 0.85 over TLS, and from
/// 1.1 to 0.6-0.7 s over plain HTTP with 256 KiB reads. A trim threshold of 32 MiB took TLS to
/// 6,000-10,000 faults for no measurable CPU and about 8 MiB more peak RSS.
///
/// The cost: up to 8 MiB freed per malloc arena stays with the process until it is used again,
/// instead of going back to the kernel at once. Elsewhere than glibc this does nothing.
public enum ProcessMemory {
    /// Allocations at least this large are served by `mmap` (and given back when freed).
    public static let mmapThreshold: Int32 = 4 << 20
    /// An arena's free top past this is given back to the kernel.
    public static let trimThreshold: Int32 = 8 << 20

    /// Sets malloc's thresholds; true when the allocator took both (always false where there is
    /// no glibc).
    @discardableResult
    public static func keepFreedBuffers() -> Bool {
        haul_keep_freed_buffers(mmapThreshold, trimThreshold) == 1
    }
}

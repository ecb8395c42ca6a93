import CProcessMemory
import NIOCore

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

    /// What a program that downloads calls first, before a second thread starts: freed buffers
    /// kept, one arena per processor, the relocation table's pages given back. The `haul`
    /// executables do.
    public static func setUpProgram() {
        keepFreedBuffers()
        limitArenas()
        releaseStartupPages()
    }

    /// Sets malloc's thresholds; true when the allocator took both (always false where there is
    /// no glibc).
    @discardableResult
    public static func keepFreedBuffers() -> Bool {
        haul_keep_freed_buffers(mmapThreshold, trimThreshold) == 1
    }

    /// Limits malloc to one arena per processor (at least 2). glibc makes up to eight per
    /// processor, one for each thread that finds the others busy, and each keeps what is freed
    /// in it up to `trimThreshold`: with NIO's, the disk's and the concurrency pool's threads,
    /// `haul get -x 1` of 1 GiB held about 1.8 MB more at its peak, 64 TLS connections 7-15 MB
    /// more, for no time we could measure on 2 processors (see the note of issue 33). Call it
    /// before a second thread starts; true when the allocator took it (never where there is no
    /// glibc).
    @discardableResult
    public static func limitArenas(processors: Int = System.coreCount) -> Bool {
        haul_limit_arenas(Int32(clamping: max(2, processors))) == 1
    }

    /// Gives back the pages of the program's relocation table, which the loader read once before
    /// `main`: about 2.3 MB of `haul`'s resident memory at start, kept for nothing until exit.
    /// They are read-only pages of the executable's file, so nothing is lost: were they read
    /// again, they would come back from the file. Call it once, early; returns the bytes given
    /// back (0 where there is nothing to give back, or off Linux; -1 when the kernel refused).
    @discardableResult
    public static func releaseStartupPages() -> Int {
        haul_release_relocation_pages()
    }
}

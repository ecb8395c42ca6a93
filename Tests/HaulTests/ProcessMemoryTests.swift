#if canImport(Glibc)
    import CProcessMemory
    import Glibc
    @testable import Haul
    import Testing

    /// `ProcessMemory.keepFreedBuffers`: a buffer of a read's size, freed while others are held,
    /// comes back without fresh pages from the kernel.
    @Suite(.timeLimit(.minutes(1))) struct ProcessMemoryTests {
        @Test func buffersFreedWhileOthersAreHeldComeBackWithoutPageFaults() throws {
            #expect(ProcessMemory.keepFreedBuffers())
            let size = ReceiveBuffers.largeReadSize
            let held = 8
            let rounds = 50
            // What a download does to malloc: a few read buffers held by the writer's batch, all
            // freed together once it is written, then the next ones.
            let faults = try threadPageFaults {
                for _ in 0..<rounds {
                    var buffers: [UnsafeMutableRawPointer] = []
                    for _ in 0..<held {
                        guard let buffer = malloc(size) else { return }
                        memset(buffer, 7, size)
                        buffers.append(buffer)
                    }
                    for buffer in buffers { free(buffer) }
                }
            }
            // Fresh pages every round would be 50 * 8 * 64 = 25,600 faults (glibc's defaults: the
            // arena's top trimmed past twice the largest size freed). Only the first round's pages
            // may fault.
            let firstRound = held * size / Int(getpagesize())
            #expect(
                faults <= firstRound * 2,
                "\(faults) page faults for \(rounds) rounds of \(held) buffers of \(size) bytes")
        }

        /// `ProcessMemory.releaseStartupPages`: the relocation table's whole pages are no longer
        /// mapped in the process (this test binary is a position-independent executable, so it
        /// has one), and the program goes on.
        @Test func relocationTablePagesAreGivenBack() throws {
            var start: UInt = 0
            var length: UInt = 0
            try #require(haul_relocation_table(&start, &length) == 1)
            let page = UInt(getpagesize())
            let first = (start + page - 1) / page
            let end = (start + length) / page
            try #require(end > first, "a table of \(length) bytes spans no whole page")

            #expect(ProcessMemory.releaseStartupPages() == Int((end - first) * page))
            let present = try presentPages(from: first, to: end)
            #expect(present == 0, "\(present) of \(end - first) pages still mapped")
        }

        /// glibc takes the setting. (64, above glibc's own 8 per processor here: the tests
        /// running beside this one keep their allocator as it was.)
        @Test func arenasAreLimited() {
            #expect(ProcessMemory.limitArenas(processors: 64))
        }

        /// How many of the pages `first..<end` of this process are present, from
        /// /proc/self/pagemap (bit 63 of each page's entry, readable without privileges).
        private func presentPages(from first: UInt, to end: UInt) throws -> Int {
            let descriptor = open("/proc/self/pagemap", O_RDONLY)
            try #require(descriptor >= 0)
            defer { close(descriptor) }
            var entries = [UInt64](repeating: 0, count: Int(end - first))
            let wanted = entries.count * 8
            let read = entries.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, wanted, off_t(first * 8)) }
            try #require(read == wanted)
            return entries.filter { $0 >> 63 & 1 == 1 }.count
        }

        /// The minor page faults of this thread while `body` runs (it must not suspend).
        private func threadPageFaults(_ body: () -> Void) throws -> Int {
            // RUSAGE_THREAD (Linux; Glibc shows it only with _GNU_SOURCE): this thread alone, so
            // tests running beside this one do not count.
            let thread = __rusage_who_t(1)
            var before = rusage()
            var after = rusage()
            try #require(getrusage(thread, &before) == 0)
            body()
            try #require(getrusage(thread, &after) == 0)
            return after.ru_minflt - before.ru_minflt
        }
    }
#endif

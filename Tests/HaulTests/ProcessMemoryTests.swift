#if canImport(Glibc)
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

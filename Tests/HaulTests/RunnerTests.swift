import Foundation
import HaulCore
import HaulTesting
import Logging
import NIOConcurrencyHelpers
import Testing

@testable import Haul

/// The runner alone, with a fake transport and a fake writer: the durability order and the stop
/// path, deterministic and without sockets.
@Suite(.timeLimit(.minutes(1))) struct RunnerTests {
    let payload = Payload(seed: 5, length: 400_000)

    /// One log for every side effect, in the order they happened.
    final class Log: Sendable {
        enum Entry: Equatable {
            case synced(Int64)
            case saved(Int64)
        }
        let entries = Watched<[Entry]>([])
        func append(_ entry: Entry) { entries.withLockedValue { $0.append(entry) } }
    }

    /// A store that logs how many bytes each save claims.
    final class LoggingStore: DownloadStore {
        let inner = InMemoryDownloadStore()
        let log: Log
        init(log: Log) { self.log = log }
        func save(_ record: DownloadRecord) async throws {
            log.append(.saved(record.completedLength))
            try await inner.save(record)
        }
        func record(_ id: DownloadID) async throws -> DownloadRecord? { try await inner.record(id) }
        func record(matching request: DownloadRequest) async throws -> DownloadRecord? {
            try await inner.record(matching: request)
        }
        func records(status: DownloadStatus?) async throws -> [DownloadRecord] {
            try await inner.records(status: status)
        }
        func fileNameHolder(_ fileName: String, directory: String, except id: DownloadID) async throws -> DownloadID? {
            try await inner.fileNameHolder(fileName, directory: directory, except: id)
        }
        func delete(_ id: DownloadID) async throws { try await inner.delete(id) }
    }

    /// Writes into memory; a checkpoint makes what was written durable and logs it.
    final class FakeWriter: ChunkWriter {
        let log: Log
        let state = NIOLockedValueBox((bytes: [Int64: Int64](), durable: Int64(0)))
        init(log: Log) { self.log = log }
        func write(_ chunk: any ByteChunk, at offset: Int64, part: Int64) async throws {
            state.withLockedValue { $0.bytes[part] = offset + Int64(chunk.count) }
        }
        func checkpoint() async throws -> [Int64: Int64] {
            let written = state.withLockedValue { $0.bytes }
            log.append(.synced(written.values.reduce(0, +)))
            return written
        }
        func flush() async throws -> [Int64: Int64] { state.withLockedValue { $0.bytes } }
        func read(at offset: Int64, count: Int) async throws -> [UInt8] { [] }
        func truncate(to length: Int64) async throws { state.withLockedValue { $0.bytes = [:] } }
        func close() async {}
        func discard() async {}
    }

    /// Serves the payload whole, in 10 KB chunks; after `stallAfter` bytes a body waits until
    /// its task is cancelled (a stop has to end it).
    struct FakeTransport: HTTPTransport {
        let payload: Payload
        let stallAfter: Int64?

        func send(_ plan: RequestPlan) async throws -> (ResponseHead, any ResponseBodyStream) {
            let head = ResponseHead(
                status: 200, headers: ["Content-Length": "\(payload.length)", "ETag": "\"x\""],
                url: plan.url.absoluteString)
            return (head, Body(payload: payload, stallAfter: stallAfter))
        }

        final class Body: ResponseBodyStream {
            let payload: Payload
            let stallAfter: Int64?
            let next = NIOLockedValueBox<Int64>(0)
            init(payload: Payload, stallAfter: Int64?) {
                self.payload = payload
                self.stallAfter = stallAfter
            }
            func next() async throws -> (any ByteChunk)? {
                let offset = next.withLockedValue { $0 }
                if let stallAfter, offset >= stallAfter {
                    try await suspendUntilCancelled()
                }
                guard offset < payload.length else { return nil }
                let end = min(payload.length, offset + 10_000)
                next.withLockedValue { $0 = end }
                return payload.bytes(offset..<end)
            }
        }
    }

    func runner(
        log: Log, store: any DownloadStore, stallAfter: Int64?, checkpointInterval: Double, stop: StopSignal,
        events: Watched<[DownloadEvent.Kind]>
    ) -> DownloadRunner {
        let clock = ClockAdapter(ContinuousClock())
        return DownloadRunner(
            store: store, transport: FakeTransport(payload: payload, stallAfter: stallAfter), clock: clock,
            names: FileNameClaims(store: store),
            settings: .init(checkpointInterval: checkpointInterval, tickInterval: 0.001),
            limiters: [], makeWriter: { _, _, _, _, _ in FakeWriter(log: log) },
            logger: .init(label: "test"), stop: stop,
            emit: { event in events.withLockedValue { $0.append(event.kind) } })
    }

    /// A run of the fake download into a fresh directory, returned once its progress reached
    /// `bytes` (events are kept in a watched array: none can be lost while the test waits).
    func start(_ runner: DownloadRunner, until bytes: Int64, events: Watched<[DownloadEvent.Kind]>)
        async throws -> (task: Task<DownloadRecord, Never>, initial: DownloadRecord, directory: String)
    {
        let directory = NSTemporaryDirectory() + "haul-runner-\(UUID().uuidString)"
        let request = try DownloadRequest(url: RemoteURL("http://h/file"), destination: .directory(directory))
        let initial = DownloadRecord(id: .random(), request: request, createdAt: 0)
        let task = Task { await runner.run(initial) }
        #expect(await events.wait { Self.progressed($0, to: bytes) })
        return (task, initial, directory)
    }

    /// A run of the fake download that stalls after `bytes`, on `store`, returned once its
    /// progress reached them: the run's task, record, directory, stop signal and events.
    struct StalledRun {
        let task: Task<DownloadRecord, Never>
        let initial: DownloadRecord
        let directory: String
        let stop: StopSignal
        let events: Watched<[DownloadEvent.Kind]>
    }

    func stalledRun(log: Log, store: any DownloadStore, bytes: Int64, checkpointInterval: Double) async throws
        -> StalledRun
    {
        let stop = StopSignal()
        let events = Watched<[DownloadEvent.Kind]>([])
        let runner = runner(
            log: log, store: store, stallAfter: bytes, checkpointInterval: checkpointInterval, stop: stop,
            events: events)
        let (task, initial, directory) = try await start(runner, until: bytes, events: events)
        return StalledRun(task: task, initial: initial, directory: directory, stop: stop, events: events)
    }

    @Test func theStoreNeverClaimsMoreThanTheLastSync() async throws {
        let log = Log()
        let run = try await stalledRun(log: log, store: LoggingStore(log: log), bytes: 200_000, checkpointInterval: 0)
        run.stop.request(.paused)
        let final = await run.task.value
        #expect(final.status == .paused)
        #expect(final.completedLength == 200_000)
        #expect(log.entries.withLockedValue { $0 }.last == .saved(200_000), "the stop stored every byte it had synced")
        var synced: Int64 = 0
        for entry in log.entries.withLockedValue({ $0 }) {
            switch entry {
            case .synced(let bytes): synced = bytes
            case .saved(let claimed): #expect(claimed <= synced, "a save claimed \(claimed) with \(synced) synced")
            }
        }
        try? FileManager.default.removeItem(atPath: run.directory)
    }

    @Test func aStopIsAMessageAndItsCheckpointLands() async throws {
        let log = Log()
        let store = LoggingStore(log: log)
        // No periodic checkpoint in this test's lifetime: only the stop's can store the bytes.
        let run = try await stalledRun(log: log, store: store, bytes: 150_000, checkpointInterval: 3600)
        #expect(log.entries.withLockedValue { $0 }.allSatisfy { $0 != .synced(150_000) })
        run.stop.request(.paused)
        let final = await run.task.value
        #expect(final.completedLength == 150_000)
        #expect(try await store.record(run.initial.id)?.completedLength == 150_000)
        #expect(try await store.record(run.initial.id)?.status == .paused)
        #expect(run.events.withLockedValue { $0 }.last == .paused)
        try? FileManager.default.removeItem(atPath: run.directory)
    }

    // MARK: Decisions the machine makes (issue 23)

    /// Opens once; `wait` returns after that (one waiter: an `AsyncStream` has one consumer).
    final class Latch: Sendable {
        let stream: AsyncStream<Void>
        let continuation: AsyncStream<Void>.Continuation
        init() { (stream, continuation) = AsyncStream.makeStream(of: Void.self) }
        func open() { continuation.finish() }
        func wait() async { for await _ in stream {} }
    }

    /// Serves the payload in 10 KB chunks; at `pauseAt` the body waits for `gate`, after
    /// `stallAfter` until its task is cancelled.
    struct GatedTransport: HTTPTransport {
        let payload: Payload
        let pauseAt: Int64
        let gate: Latch
        let stallAfter: Int64

        func send(_ plan: RequestPlan) async throws -> (ResponseHead, any ResponseBodyStream) {
            let head = ResponseHead(
                status: 200, headers: ["Content-Length": "\(payload.length)", "ETag": "\"x\""],
                url: plan.url.absoluteString)
            return (head, Body(transport: self))
        }

        final class Body: ResponseBodyStream {
            let transport: GatedTransport
            let next = NIOLockedValueBox<Int64>(0)
            init(transport: GatedTransport) { self.transport = transport }
            func next() async throws -> (any ByteChunk)? {
                let offset = next.withLockedValue { $0 }
                if offset == transport.pauseAt { await transport.gate.wait() }
                if offset >= transport.stallAfter { try await suspendUntilCancelled() }
                guard offset < transport.payload.length else { return nil }
                let end = min(transport.payload.length, offset + 10_000)
                next.withLockedValue { $0 = end }
                return transport.payload.bytes(offset..<end)
            }
        }
    }

    /// A `FakeWriter` whose first checkpoint holds its fsync until `gate` opens (what it syncs is
    /// what was written when it began).
    final class SlowFirstSyncWriter: ChunkWriter {
        let inner: FakeWriter
        let gate: Latch
        let calls = Watched(0)
        init(log: Log, gate: Latch) {
            self.inner = FakeWriter(log: log)
            self.gate = gate
        }
        func write(_ chunk: any ByteChunk, at offset: Int64, part: Int64) async throws {
            try await inner.write(chunk, at: offset, part: part)
        }
        func checkpoint() async throws -> [Int64: Int64] {
            let written = try await inner.checkpoint()
            let call = calls.withLockedValue {
                $0 += 1
                return $0
            }
            if call == 1 { await gate.wait() }
            return written
        }
        func flush() async throws -> [Int64: Int64] { try await inner.flush() }
        func read(at offset: Int64, count: Int) async throws -> [UInt8] { [] }
        func truncate(to length: Int64) async throws { try await inner.truncate(to: length) }
        func close() async {}
        func discard() async {}
    }

    /// Whether a progress event among `events` reached `bytes`.
    static func progressed(_ events: [DownloadEvent.Kind], to bytes: Int64) -> Bool {
        events.contains { if case .progress(let p) = $0 { p.completed >= bytes } else { false } }
    }

    /// The old runner dropped a periodic checkpoint asked for while one was in flight, after the
    /// machine had counted it as taken: the bytes it would have stored waited for the next one
    /// (none, on a stalled body). Now the machine knows one runs and asks again when it ends.
    @Test func aCheckpointDueWhileOneRunsIsRunAfterItNeverDropped() async throws {
        let log = Log()
        let store = LoggingStore(log: log)
        let stop = StopSignal()
        let events = Watched<[DownloadEvent.Kind]>([])
        let (bodyGate, syncGate) = (Latch(), Latch())
        let writer = SlowFirstSyncWriter(log: log, gate: syncGate)
        // Due every 100,000 bytes, never by time.
        let runner = DownloadRunner(
            store: store,
            transport: GatedTransport(payload: payload, pauseAt: 100_000, gate: bodyGate, stallAfter: 200_000),
            clock: ClockAdapter(ContinuousClock()), names: FileNameClaims(store: store),
            settings: .init(checkpointInterval: 3600, checkpointBytes: 100_000, tickInterval: 0.001),
            limiters: [], makeWriter: { _, _, _, _, _ in writer },
            logger: .init(label: "test"), stop: stop,
            emit: { event in events.withLockedValue { $0.append(event.kind) } })
        let (task, _, directory) = try await start(runner, until: 100_000, events: events)
        #expect(await writer.calls.wait { $0 >= 1 })
        bodyGate.open()
        // A tick saw 200,000 bytes while the first checkpoint still held its fsync: due again.
        #expect(await events.wait { Self.progressed($0, to: 200_000) })
        syncGate.open()
        #expect(await log.entries.wait { $0.contains(.saved(100_000)) })
        // The second is asked for with the first one's save, before the loop reads the stop.
        stop.request(.paused)
        let final = await task.value
        let syncs = log.entries.withLockedValue { $0 }.compactMap {
            if case .synced(let bytes) = $0 { bytes } else { nil }
        }
        #expect(syncs == [100_000, 200_000, 200_000], "the first, the one due meanwhile, the pause's")
        #expect(final.completedLength == 200_000)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A store that refuses to store a pause.
    final class PauseRefusingStore: DownloadStore {
        let inner: LoggingStore
        init(log: Log) { inner = LoggingStore(log: log) }
        func save(_ record: DownloadRecord) async throws {
            if record.status == .paused { throw HaulError(.store, "disk I/O error") }
            try await inner.save(record)
        }
        func record(_ id: DownloadID) async throws -> DownloadRecord? { try await inner.record(id) }
        func record(matching request: DownloadRequest) async throws -> DownloadRecord? {
            try await inner.record(matching: request)
        }
        func records(status: DownloadStatus?) async throws -> [DownloadRecord] {
            try await inner.records(status: status)
        }
        func fileNameHolder(_ fileName: String, directory: String, except id: DownloadID) async throws -> DownloadID? {
            try await inner.fileNameHolder(fileName, directory: directory, except: id)
        }
        func delete(_ id: DownloadID) async throws { try await inner.delete(id) }
    }

    /// A save that fails at the end is no longer only logged: a pause the store did not take
    /// would go on at the next start, so the run ends failed and says why.
    @Test func aPauseThatCannotBeStoredEndsFailedSayingSo() async throws {
        let log = Log()
        let store = PauseRefusingStore(log: log)
        let run = try await stalledRun(log: log, store: store, bytes: 150_000, checkpointInterval: 3600)
        run.stop.request(.paused)
        let final = await run.task.value
        #expect(final.status == .failed)
        let error = try #require(final.error)
        #expect(error.code == .store)
        #expect(
            error.message.contains("the pause could not be stored") && error.message.contains("disk I/O error"),
            "\(error)")
        #expect(run.events.withLockedValue { $0 }.last == .failed(error))
        #expect(try await store.record(run.initial.id)?.status == .running, "the store keeps the last record it took")
        try? FileManager.default.removeItem(atPath: run.directory)
    }

    /// The server's date in `Retry-After` is read against the injected calendar: a test's manual
    /// clock decides how long the wait is, and ends it.
    @Test func anHTTPDateRetryAfterWaitsByTheInjectedClock() async throws {
        let clock = ManualClock()
        let start: Int64 = 1_800_000_000
        try await withHarness(clock: ClockAdapter(clock, secondsSince1970: start)) { harness in
            let file = Payload(seed: 6, length: 50_000)
            harness.server.setRoute(
                "/file",
                Route(
                    payload: file,
                    script: [
                        .status(503, headers: [("Retry-After", HTTPDate.format(start + 90))])
                    ]))
            let events = harness.manager.events()
            let record = try await harness.manager.add(harness.request("/file"))
            #expect(record.createdAt == start, "the record's time is the injected calendar's too")
            // The retry's wait, on the injected clock; the run's ticker sleeps on it too, shorter.
            let retry = clock.now.advanced(by: .seconds(90))
            #expect(await clock.waitForSleepers { $0.contains(retry) })
            #expect(clock.sleepers.last == retry)
            #expect(harness.server.requests(to: "/file").count == 1, "nothing is sent before the server's date")
            clock.advance(by: .seconds(90))
            let outcome = try await harness.waitForEnd(of: record.id, in: events)
            #expect(outcome.final.isCompleted)
            #expect(harness.server.requests(to: "/file").count == 2)
        }
    }
}

import HaulCore
import NIOConcurrencyHelpers

/// Asks a running download to stop, from outside its task. The status is what the record
/// should say afterwards: paused (user pause), queued (shutdown, resumes on next start) or
/// removed (cancel).
final class StopSignal: Sendable {
    private let box = NIOLockedValueBox<DownloadStatus?>(nil)
    var requested: DownloadStatus? { box.withLockedValue { $0 } }
    func request(_ status: DownloadStatus) { box.withLockedValue { $0 = $0 ?? status } }
}

/// Performs the actions of one download's state machine: sends requests, streams bodies into
/// the `.part` file, checkpoints in the durability order of DESIGN rule 2 (write, fsync, then
/// commit the offset), verifies, and publishes the final file. All decisions are the machine's.
struct DownloadRunner: Sendable {
    let store: any DownloadStore
    let transport: any HTTPTransport
    let clock: any HaulClock
    let names: FileNameClaims
    let checkpointInterval: Duration
    let progressInterval: Duration
    let policy: RetryPolicy
    let stop: StopSignal
    let emit: @Sendable (DownloadEvent) -> Void

    /// Runs until the download completes, fails or is stopped; returns the record as persisted.
    func run(_ initial: DownloadRecord) async -> DownloadRecord {
        var session = Session(runner: self, machine: DownloadStateMachine(record: reconciled(initial), policy: policy))
        return await session.run()
    }

    /// The store may only claim bytes the `.part` file really has: if the file is shorter (or
    /// gone), the bytes past it are fetched again.
    private func reconciled(_ record: DownloadRecord) -> DownloadRecord {
        var record = record
        guard let part = DestinationFiles.partPath(record) else { return record }
        // Its bytes are in the final file: the verification below checks them there.
        if Self.wasPublished(record) { return record }
        let onDisk = DestinationFiles.size(part) ?? 0
        if record.segments[0].written > onDisk { record.segments[0].written = 0 }
        return record
    }

    var secondsSince1970: Int64 { WallClock.secondsSince1970() }

    /// A crash came after the verified `.part` got its final name but before the record was
    /// stored as completed: every byte was checkpointed, and the final file holds them.
    static func wasPublished(_ record: DownloadRecord) -> Bool {
        guard record.segments.allSatisfy(\.isComplete), let length = record.expectedLength,
              let part = DestinationFiles.partPath(record), let final = DestinationFiles.finalPath(record) else { return false }
        return DestinationFiles.wasPublished(part: part, final: final, length: length)
    }
}

extension DownloadRunner {
    /// The mutable part of one run.
    fileprivate struct Session {
        let runner: DownloadRunner
        var machine: DownloadStateMachine
        var writer: FileChunkWriter?
        var body: (any ResponseBodyStream)?
        var head: ResponseHead?
        /// What the store holds for segment 0: never more than what is fsynced.
        var checkpointed: Int64 = 0
        var lastCheckpoint: Double = 0
        var lastProgress: Double = 0
        var speed = SpeedMeter()
        /// Set when the run found its file already published by a run that crashed.
        var published = false

        init(runner: DownloadRunner, machine: DownloadStateMachine) {
            self.runner = runner
            self.machine = machine
            self.checkpointed = machine.record.segments[0].written
        }

        var id: DownloadID { machine.record.id }
        var jitter: Double { Double.random(in: 0..<1) }

        mutating func run() async -> DownloadRecord {
            var action = machine.start()
            await save()
            runner.emit(DownloadEvent(id: id, kind: .started(offset: machine.record.completedLength)))
            while true {
                if let status = runner.stop.requested, action.isInterruptible {
                    action = machine.stopRequested(status: status)
                }
                switch action {
                case .request(let plan):
                    action = await send(plan)
                case .receive(let plan):
                    action = await receive(plan)
                case .retry(let delay):
                    runner.emit(DownloadEvent(id: id, kind: .retrying(
                        attempt: machine.failuresWithoutProgress, delay: delay,
                        error: machine.lastFailure ?? HaulError(.internal, "retrying without a failure"))))
                    do {
                        try await runner.clock.sleep(for: delay)
                        action = machine.retryTimerFired()
                    } catch {
                        // Only a stop interrupts the wait; the loop's head turns it into `.stop`.
                        action = machine.stopRequested(status: runner.stop.requested ?? .queued)
                    }
                case .verify:
                    action = await verify()
                case .complete:
                    return await complete()
                case .fail(let error):
                    await checkpoint()
                    await save()
                    runner.emit(DownloadEvent(id: id, kind: .failed(error)))
                    return machine.record
                case .stop:
                    await checkpoint()
                    await save()
                    let kind: DownloadEvent.Kind = switch machine.record.status {
                    case .paused: .paused
                    case .removed: .removed
                    default: .interrupted
                    }
                    runner.emit(DownloadEvent(id: id, kind: kind))
                    return machine.record
                }
            }
        }

        mutating func send(_ plan: RequestPlan) async -> DownloadStateMachine.Action {
            do {
                let (head, body) = try await runner.transport.send(plan)
                self.head = head
                self.body = body
                return machine.responseReceived(head, nowSecondsSince1970: runner.secondsSince1970, jitter: jitter)
            } catch {
                return transferFailed(error)
            }
        }

        mutating func transferFailed(_ error: any Error) -> DownloadStateMachine.Action {
            if let status = runner.stop.requested { return machine.stopRequested(status: status) }
            // Transports throw `HaulError`s already classified; anything else is a network failure.
            let haulError = (error as? HaulError) ?? HaulError(.network, "\(machine.record.request.url): \(error)")
            return machine.transferFailed(haulError, jitter: jitter)
        }

        /// Streams one body into the `.part` file.
        mutating func receive(_ plan: BodyPlan) async -> DownloadStateMachine.Action {
            guard let body else { return machine.transferFailed(HaulError(.internal, "no body to read"), jitter: jitter) }
            self.body = nil
            do {
                try await openFile()
                // The record (name, validator, length) is stored before any byte of this body, and
                // the stored offset never exceeds the file: the truncate below can only shorten it.
                let hadBytes = checkpointed > 0
                checkpointed = min(checkpointed, plan.fileOffset)
                await save()
                try await writer!.truncate(to: plan.fileOffset)
                if hadBytes, plan.fileOffset == 0 {
                    runner.emit(DownloadEvent(id: id, kind: .restarted(reason: "the server sent the whole file; starting over")))
                }
            } catch {
                return diskFailed(error)
            }
            speed.reset()
            var discard = plan.discard
            var limit = plan.limit ?? Int64.max
            do {
                while limit > 0, let chunk = try await body.next() {
                    let written = try await write(chunk, discard: &discard, limit: limit)
                    limit -= written
                    machine.bytesWritten(written)
                    try await tick()
                }
            } catch let error as HaulError where error.code == .diskFull || error.code == .fileSystem {
                return diskFailed(error)
            } catch {
                await checkpoint()
                return transferFailed(error)
            }
            return machine.bodyEnded(jitter: jitter)
        }

        /// Hands one chunk to the writer, skipping `discard` bytes and keeping at most `limit`.
        mutating func write(_ chunk: any ByteChunk, discard: inout Int64, limit: Int64) async throws -> Int64 {
            let skip = Int(min(discard, Int64(chunk.count)))
            discard -= Int64(skip)
            let keep = Int(min(Int64(chunk.count - skip), limit))
            guard keep > 0, let writer else { return 0 }
            try await writer.append(skip == 0 && keep == chunk.count ? chunk : chunk.slice(skip..<(skip + keep)))
            return Int64(keep)
        }

        /// Checkpoints and reports progress when they are due.
        mutating func tick() async throws {
            let now = runner.clock.seconds()
            if now - lastCheckpoint >= runner.checkpointInterval.seconds {
                try await durableCheckpoint()
                lastCheckpoint = now
            }
            if now - lastProgress >= runner.progressInterval.seconds {
                lastProgress = now
                emitProgress(at: now)
            }
        }

        mutating func emitProgress(at now: Double) {
            let record = machine.record
            speed.record(bytes: record.completedLength, at: now)
            runner.emit(DownloadEvent(id: id, kind: .progress(Progress(
                completed: record.completedLength, total: record.expectedLength, bytesPerSecond: speed.bytesPerSecond))))
        }

        /// Write, fsync, then commit the offset: the store never runs ahead of the disk.
        mutating func durableCheckpoint() async throws {
            guard let writer else { return }
            try await writer.sync()
            checkpointed = machine.record.segments[0].written
            await save()
        }

        /// A checkpoint on the way out: a failure is not thrown, and the stored offset then
        /// stays at the last good one.
        mutating func checkpoint() async {
            try? await durableCheckpoint()
        }

        mutating func diskFailed(_ error: any Error) -> DownloadStateMachine.Action {
            machine.diskFailed(diskError(error), durableLength: checkpointed)
        }

        mutating func openFile() async throws {
            guard writer == nil else { return }
            if machine.record.fileName == nil {
                let finalURL = (try? RemoteURL(head?.url ?? "")) ?? machine.record.request.url
                let name = try await runner.names.claim(for: machine.record, contentDisposition: head?.headers["Content-Disposition"],
                                                        finalURL: finalURL)
                machine.setFileName(name)
            }
            guard let part = DestinationFiles.partPath(machine.record) else { return }
            try DestinationFiles.makeDirectory(machine.record.request.directory)
            writer = try FileChunkWriter(path: part)
        }

        mutating func verify() async -> DownloadStateMachine.Action {
            if DownloadRunner.wasPublished(machine.record) {
                // Finishing what a crash interrupted: the file is checked where it now is and
                // never downloaded again.
                published = true
                let record = machine.record
                return machine.verified(await Verifier.verify(
                    path: DestinationFiles.finalPath(record)!, expectedLength: record.expectedLength,
                    checksum: record.request.checksum, url: record.request.url))
            }
            do {
                try await openFile()
                try await durableCheckpoint()
            } catch {
                return machine.verified(diskError(error))
            }
            let record = machine.record
            let error = await Verifier.verify(path: DestinationFiles.partPath(record)!, expectedLength: record.expectedLength,
                                              checksum: record.request.checksum, url: record.request.url)
            if error != nil {
                // The bytes are wrong: never resume from them.
                try? await writer?.truncate(to: 0)
                checkpointed = 0
            }
            return machine.verified(error)
        }

        func diskError(_ error: any Error) -> HaulError {
            (error as? HaulError) ?? HaulError(.fileSystem, "\(error)")
        }

        mutating func complete() async -> DownloadRecord {
            let record = machine.record
            let part = DestinationFiles.partPath(record)!
            let final = DestinationFiles.finalPath(record)!
            writer = nil
            do {
                if published {
                    DestinationFiles.finishPublish(part: part, final: final)
                } else {
                    try DestinationFiles.publish(part: part, final: final)
                }
            } catch {
                // Verified bytes stay in the `.part`; a rerun publishes them once the name is free.
                if case .fail(let error) = machine.diskFailed(diskError(error), durableLength: checkpointed) {
                    await save()
                    runner.emit(DownloadEvent(id: id, kind: .failed(error)))
                }
                return machine.record
            }
            await save()
            runner.emit(DownloadEvent(id: id, kind: .progress(Progress(
                completed: record.completedLength, total: record.expectedLength, bytesPerSecond: speed.bytesPerSecond))))
            runner.emit(DownloadEvent(id: id, kind: .completed(path: final)))
            return machine.record
        }

        /// Stores the record with segment 0 at the last checkpoint, never past it.
        func save() async {
            var record = machine.record
            record.segments[0].written = min(checkpointed, record.segments[0].written)
            // A failed save is not fatal: the download goes on and the next checkpoint tries again.
            try? await runner.store.save(record)
        }
    }
}

extension DownloadStateMachine.Action {
    /// Actions a stop request may replace; verification and its outcome always run to the end.
    var isInterruptible: Bool {
        switch self {
        case .request, .receive, .retry: true
        case .verify, .complete, .fail, .stop: false
        }
    }
}

extension Duration {
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

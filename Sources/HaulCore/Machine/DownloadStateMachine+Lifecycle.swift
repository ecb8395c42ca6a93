/// A download's life from start to its end: start, stop, verification, publishing, failures
/// of the disk and the store, and the helpers every part of the machine ends through.
extension DownloadStateMachine {
    // MARK: Lifecycle events

    /// Begin (or continue) this download, given what is on disk.
    public mutating func start(_ local: LocalFiles, now: Double) -> [Action] {
        record.status = .running
        record.error = nil
        lastCheckpoint = now
        self.now = now
        takeNoted(local)
        takeFinalModified(local)
        completedAtLastCheckpoint = completedLength
        completedAtLastNote = completedLength
        // The furthest byte the record claims; a part with no byte claims nothing.
        let claimed = parts.filter { $0.durable > 0 }.map { $0.start - fileBase + $0.durable }.max() ?? 0
        if local.published, parts.allSatisfy(\.isComplete), expectedLength != nil {
            state = .verifying
            verifyTarget = .published
            return [.persist, .notify(.started(offset: completedLength)), .verify(.published)]
        }
        var actions: [Action] = []
        if parts.contains(where: { $0.durable > 0 }), (local.partSize ?? 0) < claimed {
            // The store may only claim bytes the `.part` really has.
            resetEntity()
            actions.append(.notify(.restarted(reason: "the .part file is shorter than its checkpoint; starting over", cause: .partShorter)))
        }
        actions.insert(.persist, at: 0)
        actions.append(.notify(.started(offset: completedLength)))
        if parts.allSatisfy(\.isComplete), expectedLength != nil {
            return actions + beginVerify()
        }
        state = .downloading
        return actions + openFirstConnection()
    }

    /// The user changed the download's rate limit while it runs: stored with the next write.
    public mutating func setRateLimit(_ bytesPerSecond: Int64?) -> [Action] {
        record.request.maxBytesPerSecond = bytesPerSecond
        return [.persist]
    }

    /// The final name was chosen (after `.nameFile`).
    public mutating func setFileName(_ name: String) {
        record.fileName = name
    }

    /// Pause, shutdown, remove: stop now, keeping what is on disk. `status` is what the record
    /// says afterwards (paused, queued or running for a shutdown that resumes by itself, removed).
    /// A verification runs to its end, except for a remove.
    public mutating func stopRequested(status: DownloadStatus) -> [Action] {
        switch state {
        case .idle, .downloading:
            stopStatus = status
            return closeEverything() + finishStopIfClosed()
        case .verifying:
            guard status == .removed else {
                stopStatus = stopStatus ?? status
                return []
            }
            stopStatus = .removed
            return [.cancelVerify]
        case .publishing:
            stopStatus = stopStatus ?? status
            return []
        case .completed, .failed, .stopped, .lost:
            return []
        }
    }

    /// The result of `.verify`: an error, or the pieces whose digests failed (`+PieceCheck`;
    /// then the whole-file digest failed too, and they are fetched again first).
    public mutating func verified(_ error: HaulError?, badPieces: [Int] = []) -> [Action] {
        guard state == .verifying else { return unexpected("verification") }
        var error = error
        if !badPieces.isEmpty {
            if verifyTarget == .part, stopStatus != .removed { return refetch(badPieces) }
            error = error ?? HaulError(.checksumMismatch, "\(record.request.url): \(badPieces.count) pieces fail their digests")
        }
        if let error {
            if stopStatus == .removed {
                return stopNow()
            }
            // A wrong file is never kept as the basis of a resume: stored as empty, then cut.
            resetEntity()
            return [.persist, .truncate(to: 0)] + fail(error)
        }
        state = .publishing
        return [publishAction]
    }

    /// The result of `.publish`.
    public mutating func published(_ error: HaulError?) -> [Action] {
        guard state == .publishing else { return unexpected("publish") }
        if let error {
            // Verified bytes stay in the `.part`; a rerun publishes them once the name is free.
            return fail(error)
        }
        record.status = .completed
        state = .completed
        return [.persist] + remoteTimeActions + [.finish]
    }

    /// Writing or syncing the `.part` failed (disk full, permissions): nothing more can be
    /// written; the record keeps only durable bytes. `connection` is the one whose write failed
    /// (this is its last report).
    public mutating func diskFailed(_ error: HaulError, connection: ConnectionID? = nil) -> [Action] {
        if let connection { connections[connection] = nil }
        guard state == .downloading || state == .idle else { return [] }
        return fail(error)
    }

    /// The store refused to save the record because another host took the download over (a
    /// fleet's lease, see `SharedQueueStore`): nothing more may be written, to the store or to
    /// the file. Every connection closes, what the writer holds is dropped, and the run ends
    /// without a checkpoint; the record is the new holder's.
    public mutating func leaseLost() -> [Action] {
        guard state != .lost else { return [] }
        state = .lost
        return closeEverything() + [.discardWrites, .finish]
    }

    /// The shared store cannot be reached: stop at this checkpoint as a shutdown would (status
    /// left running), so the download goes on, here or elsewhere, once it is back.
    public mutating func storeUnavailable() -> [Action] {
        stopRequested(status: .running)
    }

    // MARK: Helpers

    mutating func fail(_ error: HaulError) -> [Action] {
        record.status = .failed
        record.error = error
        state = .failed
        // What is on disk is kept for a later retry: checkpoint it.
        return closeEverything() + [.checkpoint(epoch: epoch), .persist, .finish]
    }

    mutating func beginVerify() -> [Action] {
        state = .verifying
        verifyTarget = .part
        lastCheckpoint = 0
        return [.checkpoint(epoch: epoch), .verify(.part)]
    }

    /// Forgets every byte and fact about the remote entity: it changed, or it cannot be resumed.
    mutating func resetEntity() {
        forgetKeptBytes()
        record.validator = nil
        record.totalLength = nil
        record.serverDigest = nil
        // The parts are reset too: the next response stores the record whatever it says, before
        // the `.part` is cut (a same-looking entity would otherwise leave the old claims stored).
        storedEntity = nil
        let range = record.request.range
        parts = [Part(start: range?.start ?? 0, end: range?.end, appended: 0, durable: 0)]
        rangesProven = false
        // Nothing is proven about an entity that is gone.
        sources.forgetProofs()
        epoch += 1
    }

    mutating func unexpected(_ what: String) -> [Action] {
        assertionFailure("unexpected \(what) in state \(state)")
        return fail(HaulError(.internal, "unexpected \(what) in state \(state)"))
    }
}

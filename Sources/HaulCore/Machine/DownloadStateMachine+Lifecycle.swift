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
            state = .verifying(.published, stop: nil)
            return [
                .persist, .notify(.started(offset: completedLength)),
                .notify(.transferEnded(finishBytes: completedLength)),
                .verify(.published),
            ]
        }
        if let copied = local.copied, canCopy {
            // A file with this digest was there already, checked as it was copied: published
            // without a request. A crash before the publish finds every byte claimed, and
            // verifies the `.part` before publishing it.
            record.totalLength = copied
            parts = [Part(start: 0, end: copied - 1, appended: copied, durable: copied)]
            state = .publishing
            return [
                .persist, .notify(.started(offset: copied)), .notify(.transferEnded(finishBytes: 0)),
                publishAction(.part),
            ]
        }
        var actions: [Action] = []
        if parts.contains(where: { $0.durable > 0 }), (local.partSize ?? 0) < claimed {
            // The store may only claim bytes the `.part` really has.
            resetEntity()
            actions.append(
                .notify(
                    .restarted(
                        reason: "the .part file is shorter than its checkpoint; starting over", cause: .partShorter)))
        }
        actions.insert(.persist, at: 0)
        actions.append(.notify(.started(offset: completedLength)))
        if parts.allSatisfy(\.isComplete), expectedLength != nil {
            return actions + beginVerify()
        }
        state = .downloading
        beginGrowth()
        return actions + openFirstConnection()
    }

    /// Whether this download's file may be a copy of another with its digest instead of fetched:
    /// its request names the whole file's digest in a strong algorithm (SHA-256 or SHA-512), it
    /// has no byte yet, and it does not compare times with the server (`-N`).
    public var canCopy: Bool {
        guard let checksum = record.request.checksum, checksum.algorithm.identifiesContent else { return false }
        return record.request.range == nil && !record.request.timestamping && record.completedLength == 0
            && parts.allSatisfy { $0.durable == 0 }
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
        case .idle, .downloading, .restarting, .refreshingURL, .stopping:
            // A stop wins over a start-over or a new URL; a later stop over an earlier one.
            state = .stopping(status)
            return closeEverything() + finishStopIfClosed()
        case .closingForVerify(let stop):
            // Nothing verifies yet: a remove stops once the connections have closed.
            state = .closingForVerify(stop: status == .removed ? .removed : stop ?? status)
            return []
        case .verifying(let target, let stop):
            guard status == .removed else {
                state = .verifying(target, stop: stop ?? status)
                return []
            }
            state = .verifying(target, stop: .removed)
            return [.cancelVerify]
        case .publishing, .completed, .failed, .stopped, .lost:
            return []
        }
    }

    /// The result of `.verify`: an error, or the pieces whose digests failed (`+PieceCheck`;
    /// then the whole-file digest failed too, and they are fetched again first).
    public mutating func verified(_ error: HaulError?, badPieces: [Int] = []) -> [Action] {
        guard case .verifying(let target, let stop) = state else { return unexpected("verification") }
        var error = error
        if !badPieces.isEmpty {
            if target == .part, stop != .removed { return refetch(badPieces, stop: stop) }
            error =
                error
                ?? HaulError(.checksumMismatch, "\(record.request.url): \(badPieces.count) pieces fail their digests")
        }
        if let error {
            if stop == .removed {
                return stopNow(.removed)
            }
            // A wrong file is never kept as the basis of a resume: stored as empty, then cut.
            resetEntity()
            return [.persist, .truncate(to: 0)] + fail(error)
        }
        state = .publishing
        return [publishAction(target)]
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
        return [.persist] + remoteTimeActions + [.finish(.completed)]
    }

    /// Writing or syncing the `.part` failed (disk full, permissions): nothing more can be
    /// written; the record keeps only durable bytes. `connection` is the one whose write failed
    /// (this is its last report).
    public mutating func diskFailed(_ error: HaulError, connection: ConnectionID? = nil) -> [Action] {
        if let connection { connections[connection] = nil }
        guard isDownloading || state == .idle else { return [] }
        return fail(error)
    }

    /// The store refused to save the record because another host took the download over (a
    /// fleet's lease, see `SharedQueueStore`): nothing more may be written, to the store or to
    /// the file. Every connection closes, what the writer holds is dropped, and the run ends
    /// without a checkpoint; the record is the new holder's.
    public mutating func leaseLost() -> [Action] {
        guard state != .lost else { return [] }
        state = .lost
        return closeEverything() + [.discardWrites, .finish(.interrupted)]
    }

    /// The shared store cannot be reached: stop at this checkpoint as a shutdown would (status
    /// left running), so the download goes on, here or elsewhere, once it is back.
    public mutating func storeUnavailable() -> [Action] {
        stopRequested(status: .running)
    }

    /// Saving the record failed, for a reason other than a lost lease or a store out of reach
    /// (`leaseLost`, `storeUnavailable`). While the download runs, the next checkpoint saves
    /// again. At its end the store keeps the last record it took (status running, older
    /// offsets, which the disk has): a shutdown loses nothing, a completed download's published
    /// file is verified where it is by the next run, a failure keeps its own error and a removal
    /// is stored by the manager. A pause that is not stored is no pause (the download would go on
    /// at the next start): the run ends failed, saying so.
    public mutating func persistFailed(_ error: HaulError) -> [Action] {
        guard state == .stopped, record.status == .paused else { return [.notify(.saveFailed(error))] }
        let failure = HaulError(
            error.code,
            "\(record.request.url): the pause could not be stored, so the download would go on "
                + "at the next start: \(error.message)")
        record.status = .failed
        record.error = failure
        state = .failed
        return [.finish(.failed(failure))]
    }

    // MARK: Helpers

    mutating func fail(_ error: HaulError) -> [Action] {
        record.status = .failed
        record.error = error
        state = .failed
        // What is on disk is kept for a later retry: checkpoint it.
        return closeEverything() + [.checkpoint(epoch: epoch), .persist, .finish(.failed(error))]
    }

    /// Every byte is in and every connection has closed: the `.part` is synced and verified.
    mutating func beginVerify() -> [Action] {
        state = .verifying(.part, stop: stopRequest)
        lastCheckpoint = 0
        return [.notify(.transferEnded(finishBytes: completedLength)), .checkpoint(epoch: epoch), .verify(.part)]
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

    /// An event that cannot happen in this state (a verification's result while nothing
    /// verifies, a response on a connection that is receiving): the runner and the machine
    /// disagree, and nothing the machine would do next can be trusted. The download fails with
    /// an internal error, keeping what is on disk (a test asserts this, in debug builds too).
    mutating func unexpected(_ what: String) -> [Action] {
        fail(HaulError(.internal, "unexpected \(what) in state \(state)"))
    }

    // MARK: Stopping

    /// Once no connection is left, a requested stop checkpoints, stores its status and ends.
    mutating func finishStopIfClosed() -> [Action] {
        guard case .stopping(let status) = state, connections.isEmpty else { return [] }
        return stopNow(status)
    }

    mutating func stopNow(_ status: DownloadStatus) -> [Action] {
        record.status = status
        state = .stopped
        let end: End =
            switch status {
            case .paused: .paused
            case .removed: .removed
            default: .interrupted
            }
        return [.checkpoint(epoch: epoch), .persist, .finish(end)]
    }

    /// All bytes are in: verification waits for the connections told to close.
    mutating func beginVerifyWhenClosed() -> [Action] {
        state = .closingForVerify(stop: stopRequest)
        return connections.isEmpty ? beginVerify() : []
    }
}

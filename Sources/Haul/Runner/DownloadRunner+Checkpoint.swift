import HaulCore
import Logging
import NIOConcurrencyHelpers

/// Checkpoints in the durability order of DESIGN rule 2 (write, fsync, then store the offsets),
/// saves of the record, and progress notes between checkpoints.
extension RunSession {
    func persist() async {
        let record = machine.withLockedValue { $0.persistentRecord }
        runner.saving(record)
        do {
            try await runner.metrics.time(runner.metrics.store) { try await runner.store.save(record) }
            runner.saved(record)
        } catch let error as HaulError where error.code == .leaseLost {
            runner.logger.warning("another host took the download over", metadata: ["id": "\(record.id)"])
            await execute(machine.withLockedValue { $0.leaseLost() })
        } catch let error as HaulError where error.code == .storeUnavailable {
            runner.logger.warning(
                "the store cannot be reached: stopping at this checkpoint", metadata: ["id": "\(record.id)"])
            await execute(machine.withLockedValue { $0.storeUnavailable() })
        } catch {
            await execute(machine.withLockedValue { $0.persistFailed(HaulError.from(error, otherwise: .store)) })
        }
    }

    /// Write, fsync, then store the offsets: the store never runs ahead of the disk.
    func checkpoint(epoch: Int) async {
        do {
            // No name yet: no byte was written, none to sync.
            guard let writer = try await openWriter() else { return }
            let written = try await runner.metrics.time(runner.metrics.sync) { try await writer.checkpoint() }
            await execute(machine.withLockedValue { $0.synced(epoch: epoch, written: written) })
        } catch {
            runner.logger.error("checkpoint failed", metadata: ["id": "\(id)", "error": "\(error)"])
            await execute(machine.withLockedValue { $0.diskFailed(HaulError.from(error, otherwise: .fileSystem)) })
        }
    }

    /// Notes where each part's written bytes end, without fsync (`.noteProgress`). A failed
    /// write of the `.part` is the machine's to hear; a note that cannot be written is only
    /// logged (the next checkpoint still comes).
    func noteProgress() async {
        guard let notes = runner.notes, let boot = notes.boot, let writer, let directory,
            let part = DestinationFiles.partName(record)
        else { return }
        let written: [Int64: Int64]
        do {
            written = try await writer.flush()
        } catch {
            await execute(machine.withLockedValue { $0.diskFailed(HaulError.from(error, otherwise: .fileSystem)) })
            return
        }
        let (id, record) = (id, record)
        do {
            try await io.run {
                guard let file = directory.status(of: part) else { return }
                try notes.write(id, tag: .init(boot: boot, part: file, record: record), written: written)
            }
        } catch {
            runner.logger.warning("cannot note progress", metadata: ["id": "\(id)", "error": "\(error)"])
        }
    }

    /// What a run of this download killed on this boot noted about this very `.part` and
    /// entity, once the `.part` is synced (so the store may claim those bytes); empty otherwise.
    func notedProgress() async -> [Int64: Int64] {
        let record = self.record
        guard let notes = runner.notes, let boot = notes.boot, let directory,
            let part = DestinationFiles.partName(record)
        else { return [:] }
        do {
            return try await io.run {
                guard let file = directory.status(of: part) else { return [:] }
                let noted = notes.read(record.id, tag: .init(boot: boot, part: file, record: record))
                guard !noted.isEmpty else { return [:] }
                try directory.syncFile(part)
                return noted
            }
        } catch {
            runner.logger.warning(
                "noted progress not used: cannot sync the .part", metadata: ["id": "\(id)", "error": "\(error)"])
            return [:]
        }
    }

    func removeNote() async {
        guard let notes = runner.notes else { return }
        let id = id
        do {
            try await io.run { try notes.remove(id) }
        } catch {
            runner.logger.warning("cannot remove the progress note", metadata: ["id": "\(id)", "error": "\(error)"])
        }
    }

    /// Runs a checkpoint beside the loop, which hears of it as `.synced`. The machine asks for
    /// one at a time (`DownloadStateMachine.backgroundCheckpointEnded`).
    func startBackgroundCheckpoint(epoch: Int) async {
        assert(checkpointTask == nil, "the machine asked for a second background checkpoint")
        let post = self.post
        let writer: any ChunkWriter
        do {
            guard let opened = try await openWriter() else {
                // No name yet: no byte was written, none to sync.
                post.yield(.synced(epoch: epoch, .success([:])))
                return
            }
            writer = opened
        } catch {
            post.yield(.synced(epoch: epoch, .failure(HaulError.from(error, otherwise: .fileSystem))))
            return
        }
        let metrics = runner.metrics
        checkpointTask = Task {
            do {
                post.yield(
                    .synced(
                        epoch: epoch, .success(try await metrics.time(metrics.sync) { try await writer.checkpoint() })))
            } catch {
                post.yield(.synced(epoch: epoch, .failure(HaulError.from(error, otherwise: .fileSystem))))
            }
        }
    }
}

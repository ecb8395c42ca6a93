import HaulCore
import Logging
import NIOConcurrencyHelpers

/// The end of a complete download: verification, the final name, the server's time.
extension RunSession {
    func startVerify(_ target: DownloadStateMachine.VerifyTarget) async {
        let record = self.record
        let (expected, digest) = machine.withLockedValue { ($0.expectedLength, $0.digestToVerify) }
        let name = target == .published ? record.fileName : DestinationFiles.partName(record)
        let (post, io) = (self.post, io)
        let directory: Result<DownloadDirectory, HaulError>
        do {
            directory = .success(try await resolvedDirectory())
        } catch {
            directory = .failure(HaulError.from(error, otherwise: .fileSystem))
        }
        verifyTask = Task {
            guard let name else {
                post.yield(
                    .verified(
                        Verifier.Verdict(
                            error: HaulError(.internal, "nothing to verify: the download has no file name"))))
                return
            }
            switch directory {
            case .success(let directory):
                post.yield(
                    .verified(
                        await Verifier.verify(
                            name, in: directory, io: io, expectedLength: expected,
                            digest: digest, pieces: record.request.range == nil ? record.request.pieceHashes : nil,
                            composite: record.request.range == nil ? record.request.compositeChecksum : nil,
                            url: record.request.url)))
            case .failure(let error):
                post.yield(.verified(Verifier.Verdict(error: error)))
            }
        }
    }

    func publish(_ target: DownloadStateMachine.VerifyTarget, replacing: Bool = false) async {
        let record = self.record
        guard let part = DestinationFiles.partName(record), let final = record.fileName else { return }
        // A periodic checkpoint's fsync uses the descriptor: it ends before the file closes (and
        // the writer itself never closes under a running fsync).
        await checkpointTask?.value
        var failure: HaulError?
        let written = writer
        writer = nil
        do {
            try await written?.close()
            let directory = try await resolvedDirectory()
            try await io.run {
                if target == .published {
                    try directory.finishPublish(part: part, final: final)
                } else if replacing {
                    try directory.replace(part: part, final: final)
                } else {
                    try directory.link(part: part, final: final)
                }
            }
            // The new name is durable before the machine hears of it: one fsync of the
            // directory for every file published into it meanwhile.
            try await runner.directorySyncs.sync(directory, io: io)
        } catch {
            failure = HaulError.from(error, otherwise: .fileSystem)
        }
        if failure == nil { await keepInStore() }
        await execute(machine.withLockedValue { $0.published(failure) })
    }

    /// The published file gets the server's time (`-N`, `--remote-time`). A file system that
    /// refuses is logged: the file is complete and verified either way.
    func setModificationTime(_ seconds: Int64) async {
        guard let final = record.fileName else { return }
        do {
            let directory = try await resolvedDirectory()
            try await io.run { try directory.setModificationTime(of: final, to: seconds) }
        } catch {
            runner.logger.warning(
                "cannot set the file's time from Last-Modified", metadata: ["id": "\(id)", "error": "\(error)"])
        }
    }
}

import HaulCore
import Logging
import NIOConcurrencyHelpers

/// The download's directory, its `.part` writer and its file name.
extension RunSession {
    /// Opens the `.part` once the download has its name, in its directory resolved beneath
    /// its root (created if missing).
    func openWriter() async throws -> (any ChunkWriter)? {
        if let writer { return writer }
        let record = self.record
        guard let part = DestinationFiles.partName(record) else { return nil }
        let opened = try await runner.makeWriter(
            try await resolvedDirectory(), part, !partExisted, record.request.connections, io)
        writer = opened
        return opened
    }

    /// Writes what is left and closes the `.part` (after every connection and checkpoint ended).
    func closeWriter() async {
        guard let writer else { return }
        self.writer = nil
        do {
            try await writer.close()
        } catch {
            runner.logger.warning("cannot close the .part", metadata: ["id": "\(id)", "error": "\(error)"])
        }
    }

    func resolvedDirectory() async throws -> DownloadDirectory {
        if let directory { return directory }
        let (path, roots) = (record.request.directory, runner.roots)
        guard let resolved = try await io.run({ try DownloadDirectory.resolve(path, roots: roots, create: true) })
        else {
            throw HaulError(.fileSystem, "cannot create \(path)")
        }
        directory = resolved
        return resolved
    }

    /// Claims a name (in this process, on disk and in the store) and creates its `.part` at
    /// once with `O_EXCL`: a `.part` another download or program made since the claim looked
    /// gives the next name, so the record always names the file this run created.
    func nameFile(contentDisposition: String?, finalURL: RemoteURL) async {
        let record = self.record
        guard record.fileName == nil else { return }
        do {
            for _ in 0..<Self.nameAttempts {
                let name = try await runner.names.claim(
                    for: record, contentDisposition: contentDisposition, finalURL: finalURL)
                machine.withLockedValue { $0.setFileName(name) }
                do {
                    _ = try await openWriter()
                    return
                } catch let error as HaulError where error.code == .fileExists && !partExisted {
                    await runner.names.release(directory: record.request.directory, name: name)
                    runner.logger.notice(
                        "the name was taken on disk meanwhile; trying the next",
                        metadata: ["id": "\(id)", "name": "\(name)"])
                }
            }
            throw HaulError(
                .fileExists,
                "no free file name in \(record.request.directory): every one tried appeared while it was claimed")
        } catch let error as HaulError where error.code == .leaseLost {
            await execute(machine.withLockedValue { $0.leaseLost() })
        } catch {
            await execute(machine.withLockedValue { $0.diskFailed(HaulError.from(error, otherwise: .fileSystem)) })
        }
    }

    /// How many names a run tries when each is taken on disk between its claim and its `.part`.
    static let nameAttempts = 100
}

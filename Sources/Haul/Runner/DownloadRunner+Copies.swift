import HaulCore
import Logging
import NIOConcurrencyHelpers

/// A download whose request names its file's digest takes a file already on this machine with
/// that digest instead of fetching it: the file of a twin that just completed (the queue's
/// `copy`), else the content store's (`--content-store`). Each is checked against the digest
/// before it is linked; the machine then publishes the `.part` without a request
/// (`LocalFiles.copied`).
extension RunSession {
    /// Copies a file with the download's digest into its `.part`; returns its length, nil when
    /// no candidate has the digest (or the copy failed, logged: the download then fetches).
    func copyByDigest() async -> Int64? {
        let record = self.record
        guard let checksum = record.request.checksum, let part = DestinationFiles.partName(record) else { return nil }
        let stored = runner.contentStore?.path(for: checksum)
        let candidates =
            [runner.twinFile.map { DigestCopies.Candidate(path: $0, hardLink: false) }]
            + [stored.map { DigestCopies.Candidate(path: $0, hardLink: true) }]
        let found = candidates.compactMap { $0 }
        guard !found.isEmpty else { return nil }
        do {
            let directory = try await resolvedDirectory()
            let (copied, mismatched) = try await io.run {
                var mismatched: [String] = []
                let copied = try DigestCopies.copy(
                    checksum, from: found, into: directory, name: part, mismatched: &mismatched,
                    stopped: { false })
                return (copied, mismatched)
            }
            for path in mismatched { await mismatch(path, checksum: checksum, isStored: path == stored) }
            guard let copied else { return nil }
            runner.logger.notice(
                "the file is already here: not fetched",
                metadata: [
                    "id": "\(id)", "from": "\(copied.source)", "how": "\(copied.method.rawValue)",
                    "bytes": "\(copied.length)",
                ])
            return copied.length
        } catch {
            runner.logger.warning(
                "cannot copy a file with the same digest; fetching it",
                metadata: ["id": "\(id)", "error": "\(error)"])
            return nil
        }
    }

    /// A candidate had another digest: the content store's file is dropped (edited through a hard
    /// link, it is no longer what its name says); a twin's file is the user's, and left alone.
    private func mismatch(_ path: String, checksum: Checksum, isStored: Bool) async {
        runner.logger.warning(
            "a file that should have the download's digest does not; it is not used",
            metadata: ["id": "\(id)", "path": "\(path)", "digest": "\(checksum)"])
        guard isStored, let store = runner.contentStore else { return }
        do {
            try await io.run { try store.drop(checksum) }
        } catch {
            runner.logger.warning(
                "cannot drop the content store's damaged file", metadata: ["path": "\(path)", "error": "\(error)"])
        }
    }

    /// Puts the published file into the content store, when there is one and the file was
    /// verified against a digest that names content. A failure costs the store a file, not the
    /// download: it is logged.
    func keepInStore() async {
        let record = self.record
        guard let store = runner.contentStore, record.request.range == nil, let name = record.fileName,
            let checksum = machine.withLockedValue({ $0.digestToVerify?.checksum }),
            checksum.algorithm.identifiesContent
        else { return }
        do {
            let directory = try await resolvedDirectory()
            if let method = try await io.run({ try store.keep(name, in: directory, as: checksum) }) {
                runner.logger.debug(
                    "kept in the content store", metadata: ["id": "\(id)", "how": "\(method.rawValue)"])
            }
        } catch {
            runner.logger.warning(
                "cannot keep the file in the content store", metadata: ["id": "\(id)", "error": "\(error)"])
        }
    }
}

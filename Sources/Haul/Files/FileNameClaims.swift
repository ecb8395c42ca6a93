import HaulCore

/// Picks the final name of a download and reserves it, one claim at a time, so that two
/// downloads in the same directory (in this process or in the store) never share a name, and
/// an existing file is never overwritten: a taken name becomes `name.1.ext`, `name.2.ext`, ...
/// A name the user chose with `-o` is never changed: if it is taken, the download fails.
/// Names are reserved in the store (`reserveFileName`), so two hosts of a fleet never give one
/// name to two downloads; the runner then creates the `.part` with `O_EXCL`.
/// Looking at the directory runs on the shared thread pool, not on this actor's thread.
actor FileNameClaims {
    let store: any DownloadStore
    private var claimed: Set<String> = []

    init(store: any DownloadStore) {
        self.store = store
    }

    /// - Parameter finalURL: the URL that answered, after redirects: its last path segment names
    ///   the file when the server suggests nothing.
    func claim(for record: DownloadRecord, contentDisposition: String?, finalURL: RemoteURL) async throws -> String {
        let directory = record.request.directory
        let base = FileNameSanitizer.chooseName(explicit: nil, contentDisposition: contentDisposition, url: finalURL)
        for attempt in 0..<10_000 {
            let candidate = attempt == 0 ? base : FileNameSanitizer.alternative(base, attempt: attempt)
            let path = DestinationFiles.join(directory, candidate)
            if claimed.contains(path) { continue }
            if try await BlockingIO.run({
                DestinationFiles.exists(path) || DestinationFiles.exists(path + DestinationFiles.partSuffix)
            }) {
                continue
            }
            // Claimed by another claim while this one looked at the disk.
            if claimed.contains(path) { continue }
            // Reserve before the store lookup suspends this actor, so a concurrent claim skips it.
            claimed.insert(path)
            // The store's reservation decides between processes and hosts: the record then names
            // the file in the store already, and its unique index refuses a second live holder.
            if try await !store.reserveFileName(candidate, directory: directory, for: record.id) {
                claimed.remove(path)
                continue
            }
            return candidate
        }
        throw HaulError(.fileExists, "no free file name for \(base) in \(directory)")
    }

    /// What a batch of adds needs to know about its explicit names, looked up once for the
    /// whole batch (one look at the disk, one query) instead of once per download.
    struct Facts: Sendable {
        /// Paths that exist on disk.
        var existing: Set<String> = []
        /// The live record holding each name that one holds.
        var holders: [FileNamePlace: DownloadID] = [:]

        /// The download holding `request`'s explicit name, if it has one and one holds it.
        func holder(of request: DownloadRequest) -> DownloadID? {
            request.fileName.flatMap { holders[FileNamePlace(directory: request.directory, fileName: $0)] }
        }
    }

    /// Looks up the explicit names of `requests`.
    func facts(for requests: [DownloadRequest]) async throws -> Facts {
        let places = requests.compactMap { request in
            request.fileName.map { FileNamePlace(directory: request.directory, fileName: $0) }
        }
        if places.isEmpty { return Facts() }
        let paths = places.map { DestinationFiles.join($0.directory, $0.fileName) }
        let existing = try await BlockingIO.run { Set(paths.filter(DestinationFiles.exists)) }
        return Facts(existing: existing, holders: try await store.fileNameHolders(places))
    }

    /// Checks an explicit `-o` name before the transfer starts; `facts`, when given, were looked
    /// up for it (in this batch's `facts(for:)`).
    func checkExplicit(_ record: DownloadRecord, facts: Facts? = nil) async throws {
        guard let name = record.fileName else { return }
        let path = DestinationFiles.join(record.request.directory, name)
        // `-N`: the file there is the one to compare with, replaced only by a newer verified one.
        if !record.request.timestamping {
            let exists =
                if let facts { facts.existing.contains(path) } else {
                    try await BlockingIO.run({ DestinationFiles.exists(path) })
                }
            if exists {
                throw HaulError(.fileExists, "\(path) already exists; remove it or choose another name with -o")
            }
        }
        guard !claimed.contains(path) else {
            throw HaulError(.fileExists, "\(path) is already the destination of another download")
        }
        claimed.insert(path)
        let taken: Bool
        if let facts {
            taken =
                facts.holders[FileNamePlace(directory: record.request.directory, fileName: name)].map {
                    $0 != record.id
                } ?? false
        } else {
            taken = try await store.isFileNameTaken(name, directory: record.request.directory, except: record.id)
        }
        if taken {
            claimed.remove(path)
            throw HaulError(.fileExists, "\(path) is already the destination of another download")
        }
    }

    func release(directory: String, name: String?) {
        guard let name else { return }
        claimed.remove(DestinationFiles.join(directory, name))
    }
}

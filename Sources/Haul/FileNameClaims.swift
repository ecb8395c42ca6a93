import HaulCore

/// Picks the final name of a download and reserves it, one claim at a time, so that two
/// downloads in the same directory (in this process or in the store) never share a name, and
/// an existing file is never overwritten: a taken name becomes `name.1.ext`, `name.2.ext`, ...
/// A name the user chose with `-o` is never changed: if it is taken, the download fails.
actor FileNameClaims {
    let store: any DownloadStore
    private var claimed: Set<String> = []

    init(store: any DownloadStore) {
        self.store = store
    }

    func claim(for record: DownloadRecord, contentDisposition: String?) async throws -> String {
        let directory = record.request.directory
        let base = FileNameSanitizer.chooseName(explicit: nil, contentDisposition: contentDisposition, url: record.request.url)
        for attempt in 0..<10_000 {
            let candidate = attempt == 0 ? base : FileNameSanitizer.alternative(base, attempt: attempt)
            let path = DestinationFiles.join(directory, candidate)
            if claimed.contains(path) || DestinationFiles.exists(path) || DestinationFiles.exists(path + DestinationFiles.partSuffix) {
                continue
            }
            if try await store.isFileNameTaken(candidate, directory: directory, except: record.id) { continue }
            claimed.insert(path)
            return candidate
        }
        throw HaulError(.fileExists, "no free file name for \(base) in \(directory)")
    }

    /// Checks an explicit `-o` name before the transfer starts.
    func checkExplicit(_ record: DownloadRecord) async throws {
        guard let name = record.fileName else { return }
        let path = DestinationFiles.join(record.request.directory, name)
        let takenInStore = try await store.isFileNameTaken(name, directory: record.request.directory, except: record.id)
        if claimed.contains(path) || takenInStore {
            throw HaulError(.fileExists, "\(path) is already the destination of another download")
        }
        if DestinationFiles.exists(path) {
            throw HaulError(.fileExists, "\(path) already exists; remove it or choose another name with -o")
        }
        claimed.insert(path)
    }

    func release(directory: String, name: String?) {
        guard let name else { return }
        claimed.remove(DestinationFiles.join(directory, name))
    }
}

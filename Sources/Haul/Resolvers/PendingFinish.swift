import HaulCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A finish an older daemon kept on disk (`STATE/finishes/*.json`, one per name of content,
/// until its files were in): read once, at the first start of a haul that keeps groups, made a
/// group (`DownloadManager.adopt`) and removed. Its JSON is `ContentFinish`'s own form.
public struct PendingFinish: Sendable, Codable {
    /// The downloads' root, where the finish is written.
    public var directory: String
    /// The files that must be in first.
    public var files: [DownloadGroup.File]
    /// What is written then.
    public var finish: ContentFinish

    /// A finish of `files` beneath `directory`.
    public init(directory: String, files: [DownloadGroup.File], finish: ContentFinish) {
        self.directory = directory
        self.files = files
        self.finish = finish
    }
}

/// The pending finishes an older daemon left in its folder, read and removed one at a time.
public struct PendingFinishes: Sendable {
    /// The folder of the files.
    public let folder: String

    /// The finishes kept in `folder`.
    public init(folder: String) {
        self.folder = folder
    }

    /// A finish kept, and its file's name in the folder.
    public struct Kept: Sendable {
        /// Its file's name.
        public var name: String
        /// The finish.
        public var pending: PendingFinish
    }

    /// Every finish kept, by name, read on a file thread; one that cannot be read is reported by
    /// `unreadable` and left where it is (a damaged file: the user decides).
    public func all(unreadable: @escaping @Sendable (String, String) -> Void) async throws(HaulError) -> [Kept] {
        try await Self.blocking { () throws(HaulError) in try allNow(unreadable: unreadable) }
    }

    /// Removes the finish `name` (made a group), on a file thread; the folder goes once empty.
    public func drop(_ name: String) async throws(HaulError) {
        try await Self.blocking { () throws(HaulError) in
            do {
                guard let directory = try DownloadDirectory.resolve(folder, roots: nil, create: false) else { return }
                try directory.remove(name)
                try directory.sync()
            } catch {
                throw HaulError.from(error, otherwise: .fileSystem)
            }
        }
    }

    private static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws(HaulError) -> T)
        async throws(HaulError) -> T
    {
        do {
            return try await BlockingIO.run { try body() }
        } catch {
            throw HaulError.from(error, otherwise: .fileSystem)
        }
    }

    private func allNow(unreadable: (String, String) -> Void) throws(HaulError) -> [Kept] {
        let names: [String]
        do {
            guard FileManager.default.fileExists(atPath: folder) else { return [] }
            names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".json") }
                .sorted()
        } catch {
            throw HaulError(.fileSystem, "cannot list \(folder): \(error)")
        }
        var found: [Kept] = []
        for name in names {
            do {
                guard let bytes = try SmallFiles.read(name, beneath: folder, maxBytes: 64 << 20) else { continue }
                found.append(Kept(name: name, pending: try JSONDecoder().decode(PendingFinish.self, from: Data(bytes))))
            } catch {
                unreadable(Paths.join(folder, name), "\(error)")
            }
        }
        return found
    }
}

import HaulCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A resolution's finish (an image layout's `index.json`, the Hub cache's links) kept until
/// every file it names is in: the daemon writes it down when the add is made, and carries it
/// out after the completion that brings the last file, after a restart too. Whether the files
/// are in is read from the disk (each at its path with its length), not from the downloads:
/// a file that was there already counts, and nothing depends on which download brought it.
public struct PendingFinish: Sendable, Codable {
    /// The finish itself.
    public enum Finish: Sendable, Codable {
        /// An OCI image layout's manifest, `oci-layout` and `index.json`.
        case imageLayout(ImageLayoutFinish)
        /// huggingface_hub's cache: the snapshot's links and the ref.
        case hubCache(HubCacheFinish)

        /// The finish as the resolver gave it; nil for one of another kind.
        public init?(_ finish: any ResolutionFinish) {
            if let layout = finish as? ImageLayoutFinish {
                self = .imageLayout(layout)
            } else if let cache = finish as? HubCacheFinish {
                self = .hubCache(cache)
            } else {
                return nil
            }
        }

        var finish: any ResolutionFinish {
            switch self {
            case .imageLayout(let layout): layout
            case .hubCache(let cache): cache
            }
        }
    }

    /// A file the finish waits for.
    public struct File: Sendable, Codable, Hashable {
        /// Its path beneath `directory`.
        public var path: String
        /// Its length, when the source said.
        public var size: Int64?
    }

    /// The downloads' root, where the finish is written.
    public var directory: String
    /// The files that must be in first.
    public var files: [File]
    /// What is written then.
    public var finish: Finish

    /// A finish of `files` (as resolved) beneath `directory`.
    public init(directory: String, files: [ResolvedFile], finish: Finish) {
        self.directory = directory
        self.files = files.map { File(path: $0.path, size: $0.size) }
        self.finish = finish
    }

    /// Whether every file is in: a regular file at its path with its length. Blocks.
    ///
    /// - Throws: a folder that cannot be opened (other than one not made yet).
    public func isReady() throws -> Bool {
        for file in files {
            let (folder, name) = Paths.split(Paths.join(directory, file.path))
            guard let name, let found = try DownloadDirectory.resolve(folder, roots: nil, create: false),
                let info = found.status(of: name), info.fileType == S_IFREG,
                file.size.map({ Int64(info.st_size) == $0 }) ?? true
            else { return false }
        }
        return true
    }

    /// Writes the finish. Blocks.
    public func write() throws(HaulError) {
        try finish.finish.write(into: directory)
    }

    /// Whether `path` (a completed download's file) is one of the files the finish waits for.
    public func waits(for path: String) -> Bool {
        files.contains { Paths.join(directory, $0.path) == path }
    }
}

/// The pending finishes of a daemon, each a JSON file in its folder (`STATE/finishes/`): kept
/// from the add until written, so a restart carries out the ones whose last file comes later.
public struct PendingFinishes: Sendable {
    /// The folder of the files.
    public let folder: String

    /// The finishes kept in `folder` (made at the first one kept).
    public init(folder: String) {
        self.folder = folder
    }

    /// Keeps `pending` under a new name, on a file thread; returns the name.
    public func keep(_ pending: PendingFinish) async throws(HaulError) -> String {
        try await Self.blocking { () throws(HaulError) in try keepNow(pending) }
    }

    /// Every finish kept, by name, read on a file thread (`allNow`).
    public func all(unreadable: @escaping @Sendable (String, String) -> Void) async throws(HaulError) -> [Kept] {
        try await Self.blocking { () throws(HaulError) in try allNow(unreadable: unreadable) }
    }

    /// Writes the finish `kept` and drops it when its files are all in, on a file thread;
    /// returns whether it did.
    public func finishIfReady(_ kept: Kept) async throws(HaulError) -> Bool {
        try await Self.blocking { () throws(HaulError) -> Bool in
            do {
                guard try kept.pending.isReady() else { return false }
            } catch {
                throw HaulError.from(error, otherwise: .fileSystem)
            }
            try kept.pending.write()
            try drop(kept.name)
            return true
        }
    }

    /// A finish kept, and its name.
    public struct Kept: Sendable {
        /// Its file's name in the folder.
        public var name: String
        /// The finish.
        public var pending: PendingFinish

        /// The finish `pending`, kept as `name`.
        public init(name: String, pending: PendingFinish) {
            self.name = name
            self.pending = pending
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

    private func keepNow(_ pending: PendingFinish) throws(HaulError) -> String {
        let name = UUID().uuidString.lowercased() + ".json"
        let bytes: [UInt8]
        do {
            bytes = Array(try JSONEncoder().encode(pending))
        } catch {
            throw HaulError(.internal, "cannot write a pending finish: \(error)")
        }
        try SmallFiles.write(bytes, to: name, beneath: folder)
        return name
    }

    /// Every finish kept; one that cannot be read is reported by `unreadable` and left where it
    /// is (a later version, a damaged file: the user decides). Blocks.
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

    private func drop(_ name: String) throws(HaulError) {
        do {
            guard let directory = try DownloadDirectory.resolve(folder, roots: nil, create: false) else { return }
            try directory.remove(name)
            try directory.sync()
        } catch {
            throw HaulError.from(error, otherwise: .fileSystem)
        }
    }
}

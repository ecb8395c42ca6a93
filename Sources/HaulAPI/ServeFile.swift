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

/// `$HAUL_HOME/serve.json`: how the CLI on this machine finds the daemon and proves it may talk
/// to it. Mode 0600, since the secret in it is the key to the API. Written once the socket is
/// listening (so its port is the real one, `--port 0` included) and deleted on a clean exit; after
/// a `kill -9` it stays behind, stale, and the CLI reports that nothing answers.
public struct ServeFile: Codable, Sendable, Hashable {
    /// `http://HOST:PORT`, without a trailing slash.
    public var url: String
    public var pid: Int32
    public var secret: String

    public init(url: String, pid: Int32, secret: String) {
        self.url = url
        self.pid = pid
        self.secret = secret
    }

    public static func path(home: String) -> String { Paths.join(home, "serve.json") }

    public static func read(home: String) throws(DaemonError) -> ServeFile? {
        let path = path(home: home)
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do {
            return try JSONDecoder().decode(ServeFile.self, from: data)
        } catch {
            throw DaemonError(.noDaemon, "\(path) is unreadable; restart 'haul serve'")
        }
    }

    /// Replaces the file atomically, never readable by other users even for a moment; by the
    /// owner's group too when `groupReadable` (`haul serve --share-with-group`).
    public func write(home: String, groupReadable: Bool = false) throws(HaulError) {
        let mode: mode_t = groupReadable ? 0o640 : 0o600
        let path = Self.path(home: home)
        let temporary = path + ".tmp"
        // A leftover from a crash; if it cannot be removed, the exclusive open below says why.
        unlink(temporary)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            throw HaulError(.fileSystem, "cannot write \(temporary): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data: Data
        do {
            data = try encoder.encode(self) + Data("\n".utf8)
        } catch {
            unlink(temporary)
            throw HaulError(.internal, "cannot encode \(path)", underlying: error)
        }
        let written = data.withUnsafeBytes { posixWrite(descriptor, $0.baseAddress, $0.count) }
        guard written == data.count, fchmod(descriptor, mode) == 0, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw HaulError(.fileSystem, "cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Deletes the file if it still describes this process. Throws when it cannot be read
    /// (then it is left alone: it may not be this process's) or deleted.
    public static func remove(home: String, pid: Int32) throws(HaulError) {
        let current: ServeFile?
        do {
            current = try read(home: home)
        } catch {
            throw HaulError(.fileSystem, error.message)
        }
        guard let current, current.pid == pid else { return }
        let path = path(home: home)
        guard unlink(path) == 0 || errno == ENOENT else {
            throw HaulError(.fileSystem, "cannot remove \(path): \(String(cString: strerror(errno)))")
        }
    }
}

#if canImport(Glibc)
    private let posixWrite = Glibc.write
#elseif canImport(Darwin)
    private let posixWrite = Darwin.write
#endif

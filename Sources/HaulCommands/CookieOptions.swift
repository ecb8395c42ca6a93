import ArgumentParser
import Haul
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

/// `haul get --load-cookies FILE` and `--save-cookies FILE`: a Netscape cookie file, as curl
/// (`-b FILE`, `-c FILE`), wget and aria2 read and write it. The rules (which cookie goes where,
/// what a line means) are `CookieJar`'s; this reads and writes the files.
///
/// A resumed `haul get` (after Ctrl-C or kill -9) is the same command line again, so it reads
/// the file again: the cookies are never kept in haul's state.
struct CookieOptions: ParsableArguments {
    @Option(
        name: .customLong("load-cookies"),
        help: ArgumentHelp(
            """
            Send the cookies of this Netscape cookie file (as curl -b FILE, wget and aria2 read it) to the hosts \
            and paths they belong to.
            """,
            valueName: "FILE"))
    var loadCookies: String?

    @Option(
        name: .customLong("save-cookies"),
        help: ArgumentHelp(
            "When the command ends, write every cookie (loaded and received) to this file, mode 0600.",
            valueName: "FILE"))
    var saveCookies: String?

    private enum CodingKeys: String, CodingKey {
        case loadCookies, saveCookies
    }

    /// The jar the transport shares, nil when neither option is given (no cookie is then sent
    /// or kept).
    /// - Throws: `.badCookieFile` for a file that cannot be read or parsed, or a `--save-cookies`
    ///   whose directory does not exist (found now, not after the download).
    func store() throws(HaulError) -> CookieStore? {
        guard loadCookies != nil || saveCookies != nil else { return nil }
        let now = Int64(Date().timeIntervalSince1970)
        var jar = CookieJar()
        if let loadCookies {
            jar = try CookieJar(netscapeFile: try Self.read(loadCookies), file: loadCookies, now: now)
        }
        if let saveCookies {
            let directory = Paths.split(HaulHome.absolute(saveCookies)).directory
            guard FileKind(directory) == .directory else {
                throw HaulError(.badCookieFile, "--save-cookies: no directory \(directory) to write \(saveCookies) in")
            }
        }
        return CookieStore(jar)
    }

    /// Writes the jar to `--save-cookies`, if given: a temporary file (0600) in the same
    /// directory, fsynced, then renamed over the name, so a reader never sees half a file and
    /// the cookies are never readable by others, not even for a moment.
    func save(_ store: CookieStore?) throws(HaulError) {
        guard let saveCookies, let store else { return }
        let text = store.jar.netscapeFile(now: store.secondsSince1970)
        let path = HaulHome.absolute(saveCookies)
        let temporary = path + ".haul-\(getpid()).tmp"
        func failed(_ what: String) -> HaulError {
            HaulError(
                .badCookieFile, "--save-cookies: cannot \(what) \(saveCookies): \(String(cString: strerror(errno)))")
        }
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw failed("write") }
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else {
                let error = failed("write")
                close(fd)
                unlink(temporary)
                throw error
            }
            bytes = bytes.dropFirst(written)
        }
        guard fsync(fd) == 0 else {
            let error = failed("write")
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let error = failed("replace")
            unlink(temporary)
            throw error
        }
    }

    /// The file's text; an error naming it when it is missing, a directory or unreadable.
    static func read(_ path: String) throws(HaulError) -> String {
        switch FileKind(path) {
        case .missing: throw HaulError(.badCookieFile, "--load-cookies: no such file \(path)")
        case .directory: throw HaulError(.badCookieFile, "--load-cookies: \(path) is a directory")
        case .file: break
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw HaulError(.badCookieFile, "--load-cookies: cannot read \(path): permission denied")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw HaulError(.badCookieFile, "--load-cookies: cannot read \(path)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}

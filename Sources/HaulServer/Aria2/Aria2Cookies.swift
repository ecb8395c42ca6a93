import Haul
import HaulAPI
import HaulCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// aria2's `load-cookies` with `addUri` and `addMetalink`: a Netscape cookie file the daemon
/// reads when the download is added.
///
/// Cookies are credentials, and anyone holding the token may call the RPC, so:
/// - the file must lie beneath a directory the daemon writes downloads to (`-d`, `--allow-dir`:
///   the `DirectoryPolicy` that decides where `dir` may point), and is opened there without
///   following any link (`ConfinedFile`), only a regular file of at most `maxBytes`;
/// - the jar's rules decide, for each URL of the download, which cookies go with it
///   (`SourceCookies`): a mirror on another host gets only its own, the request's `headers`
///   (sent to every source, and shown by `getOption`) none;
/// - nothing is logged, and no error quotes a line of the file.
///
/// A file that cannot be read or parsed is an RPC error, and nothing is added.
enum Aria2Cookies {
    /// The largest cookie file read (a browser's export of a few thousand cookies fits).
    static let maxBytes = 1 << 20

    /// The jar of the add's `load-cookies` file, nil when the option is not given.
    static func jar(_ options: [String: JSONValue], policy: DirectoryPolicy, now: Int64) async throws -> CookieJar? {
        guard let path = try Aria2Options.cookieFile(options) else { return nil }
        try policy.checkFile(path, option: "load-cookies")
        let normalized = AddRequest.normalized(path)
        do {
            let bytes = try await ConfinedFile.read(normalized, roots: policy.roots, maxBytes: maxBytes)
            return try CookieJar(netscapeFile: String(decoding: bytes, as: UTF8.self), file: normalized, now: now)
        } catch {
            throw Aria2Error(code: 1, message: "load-cookies: \(Aria2Error(error).message)")
        }
    }

    /// `request` with the `Cookie` field each of its URLs gets from `jar`.
    static func attach(_ jar: CookieJar?, to request: inout DownloadRequest, now: Int64) {
        guard let jar else { return }
        request.cookies = SourceCookies(jar: jar, urls: request.sources, now: now)
    }

    static func now() -> Int64 {
        Int64(Date().timeIntervalSince1970)
    }
}

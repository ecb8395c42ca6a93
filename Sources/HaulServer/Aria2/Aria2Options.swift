import HaulAPI
import HaulCore

/// aria2's options (`addUri`, `changeOption`, `changeGlobalOption`, `getOption`,
/// `getGlobalOption`): string values, sizes with K/M suffixes, `0` for no limit. Options haul
/// has no use for are accepted and ignored, as aria2 ignores unknown ones: AriaNg sends back
/// everything `getOption` returned. Options that name a file or run a command are refused, by
/// name: answering "OK" would tell a client its log, session file or hook is in place. The one
/// file an add may name is `load-cookies` (`Aria2Cookies`: beneath the download directories only).
enum Aria2Options {
    /// aria2 options that write or read a file, or run a program: never settable over RPC here
    /// (a token holder must not choose files or commands), and haul has none of these features.
    static let notSettable: Set<String> = [
        "log", "save-session", "input-file", "conf-path", "save-cookies", "netrc-path",
        "dht-file-path", "dht-file-path6", "server-stat-of", "server-stat-if", "torrent-file", "metalink-file",
        "on-download-start", "on-download-pause", "on-download-stop", "on-download-complete", "on-download-error",
        "on-bt-download-complete", "ca-certificate", "certificate", "private-key", "rpc-certificate", "rpc-private-key",
        "rpc-secret", "daemon",
    ]

    /// Options read once, when a download is added (`addUri`, `addMetalink`): its cookies are
    /// fixed then, and there is no file to change later or to set for every download.
    static let readAtAdd: Set<String> = ["load-cookies"]

    /// Refuses the first option (in name order) that may not be set over RPC; `load-cookies`
    /// too unless `adding`.
    static func checkSettable(_ options: [String: JSONValue], adding: Bool = false) throws {
        if let name = options.keys.filter(notSettable.contains).sorted().first {
            throw Aria2Error(
                code: 1, message: "The option '--\(name)' names a file or a command and cannot be set over RPC.")
        }
        if !adding, let name = options.keys.filter(readAtAdd.contains).sorted().first {
            throw Aria2Error(
                code: 1,
                message: "The option '--\(name)' is read once, when a download is added (aria2.addUri, "
                    + "aria2.addMetalink); it cannot be changed afterwards or set for every download.")
        }
    }

    /// The `load-cookies` path of an add, nil when not given.
    static func cookieFile(_ options: [String: JSONValue]) throws -> String? {
        guard let value = options["load-cookies"] else { return nil }
        // Not ignored like other mistyped values: a client that asks for cookies must learn that none go.
        guard let path = value.string else { throw problem("load-cookies") }
        return path
    }

    static func problem(_ name: String) -> Aria2Error {
        Aria2Error(code: 1, message: "We encountered a problem while processing the option '--\(name)'.")
    }

    /// aria2's words, then what was wrong with the value.
    static func problem(_ name: String, _ cause: HaulError) -> Aria2Error {
        Aria2Error(
            code: 1, message: "We encountered a problem while processing the option '--\(name)': \(cause.message)")
    }

    /// A string value; aria2 ignores values of other JSON types.
    static func text(_ options: [String: JSONValue], _ name: String) -> String? {
        options[name]?.string
    }

    static func connections(_ options: [String: JSONValue], _ name: String) throws -> Int? {
        guard let text = text(options, name) else { return nil }
        guard let value = Int(text), Limits.connections.contains(value) else { throw problem(name) }
        return value
    }

    /// A rate: `0` is no limit (`.some(nil)`).
    static func rate(_ options: [String: JSONValue], _ name: String) throws -> Int64?? {
        guard let text = text(options, name) else { return nil }
        if text == "0" { return .some(nil) }
        do {
            let rate = try ByteRate(parsing: text)
            return .some(rate.bytesPerSecond > 0 ? rate.bytesPerSecond : nil)
        } catch {
            throw problem(name, error)
        }
    }

    static func addRequest(uri: String, mirrors: [String] = [], options: [String: JSONValue], defaults: DaemonDefaults)
        throws -> AddRequest
    {
        try checkSettable(options, adding: true)
        var directory = text(options, "dir")
        var fileName = text(options, "out")
        if let out = fileName {
            // aria2 takes `out` relative to `dir`, subdirectories included, and never above it.
            guard !out.hasPrefix("/"), !out.hasSuffix("/") else { throw problem("out") }
            guard let place = Paths.place(out, beneath: directory ?? defaults.directory) else {
                throw Aria2Error(code: 1, message: "The option '--out' must stay beneath dir")
            }
            if out.contains("/") {
                directory = place.directory
                fileName = place.name
            }
        }
        var checksum: String?
        if let text = text(options, "checksum") {
            do {
                _ = try Checksum(parsing: text)
            } catch {
                throw problem("checksum", error)
            }
            checksum = text
        }
        let split = try connections(options, "split")
        let perServer = try connections(options, "max-connection-per-server")
        // aria2 opens min(split, max-connection-per-server) connections to a single server.
        let connections: Int? =
            split == nil && perServer == nil
            ? nil : min(split ?? defaults.connections, perServer ?? defaults.connections)
        let rate = try rate(options, "max-download-limit")
        if let pause = text(options, "pause"), !["true", "false"].contains(pause) { throw problem("pause") }
        var add = AddRequest(
            url: uri, directory: directory, fileName: fileName, checksum: checksum,
            connections: connections, maxBytesPerSecond: rate ?? nil, mirrors: mirrors.isEmpty ? nil : mirrors)
        add.sequential = try sequential(options)
        return add
    }

    /// `stream-piece-selector`: `inorder` and `geom` read in order (haul has one order, the
    /// first and last pieces first, then from the start), `default` and `random` do not; nil
    /// when not given.
    static func sequential(_ options: [String: JSONValue]) throws -> Bool? {
        guard let value = text(options, "stream-piece-selector") else { return nil }
        switch value {
        case "inorder", "geom": return true
        case "default", "random": return false
        default: throw problem("stream-piece-selector")
        }
    }

    /// `stream-piece-selector` as `getOption` and `getGlobalOption` show it.
    static func selector(sequential: Bool) -> String {
        sequential ? "inorder" : "default"
    }

    /// The request fields of an add (`header`, `referer`, `user-agent`), nil when it names
    /// none: `header` is a list of lines or one text of lines separated by `\n`.
    static func headers(_ options: [String: JSONValue]) throws -> HTTPHeaderList? {
        let referer = text(options, "referer")
        let userAgent = text(options, "user-agent")
        guard options["header"] != nil || referer != nil || userAgent != nil else { return nil }
        var fields = HTTPHeaderList()
        if let header = options["header"] {
            let texts = header.array?.compactMap(\.string) ?? header.string.map { [$0] } ?? []
            do {
                fields = try RequestHeaderOptions.fields(RequestHeaderOptions.lines(texts))
            } catch {
                throw problem("header", error)
            }
        }
        return try applying(referer: referer, userAgent: userAgent, to: fields)
    }

    /// `headers` with a `referer` and `user-agent` of an add or a change in place.
    static func applying(referer: String?, userAgent: String?, to headers: HTTPHeaderList) throws -> HTTPHeaderList {
        var headers = headers
        do {
            headers = try RequestHeaderOptions.applying(referer: referer, userAgent: nil, to: headers)
        } catch {
            throw problem("referer", error)
        }
        do {
            return try RequestHeaderOptions.applying(referer: nil, userAgent: userAgent, to: headers)
        } catch {
            throw problem("user-agent", error)
        }
    }

    struct DownloadChange {
        var maxBytesPerSecond: Int64??
        var connections: Int?
        /// From the download's next request on (nil: unchanged; empty: none sent).
        var referer: String?
        var userAgent: String?
    }

    static func downloadChange(_ options: [String: JSONValue]) throws -> DownloadChange {
        try checkSettable(options)
        let split = try connections(options, "split")
        let perServer = try connections(options, "max-connection-per-server")
        let connections: Int? = split == nil && perServer == nil ? nil : min(split ?? Int.max, perServer ?? Int.max)
        let referer = text(options, "referer")
        let userAgent = text(options, "user-agent")
        // Checked now, before anything changes.
        _ = try applying(referer: referer, userAgent: userAgent, to: HTTPHeaderList())
        return DownloadChange(
            maxBytesPerSecond: try rate(options, "max-download-limit"), connections: connections, referer: referer,
            userAgent: userAgent)
    }

    struct GlobalChange {
        var maxConcurrentDownloads: Int?
        var overall: Int64??
        var perDownload: Int64??
        var connections: Int?
        var directory: String?
        var sequential: Bool?
    }

    static func globalChange(_ options: [String: JSONValue]) throws -> GlobalChange {
        try checkSettable(options)
        var change = GlobalChange()
        if let text = text(options, "max-concurrent-downloads") {
            guard let count = Int(text), Limits.concurrentDownloads.contains(count) else {
                throw problem("max-concurrent-downloads")
            }
            change.maxConcurrentDownloads = count
        }
        change.overall = try rate(options, "max-overall-download-limit")
        change.perDownload = try rate(options, "max-download-limit")
        change.connections = try connections(options, "split") ?? connections(options, "max-connection-per-server")
        if let directory = text(options, "dir") {
            guard directory.hasPrefix("/") else { throw problem("dir") }
            change.directory = directory
        }
        change.sequential = try sequential(options)
        return change
    }

    /// `getOption`: the options a download was added with, as aria2 names them.
    static func write(_ record: DownloadRecord, to json: inout JSONWriter) {
        let request = record.request
        json.object { json in
            json.field("dir", request.directory)
            // `referer` and `user-agent` under their own names, as they were given.
            var lines = request.headers
            for name in ["Referer", "User-Agent"] { lines.remove(name: name) }
            if !lines.fields.isEmpty {
                json.field("header", lines.fields.map { "\($0.name): \($0.value)\n" }.joined())
            }
            json.field("max-connection-per-server", String(request.connections))
            json.field("max-download-limit", String(request.maxBytesPerSecond ?? 0))
            if let name = record.fileName { json.field("out", name) }
            if let referer = request.headers["Referer"] { json.field("referer", referer) }
            json.field("split", String(request.connections))
            json.field("stream-piece-selector", selector(sequential: request.sequential))
            if let agent = request.headers["User-Agent"] { json.field("user-agent", agent) }
        }
    }

    /// `getGlobalOption`.
    static func writeGlobal(defaults: DaemonDefaults, maxConcurrent: Int, overall: Int64?, to json: inout JSONWriter) {
        json.object { json in
            json.field("continue", "true")
            json.field("dir", defaults.directory)
            json.field("max-concurrent-downloads", String(maxConcurrent))
            json.field("max-connection-per-server", String(defaults.connections))
            json.field("max-download-limit", String(defaults.maxBytesPerSecond ?? 0))
            json.field("max-overall-download-limit", String(overall ?? 0))
            json.field("split", String(defaults.connections))
            json.field("stream-piece-selector", selector(sequential: defaults.sequential))
        }
    }
}

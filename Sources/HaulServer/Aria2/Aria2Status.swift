import HaulAPI
import HaulCore

/// One download as aria2 describes it (`tellStatus`, `tellActive`, ...): every number a string,
/// keys sorted, `errorCode`/`errorMessage` only once stopped, the piece fields only once the
/// length is known.
struct Aria2Status {
    let record: DownloadRecord
    let completed: Int64
    let total: Int64?
    let speed: Int64
    let connections: Int

    /// aria2's piece size for HTTP downloads: the `bitfield` has one bit per MiB.
    static let pieceLength: Int64 = 1 << 20

    init(_ record: DownloadRecord, live: Progress?) {
        self.record = record
        let view = DownloadView(record, live: live)
        completed = view.completedLength
        total = view.totalLength
        speed = Int64(view.speed)
        connections = view.connections
    }

    var status: String {
        switch record.status {
        case .queued: "waiting"
        case .running: "active"
        case .paused: "paused"
        case .completed: "complete"
        case .failed: "error"
        case .removed: "removed"
        }
    }

    var path: String { record.finalPath ?? "" }

    /// The keys a call asked for (nil: all), looked up once per call rather than once per key
    /// and download: `tellActive` of 200 downloads hashed 3,000 strings a call.
    struct Keys {
        enum Key: Int, CaseIterable {
            case bitfield, completedLength, connections, dir, downloadSpeed, errorCode, errorMessage, files, gid, numPieces
            case pieceLength, status, totalLength, uploadLength, uploadSpeed

            /// aria2's name of the key (`String(describing:)` would depend on reflection metadata).
            var name: String {
                Self.names[rawValue]
            }

            private static let names = ["bitfield", "completedLength", "connections", "dir", "downloadSpeed", "errorCode",
                                        "errorMessage", "files", "gid", "numPieces", "pieceLength", "status", "totalLength",
                                        "uploadLength", "uploadSpeed"]
        }

        private let asked: UInt32

        init(_ keys: Set<String>?) {
            var asked: UInt32 = 0
            for key in Key.allCases where keys?.contains(key.name) ?? true { asked |= 1 << UInt32(key.rawValue) }
            self.asked = asked
        }

        func wants(_ key: Key) -> Bool {
            asked & (1 << UInt32(key.rawValue)) != 0
        }
    }

    func write(to json: inout JSONWriter, keys: Set<String>?) {
        write(to: &json, keys: Keys(keys))
    }

    func write(to json: inout JSONWriter, keys: Keys) {
        let stopped = record.status.isTerminal
        let pieces = total.map { ($0 + Self.pieceLength - 1) / Self.pieceLength }
        func wants(_ key: Keys.Key) -> Bool { keys.wants(key) }
        json.object { json in
            if wants(.bitfield), let pieces, pieces > 0 { json.field("bitfield", bitfield(pieces: pieces)) }
            if wants(.completedLength) { json.field("completedLength", String(completed)) }
            if wants(.connections) { json.field("connections", String(connections)) }
            if wants(.dir) { json.field("dir", record.request.directory) }
            if wants(.downloadSpeed) { json.field("downloadSpeed", String(speed)) }
            if stopped, wants(.errorCode) { json.field("errorCode", errorCode) }
            if stopped, wants(.errorMessage) { json.field("errorMessage", record.error?.message ?? "") }
            if wants(.files) { json.field("files") { json in json.array([self]) { json, status in status.writeFile(to: &json) } } }
            if wants(.gid) { json.field("gid", record.id.rawValue) }
            if wants(.numPieces) { json.field("numPieces", String(pieces ?? 0)) }
            if wants(.pieceLength) { json.field("pieceLength", String(Self.pieceLength)) }
            if wants(.status) { json.field("status", status) }
            if wants(.totalLength) { json.field("totalLength", String(total ?? 0)) }
            if wants(.uploadLength) { json.field("uploadLength", "0") }
            if wants(.uploadSpeed) { json.field("uploadSpeed", "0") }
        }
    }

    /// `files[0]`: a download is one file.
    func writeFile(to json: inout JSONWriter) {
        json.object { json in
            json.field("completedLength", String(completed))
            json.field("index", "1")
            json.field("length", String(total ?? 0))
            json.field("path", path)
            json.field("selected", "true")
            json.field("uris") { json in json.array(record.request.sources) { json, url in writeURI(url, to: &json) } }
        }
    }

    func writeURI(_ url: RemoteURL, to json: inout JSONWriter) {
        json.object { json in
            json.field("status", record.status == .running ? "used" : "waiting")
            json.field("uri", url.absoluteString)
        }
    }

    /// `getServers`: one file, one server per download (haul's connections all go to the same URL).
    func writeServers(to json: inout JSONWriter) {
        json.array([self]) { json, status in
            json.object { json in
                json.field("index", "1")
                json.field("servers") { json in
                    json.array([status]) { json, status in
                        json.object { json in
                            json.field("currentUri", status.record.finalURL ?? status.record.request.url.absoluteString)
                            json.field("downloadSpeed", String(status.speed))
                            json.field("uri", status.record.request.url.absoluteString)
                        }
                    }
                }
            }
        }
    }

    /// aria2's exit-status codes (its manual, section EXIT STATUS) for why a download stopped.
    var errorCode: String {
        switch record.status {
        case .completed: return "0"
        case .removed: return "31"
        default: break
        }
        guard let error = record.error else { return "1" }
        return String(Self.errorCode(for: error))
    }

    static func errorCode(for error: HaulError) -> Int {
        switch error.code {
        case .network: 6
        case .httpStatus:
            switch error.httpStatus {
            case 404?, 410?: 3
            case 401?, 403?, 407?: 24
            case 503?: 29
            default: 22
            }
        case .badResponse: 22
        case .tooManyRedirects: 23
        case .checksumMismatch, .digestMismatch: 32
        // aria2's "authorization failed" and "resource not found", as the status said.
        case .urlExpired: error.httpStatus == 410 ? 3 : 24
        case .diskFull: 9
        case .fileExists: 13
        case .inUse: 11
        case .fileSystem: 17
        case .interrupted: 7
        case .cancelled: 31
        default: 1
        }
    }

    /// One bit per piece, high bit first, set when every byte of the piece is on disk (as far as
    /// the last checkpoint knows; a completed download is all ones).
    func bitfield(pieces: Int64) -> String {
        let done: [(start: Int64, end: Int64)] = record.segments
            .map { ($0.start, $0.start + $0.written) }
            .filter { $0.1 > $0.0 }
            .sorted { $0.0 < $1.0 }
        let base = record.request.range?.start ?? 0
        var bits = [UInt8](repeating: 0, count: Int((pieces + 7) / 8))
        for piece in 0..<pieces {
            let start = base + piece * Self.pieceLength
            let end = min(base + (total ?? 0), start + Self.pieceLength)
            let complete = record.status == .completed || done.contains { $0.start <= start && $0.end >= end }
            if complete { bits[Int(piece / 8)] |= 0x80 >> UInt8(piece % 8) }
        }
        let hex = Array("0123456789abcdef")
        return String(bits.flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 0xF)]] })
    }
}

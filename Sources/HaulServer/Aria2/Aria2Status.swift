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
    /// The downloads that followed this one's `addUri` (aria2's `followedBy`).
    var followedBy: [DownloadID] = []
    /// The download whose `addUri` this one followed (aria2's `following`).
    var following: DownloadID?

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
            case bitfield, completedLength, connections, dir, downloadSpeed, errorCode, errorMessage, files, gid,
                numPieces
            case pieceLength, status, totalLength, uploadLength, uploadSpeed, followedBy, following

            /// aria2's name of the key (`String(describing:)` would depend on reflection metadata).
            var name: String {
                Self.names[rawValue]
            }

            private static let names = [
                "bitfield", "completedLength", "connections", "dir", "downloadSpeed", "errorCode",
                "errorMessage", "files", "gid", "numPieces", "pieceLength", "status", "totalLength",
                "uploadLength", "uploadSpeed", "followedBy", "following",
            ]
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
            if wants(.files) {
                json.field("files") { json in json.array([self]) { json, status in status.writeFile(to: &json) } }
            }
            if wants(.followedBy), !followedBy.isEmpty {
                json.field("followedBy") { json in json.array(followedBy) { json, id in json.string(id.rawValue) } }
            }
            if wants(.following), let following { json.field("following", following.rawValue) }
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
    /// the last checkpoint knows; a completed download is all ones), in hex.
    ///
    /// Walks the written ranges once, merged where they touch (a piece across the border of two
    /// written parts is complete): `tellActive` of 200 downloads of 1 GiB asks for 200,000
    /// pieces, and checking each against every part, then building the hex a `Character` at a
    /// time, was a third of the daemon's CPU under that call.
    func bitfield(pieces: Int64) -> String {
        var bits = [UInt8](repeating: 0, count: Int((pieces + 7) / 8))
        func set(_ piece: Int64) { bits[Int(piece / 8)] |= 0x80 >> UInt8(piece % 8) }
        if record.status == .completed {
            for piece in 0..<pieces { set(piece) }
        } else {
            let base = record.request.range?.start ?? 0
            let length = total ?? 0
            for (start, end) in Self.merged(record.segments.map { ($0.start - base, $0.start - base + $0.written) }) {
                // The first piece that starts inside the range, then each that also ends inside it.
                var piece = max(0, (start + Self.pieceLength - 1) / Self.pieceLength)
                while piece < pieces, min(length, (piece + 1) * Self.pieceLength) <= end {
                    set(piece)
                    piece += 1
                }
            }
        }
        let hex = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(bits.count * 2)
        for byte in bits {
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The non-empty ranges sorted, those that touch or overlap made one.
    static func merged(_ ranges: [(start: Int64, end: Int64)]) -> [(start: Int64, end: Int64)] {
        var merged: [(start: Int64, end: Int64)] = []
        for range in ranges.filter({ $0.end > $0.start }).sorted(by: { $0.start < $1.start }) {
            if let last = merged.last, range.start <= last.end {
                merged[merged.count - 1].end = max(last.end, range.end)
            } else {
                merged.append(range)
            }
        }
        return merged
    }
}

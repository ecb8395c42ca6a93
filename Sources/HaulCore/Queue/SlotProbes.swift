/// Requests in flight past `-j`: a download that may be small is sent without holding a slot (a
/// "probe"), and takes a slot, or waits for one keeping its place, only once its response shows
/// more than `smallLength` bytes or no length. Many small files far away then cost their
/// requests' round trips side by side, not one slot's turn each (`QueueSlots` counts probes per
/// host: at most `http2Limit` over HTTP/2, which multiplexes them on one connection, and at most
/// `--max-connections-per-host`, by default `http1Default`, over HTTP/1.1 keep-alive).
public enum SlotProbes {
    /// The most bytes a response may bring without a slot.
    public static let smallLength: Int64 = 1 << 20
    /// Probes in flight per host once it answered over HTTP/2 (nginx offers 128 streams).
    public static let http2Limit = 100
    /// Probes in flight per host over HTTP/1.1 when `--max-connections-per-host` is not given:
    /// each is a connection of its own.
    public static let http1Default = 16

    /// The host `record`'s download is probed on, or nil when it must wait for a slot: what it
    /// is known to bring (its stored length, its `--range`) is over `smallLength`.
    public static func host(of record: DownloadRecord) -> String? {
        if let range = record.request.range, let end = range.end {
            guard end - range.start + 1 <= smallLength else { return nil }
        } else if let total = record.totalLength {
            guard total - (record.request.range?.start ?? 0) <= smallLength else { return nil }
        }
        return ConnectionBudget.host(of: record.request.url)
    }

    /// Whether a probe's response takes a slot before its body is read: a success that brings
    /// more than `smallLength` bytes or says no length. Anything else (an error, a redirect the
    /// transport did not follow) is the machine's to handle, slot or not.
    public static func needsSlot(_ head: ResponseHead) -> Bool {
        switch head.status {
        case 200, 203:
            guard let length = head.headers["Content-Length"].flatMap(Int64.init) else { return true }
            return length > smallLength
        case 206:
            guard let header = head.headers["Content-Range"], let range = ContentRange(parsing: header)?.range else {
                return false
            }
            return Int64(range.count) > smallLength
        default:
            return false
        }
    }

    /// Whether `head` came over HTTP/2 (the probes to its host may then be `http2Limit`).
    public static func spokeHTTP2(_ head: ResponseHead) -> Bool {
        head.connections.last?.httpVersion.hasPrefix("HTTP/2") == true
    }
}

/// The runs a queue sent without a slot (`SlotProbes`), per host, and those of them whose
/// response asks for one, in the order of the places they had. `QueueSlots` keeps one and
/// decides with it; this only counts.
public struct ProbeRoom: Sendable {
    /// Each run sent without a slot, with its place; counted against its host from its start to
    /// its end (its finish included, so a slow disk holds them back).
    public private(set) var probing: [DownloadID: WaitingQueue.Entry] = [:]
    /// Probes whose response needs a slot, in queue order of their places.
    public private(set) var asking = WaitingQueue()
    /// Probes in flight per host.
    public private(set) var perHost: [String: Int] = [:]
    /// Hosts that answered a probe over HTTP/2: `SlotProbes.http2Limit` each.
    public private(set) var http2Hosts: Set<String> = []
    /// Probes per HTTP/1.1 host; 0: none at all (nor over HTTP/2: no probe ever asks).
    public let http1Limit: Int

    /// Room for `http1Limit` probes per HTTP/1.1 host (under 0 counts as 0).
    public init(http1Limit: Int) {
        self.http1Limit = max(0, http1Limit)
    }

    /// How many probes `host` may have in flight.
    public func limit(_ host: String) -> Int {
        http1Limit == 0 ? 0 : http2Hosts.contains(host) ? SlotProbes.http2Limit : http1Limit
    }

    /// Whether `entry` may be sent without a slot now: it may be small and its host has room.
    public func hasRoom(for entry: WaitingQueue.Entry) -> Bool {
        guard let host = entry.probeHost else { return false }
        return perHost[host, default: 0] < limit(host)
    }

    /// Whether `id` runs as a probe (sent without a slot, none given yet).
    public func isProbing(_ id: DownloadID) -> Bool { probing[id] != nil }

    /// `entry`'s run was sent without a slot.
    mutating func sent(_ entry: WaitingQueue.Entry) {
        guard let host = entry.probeHost else { return }
        probing[entry.id] = entry
        perHost[host, default: 0] += 1
    }

    /// `id`'s response needs a slot: it waits at the place it had.
    mutating func ask(_ id: DownloadID) {
        if let entry = probing[id] { asking.insert(entry) }
    }

    /// `host` answered over HTTP/2.
    mutating func spokeHTTP2(_ host: String) {
        http2Hosts.insert(host)
    }

    /// `id` is no probe any more (given a slot, or ended).
    mutating func end(_ id: DownloadID) {
        guard let entry = probing.removeValue(forKey: id), let host = entry.probeHost else { return }
        asking.remove(id)
        perHost[host] = (perHost[host] ?? 1) - 1
        if perHost[host] == 0 { perHost[host] = nil }
    }
}

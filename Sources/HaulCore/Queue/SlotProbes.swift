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

import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A plain blocking TCP socket to 127.0.0.1, for what an HTTP client library will not do: hold
/// a connection idle, trickle a header a byte at a time, send a foreign `Host`, speak WebSocket
/// frames by hand.
final class RawSocket {
    let descriptor: Int32
    private var pending: [UInt8] = []

    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestFailure("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let message = String(cString: strerror(errno))
            close(descriptor)
            throw TestFailure("connect: \(message)")
        }
        setReceiveTimeout(seconds: 30)
    }

    deinit { close(descriptor) }

    func setReceiveTimeout(seconds: Int) {
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    /// False once the peer has closed (EPIPE, ECONNRESET); never raises SIGPIPE.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let result = bytes[sent...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            if result <= 0 { return false }
            sent += result
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Up to `count` bytes: empty at end of stream, nil on timeout or error.
    func receive(_ count: Int = 65536) -> [UInt8]? {
        if !pending.isEmpty {
            let taken = Array(pending.prefix(count))
            pending.removeFirst(taken.count)
            return taken
        }
        var buffer = [UInt8](repeating: 0, count: count)
        let result = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, count, 0) }
        if result < 0 { return nil }
        return Array(buffer.prefix(result))
    }

    /// Exactly `count` bytes, or nil if the stream ends or times out first.
    func receive(exactly count: Int) -> [UInt8]? {
        var bytes: [UInt8] = []
        while bytes.count < count {
            guard let chunk = receive(count - bytes.count), !chunk.isEmpty else { return nil }
            bytes += chunk
        }
        return bytes
    }

    /// An HTTP response head (up to the blank line); what follows stays for the next receive.
    func receiveHead() -> String? {
        var bytes: [UInt8] = []
        while true {
            if let end = Self.find([13, 10, 13, 10], in: bytes) {
                pending = Array(bytes[(end + 4)...]) + pending
                return String(decoding: bytes[..<end], as: UTF8.self)
            }
            guard let chunk = receive(), !chunk.isEmpty else { return nil }
            bytes += chunk
        }
    }

    /// One response with a `Content-Length` body, leaving the connection open for the next.
    func receiveResponse() -> (head: String, body: String)? {
        guard let head = receiveHead() else { return nil }
        let length =
            head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
        guard let body = receive(exactly: length) else { return nil }
        return (head, String(decoding: body, as: UTF8.self))
    }

    /// Everything until the peer closes (for `Connection: close` requests).
    func receiveAll() -> String {
        var bytes: [UInt8] = []
        while let chunk = receive(), !chunk.isEmpty { bytes += chunk }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether the daemon closes this connection within `seconds` (reads and drops anything it sends).
    func closedByPeer(within seconds: Int) -> Bool {
        setReceiveTimeout(seconds: seconds)
        defer { setReceiveTimeout(seconds: 30) }
        while true {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let result = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, 4096, 0) }
            if result == 0 { return true }
            if result < 0 { return errno == ECONNRESET }
        }
    }

    /// Closed by the peer already (does not wait).
    var isClosedByPeer: Bool {
        var byte: UInt8 = 0
        let result = recv(descriptor, &byte, 1, Int32(MSG_DONTWAIT | MSG_PEEK))
        return result == 0 || (result < 0 && errno == ECONNRESET)
    }

    static func find(_ needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        for start in 0...(bytes.count - needle.count) where Array(bytes[start..<start + needle.count]) == needle {
            return start
        }
        return nil
    }

    // MARK: WebSocket

    /// A client text frame (masked, as RFC 6455 requires of clients).
    func sendWebSocketText(_ text: String) -> Bool {
        let payload = Array(text.utf8)
        var frame: [UInt8] = [0x81]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else {
            frame.append(0x80 | 126)
            frame += [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        return send(frame)
    }

    /// The next text frame's text; nil on close, timeout or end of stream.
    func receiveWebSocketText() -> String? {
        while true {
            guard let header = receive(exactly: 2) else { return nil }
            var length = Int(header[1] & 0x7F)
            if length == 126 {
                guard let extended = receive(exactly: 2) else { return nil }
                length = Int(extended[0]) << 8 | Int(extended[1])
            } else if length == 127 {
                guard let extended = receive(exactly: 8) else { return nil }
                length = extended.reduce(0) { $0 << 8 | Int($1) }
            }
            guard let payload = receive(exactly: length) else { return nil }
            switch header[0] & 0x0F {
            case 0x1: return String(decoding: payload, as: UTF8.self)
            case 0x8: return nil
            default: continue // ping, pong, binary: not what these tests look for
            }
        }
    }
}

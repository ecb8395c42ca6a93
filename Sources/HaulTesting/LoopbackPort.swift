import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Ports on 127.0.0.1 for servers the tests start themselves (tinyproxy, PostgreSQL).
public enum LoopbackPort {
    public struct Unavailable: Error, Sendable, CustomStringConvertible {
        public var description: String { "no free port on 127.0.0.1" }
    }

    /// A port nothing listens on right now (the kernel's pick for port 0).
    public static func free() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Unavailable() }
        defer { close(fd) }
        return try bindAnyPort(fd)
    }

    /// A port that refuses every connection for as long as it lives: bound, never listening, so
    /// no other test's server can take it (a `free()` port can be taken between the pick and its
    /// use, and then a "dead" proxy answers).
    public final class Refusing: Sendable {
        public let port: Int
        private let descriptor: Int32

        public init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw Unavailable() }
            do {
                port = try LoopbackPort.bindAnyPort(fd)
            } catch {
                close(fd)
                throw error
            }
            descriptor = fd
        }

        deinit { close(descriptor) }
    }

    /// Binds `fd` to 127.0.0.1 on the kernel's pick of port; returns the port.
    private static func bindAnyPort(_ fd: Int32) throws -> Int {
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw Unavailable() }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether something accepts a TCP connection on 127.0.0.1:`port`.
    public static func acceptsConnections(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        return address
    }
}

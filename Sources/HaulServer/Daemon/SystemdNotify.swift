#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// systemd's readiness protocol (`Type=notify`, sd_notify(3)) without libsystemd: one datagram
/// to the socket `NOTIFY_SOCKET` names, `@` for one in the abstract namespace. Outside systemd
/// (no `NOTIFY_SOCKET`) nothing is sent.
enum SystemdNotify {
    /// Sends `state` (`READY=1`, `STOPPING=1`, `STATUS=...` lines); false when it could not be
    /// sent, which only means systemd waits for its start timeout, as for a daemon that never
    /// said it was ready.
    @discardableResult
    static func send(_ state: String, socket path: String? = nil) -> Bool {
        guard let path = path ?? getenv("NOTIFY_SOCKET").map({ String(cString: $0) }), path.count > 1 else {
            return false
        }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var name = Array(path.utf8)
        if name.first == UInt8(ascii: "@") { name[0] = 0 } // the abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard name.count <= capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: name) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + name.count)
        let message = Array(state.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                sendto(descriptor, message, message.count, Int32(MSG_NOSIGNAL), $0, length)
            }
        }
        return sent == message.count
    }
}

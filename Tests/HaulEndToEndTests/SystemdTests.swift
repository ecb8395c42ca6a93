import Foundation
import HaulAPI
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `haul serve` as `haul.service` runs it: it tells systemd it is ready (Type=notify, over the
/// socket NOTIFY_SOCKET names) only once serve.json is written, and that it stops on SIGTERM; with
/// --share-with-group the members of its group can read serve.json and so run haul add.
@Suite(.timeLimit(.minutes(2))) struct SystemdTests {
    /// A datagram socket in place of systemd's, as sd_notify(3) expects.
    final class NotifySocket {
        let path: String
        let descriptor: Int32

        init(directory: String) throws {
            path = directory + "/notify"
            descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard descriptor >= 0, bound == 0 else { throw TestFailure("cannot bind \(path)") }
            // A hang guard, not a timing: the message is sent before the test asks for it.
            var limit = timeval(tv_sec: 60, tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit { close(descriptor) }

        /// The next message, or nil when none came.
        func receive() -> String? {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = recv(descriptor, &buffer, buffer.count, 0)
            return count > 0 ? String(decoding: buffer[..<count], as: UTF8.self) : nil
        }
    }

    static func mode(_ path: String) throws -> Int? {
        try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
    }

    @Test func readyAfterServeFileStoppingOnSigtermAndSharedWithTheGroup() async throws {
        let world = try await World.make()
        let notify = try NotifySocket(directory: world.directory + "/..")
        let daemon = try await DaemonProcess.start(
            world, ["--share-with-group"], shell: "export NOTIFY_SOCKET=\(notify.path)")
        let ready = try #require(notify.receive())
        #expect(ready == "READY=1\nSTATUS=serving \(daemon.serve.url)")
        #expect(try Self.mode(ServeFile.path(home: world.home)) == 0o640)
        #expect(try Self.mode(world.home) == 0o750)

        daemon.process.signal(SIGTERM)
        #expect(notify.receive() == "STOPPING=1")
        #expect(await daemon.process.wait() == 0)
        try await world.close()
    }

    @Test func withoutTheFlagServeFileIsTheOwnersAlone() async throws {
        let world = try await World.make()
        let daemon = try await DaemonProcess.start(world)
        #expect(try Self.mode(ServeFile.path(home: world.home)) == 0o600)
        #expect(try Self.mode(world.home) == 0o700)
        daemon.process.signal(SIGKILL)
        _ = await daemon.process.wait()
        try await world.close()
    }
}

import HaulCore
import HaulServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `haul serve --store postgres://…` in a `haul` built without the fleet: the same command line
/// is handed to `haul-fleet`, installed beside it, which is haul with PostgreSQL's store linked
/// in (see ``FleetOpening`` for why they are two programs).
enum FleetExecutable {
    /// What opens a fleet's store in this program: set by `haul-fleet`'s `main`, nil in `haul`.
    @TaskLocal static var opening: (any FleetOpening)?

    static let name = "haul-fleet"

    /// Replaces this process with `haul-fleet` and the same arguments; returns only by throwing.
    static func execute(arguments: [String]) throws(HaulError) -> Never {
        let path = besideThisProgram()
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        execv(path, argv)
        let reason = String(cString: strerror(errno))
        for pointer in argv { free(pointer) }
        throw HaulError(
            .usage,
            "--store postgres:// needs \(name), which runs haul's fleet, beside this haul: cannot run \(path): \(reason)"
        )
    }

    /// `haul-fleet` in the directory of this program's executable (`/proc/self/exe`), so the
    /// fleet program of the same build and package runs, whatever `PATH` says.
    private static func besideThisProgram() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return name }
        let executable = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return Paths.join(Paths.split(executable).directory, name)
    }
}

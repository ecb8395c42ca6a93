import HaulCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Turns `errno` into a `HaulError` whose code says what the user can do about it.
enum FileSystemErrors {
    static func error(_ number: Int32, _ what: String, _ path: String) -> HaulError {
        let reason = String(cString: strerror(number))
        switch number {
        case ENOSPC, EDQUOT, EFBIG:
            return HaulError(.diskFull, "\(what) \(path): \(reason)", cause: "errno \(number)")
        default:
            return HaulError(.fileSystem, "\(what) \(path): \(reason)", cause: "errno \(number)")
        }
    }
}

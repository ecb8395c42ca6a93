import HaulCore

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Human-readable sizes, speeds and durations for progress lines.
enum ByteFormatting {
    static func size(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : NumberText.fixed(value, places: 1) + " " + units[unit]
    }

    static func speed(_ bytesPerSecond: Double) -> String {
        size(Int64(bytesPerSecond)) + "/s"
    }

    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds < 360_000 else { return "--:--" }
        let total = Int(seconds.rounded(.up))
        let (hours, minutes, secs) = (total / 3600, total / 60 % 60, total % 60)
        return hours > 0
            ? "\(hours):\(NumberText.zeroPadded(Int64(minutes), width: 2)):\(NumberText.zeroPadded(Int64(secs), width: 2))"
            : "\(minutes):\(NumberText.zeroPadded(Int64(secs), width: 2))"
    }
}

import HaulCore
import Testing

/// `Paths.normalized` returns a path that is normalised already as it is, without splitting it:
/// every path made of these pieces (dot names, empty ones, `.` and `..`, trailing slashes) comes
/// out as the plain split-and-join would make it.
@Suite(.timeLimit(.minutes(1))) struct PathsNormalizedTests {
    /// What `normalized` did before its fast path, as the reference.
    static func reference(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/") where part != "." {
            if part == ".." {
                if !parts.isEmpty { parts.removeLast() }
            } else {
                parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    @Test func everyPathOfTheseComponentsMatchesTheReference() {
        let pieces = ["", ".", "..", "...", "a", ".a", "a.", "..a", "dl", "é"]
        var paths = ["/", "//", "/.", "/..", "/a/", "/a//b", "/a/./b", "/a/../b", "/a/b/.."]
        for first in pieces {
            for second in pieces {
                for third in ["", "/", "/.", "/x"] { paths.append("/" + first + "/" + second + third) }
                paths.append("/" + first + second)
            }
        }
        for path in paths {
            #expect(Paths.normalized(path) == Self.reference(path), "\(path)")
        }
        // Already normalised: returned as it is.
        #expect(Paths.normalized("/srv/downloads/a.b/..c") == "/srv/downloads/a.b/..c")
    }
}

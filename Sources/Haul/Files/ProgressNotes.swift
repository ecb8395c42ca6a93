import HaulCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Progress noted between checkpoints without fsync (`.noteProgress`), one small file per
/// running download in the state directory (`progress/ID`).
///
/// A checkpoint costs an fsync of the `.part` and a store commit, so it runs about once a second;
/// a `kill -9` used to lose everything since the last one. But a killed process does not take
/// the page cache with it: every byte it wrote is in the file. Only a power loss or a kernel
/// crash loses unsynced bytes, and both end the boot. So each note carries the boot's id, the
/// `.part`'s device and inode and the entity (validator, length), and a restart trusts a note
/// only when all of them match, after an fsync of the `.part` (DESIGN rule 2 holds: the store
/// claims them only once they are durable). After a reboot only the checkpoint counts.
final class ProgressNotes: Sendable {
    /// What a note is about; a note is trusted only for the same values.
    struct Tag: Hashable, Sendable {
        var boot: String
        var device: UInt64
        var inode: UInt64
        var validator: String
        var totalLength: Int64?

        init(boot: String, part: stat, record: DownloadRecord) {
            self.boot = boot
            device = UInt64(truncatingIfNeeded: part.st_dev)
            inode = UInt64(truncatingIfNeeded: part.st_ino)
            validator = record.validator?.description ?? "-"
            totalLength = record.totalLength
        }
    }

    let directory: String
    /// This boot's id; nil where the system gives none (notes are then neither written nor read).
    let boot: String?

    init(directory: String, boot: String?) {
        self.directory = directory
        self.boot = boot
    }

    /// Linux's boot id, new at every boot.
    static func systemBootID() -> String? {
        let descriptor = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 64)
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return String(decoding: bytes[..<count], as: UTF8.self).split(whereSeparator: \.isWhitespace).first.map(
            String.init)
    }

    func path(of id: DownloadID) -> String { Paths.join(directory, "\(id)") }

    /// Replaces the note of `id` (no fsync: a note matters only on this boot).
    func write(_ id: DownloadID, tag: Tag, written: [Int64: Int64]) throws {
        var text = Self.header(tag)
        for (start, end) in written.sorted(by: { $0.key < $1.key }) { text += "part \(start) \(end)\n" }
        text += "end\n"
        try Directories.create(directory, what: "progress notes directory", isPrivate: true)
        let path = path(of: id)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw FileSystemErrors.error(errno, "cannot open", path) }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        let count = bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        guard count == bytes.count, ftruncate(descriptor, off_t(bytes.count)) == 0 else {
            throw FileSystemErrors.error(errno, "cannot write", path)
        }
    }

    /// The noted ends of `id`'s parts when its note is about `tag` and complete; empty otherwise.
    func read(_ id: DownloadID, tag: Tag) -> [Int64: Int64] {
        let path = path(of: id)
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return [:] }
        defer { close(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 16 << 10)
        let count = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return [:] }
        let text = String(decoding: bytes[..<count], as: UTF8.self)
        let header = Self.header(tag)
        // A note cut short (or about something else) says nothing.
        guard text.hasPrefix(header), text.hasSuffix("\nend\n") else { return [:] }
        var written: [Int64: Int64] = [:]
        for line in text.dropFirst(header.count).split(separator: "\n") where line.hasPrefix("part ") {
            let fields = line.split(separator: " ")
            guard fields.count == 3, let start = Int64(fields[1]), let end = Int64(fields[2]) else { return [:] }
            written[start] = end
        }
        return written
    }

    /// Drops the note of `id`; a missing one is fine.
    func remove(_ id: DownloadID) throws {
        let path = path(of: id)
        guard unlink(path) == 0 || errno == ENOENT else { throw FileSystemErrors.error(errno, "cannot remove", path) }
    }

    private static func header(_ tag: Tag) -> String {
        """
        haul-progress 1\nboot \(tag.boot)\nfile \(tag.device):\(tag.inode)\nentity \(tag.validator)\nlength \
        \(tag.totalLength.map(String.init) ?? "-")\n
        """
    }
}

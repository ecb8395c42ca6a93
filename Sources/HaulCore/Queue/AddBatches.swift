/// How a long list of requests is added: in batches of at most `size` (so 100,000 URLs never
/// hold 100,000 requests at once, and the first downloads start at once), but never splitting a
/// group (a name of content's files go in with their group, whose members are decided by the one
/// batch that adds them). A group larger than `size` is a batch of its own. Pure: `haul get`
/// plans with it, and its tests need nothing else.
public enum AddBatches {
    /// One batch: the entries at `range`, and the groups made of them (offsets from the
    /// batch's first entry). A group of no entry (every file in place) goes with the batch its
    /// place falls in, so its finish is written.
    public struct Batch: Sendable, Hashable {
        /// The entries of the batch, as offsets in the whole list.
        public var range: Range<Int>
        /// Its groups, their offsets counted from `range.lowerBound`.
        public var groups: [DownloadQueue.GroupAsk]
    }

    /// The batches of `count` entries and `groups` (offsets in the whole list, in order, not
    /// overlapping), each at most `size` entries unless a group alone is larger.
    public static func plan(count: Int, groups: [DownloadQueue.GroupAsk], size: Int = 1000) -> [Batch] {
        guard count > 0 || !groups.isEmpty else { return [] }
        var batches: [Batch] = []
        var start = 0
        repeat {
            var end = min(count, start + max(1, size))
            if let cut = groups.first(where: { $0.offsets.lowerBound < end && end < $0.offsets.upperBound }) {
                // The group goes whole: into the next batch, or alone when it begins this one.
                end = cut.offsets.lowerBound > start ? cut.offsets.lowerBound : cut.offsets.upperBound
            }
            let last = end == count
            let mine = groups.filter {
                $0.offsets.lowerBound >= start && $0.offsets.upperBound <= end && ($0.offsets.lowerBound < end || last)
            }
            batches.append(Batch(range: start..<end, groups: mine.map { $0.shifted(by: -start) }))
            start = end
        } while start < count
        return batches
    }
}

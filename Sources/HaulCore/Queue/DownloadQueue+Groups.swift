/// Groups of downloads (a name of content and its finish: `DownloadGroup`) as the queue finishes
/// them. A group is saved with the add that makes it, before its new downloads (a restart
/// between the two finds a group whose downloads are missing, and says so); when the last member
/// a group waits for completes (`GroupBook.notCompleted`, from the last read), its members are
/// read from the store, and once all completed the finish is written (`.writeFinish`), before
/// the completing member's outcome is settled, so
/// a `haul get` that ends at the last outcome finds the finish written. A finish that fails stays
/// for the next completion or start (`failed`, with why). At start every unfinished group is
/// checked again: a process killed between the last completion and its finish writes it then.
///
///     add with a group -> .saveGroup (before .saveNew) -> .readMembers (after the save)
///     last member completed, or one removed -> .readMembers (a fleet host: .readGroupsOf first,
///         the database's, at every completion)
///     membersRead -> .writeFinish -> finishWritten | finishFailed -> .saveGroup
extension DownloadQueue {
    /// A group an add asks for: its downloads are those of the batch's requests at `offsets`
    /// (its members are filled in when the batch decided them).
    public struct GroupAsk: Sendable, Hashable {
        /// The group, its members not yet known.
        public var group: DownloadGroup
        /// The batch's requests it is made of.
        public var offsets: Range<Int>

        /// `group`, of the batch's requests at `offsets`.
        public init(_ group: DownloadGroup, offsets: Range<Int>) {
            self.group = group
            self.offsets = offsets
        }

        /// The same group, its requests `start` places later in a larger batch.
        public func shifted(by start: Int) -> GroupAsk {
            GroupAsk(group, offsets: offsets.lowerBound + start..<offsets.upperBound + start)
        }
    }

    /// The unfinished groups this process knows, and each member's (local backend: every one,
    /// read at start or made by an add here; a fleet host reads a member's from the database
    /// when it completes).
    public struct GroupBook: Sendable, Hashable {
        var groups: [GroupID: DownloadGroup] = [:]
        var byMember: [DownloadID: [GroupID]] = [:]
        /// The members of each group not known completed since its members were last read
        /// (none for a group not read yet): a completion reads the members only once this is
        /// empty. Reading every member at every completion cost a group of 5,000 files 12.5
        /// million rows read back (`haul get hf://datasets/...` ran for minutes).
        var notCompleted: [GroupID: Set<DownloadID>] = [:]

        mutating func keep(_ group: DownloadGroup) {
            unlink(group.id)
            groups[group.id] = group
            for member in Set(group.members) { byMember[member, default: []].append(group.id) }
        }

        mutating func drop(_ id: GroupID) {
            unlink(id)
            notCompleted[id] = nil
        }

        private mutating func unlink(_ id: GroupID) {
            guard let group = groups.removeValue(forKey: id) else { return }
            for member in Set(group.members) {
                byMember[member]?.removeAll { $0 == id }
                if byMember[member]?.isEmpty == true { byMember[member] = nil }
            }
        }

        /// `id` completed: the groups of it whose members are to be read now, those whose every
        /// member is known completed (or that were not read yet).
        mutating func completed(_ id: DownloadID) -> [DownloadGroup] {
            groups(of: id).filter { group in
                guard var left = notCompleted[group.id] else { return true }
                left.remove(id)
                notCompleted[group.id] = left
                return left.isEmpty
            }
        }

        /// The groups `id` is a member of, oldest first.
        func groups(of id: DownloadID) -> [DownloadGroup] {
            DownloadGroup.oldestFirst((byMember[id] ?? []).compactMap { groups[$0] })
        }
    }

    /// The unfinished groups read at start (`.readGroups`): each is checked.
    public mutating func groupsRead(_ groups: [DownloadGroup]) -> [Action] {
        if !isFleet { for group in groups { groupBook.keep(group) } }
        return groups.map { .readMembers($0) }
    }

    /// `id` completed (its run, or an add that found its file in place) or was removed: each
    /// unfinished group it belongs to is checked. A fleet host reads them from the database
    /// (another host may have made them); nothing is read for a download of no group here.
    mutating func checkGroups(of id: DownloadID, completed: Bool = true) -> [Action] {
        if isFleet { return [.readGroupsOf(id)] }
        // A completion reads a group's members once the last one it waited for completed; a
        // removal reads them at once (the group cannot be finished, and says so).
        return (completed ? groupBook.completed(id) : groupBook.groups(of: id)).map { .readMembers($0) }
    }

    /// The unfinished groups this process keeps of `ids`, each checked once (after they were
    /// forgotten: such a group cannot be finished, and says so). A fleet host keeps none: its
    /// tick reads every unfinished group once a lease, which finds them.
    func checkKeptGroups(of ids: [DownloadID]) -> [Action] {
        var seen: Set<GroupID> = []
        return ids.flatMap { groupBook.groups(of: $0) }.filter { seen.insert($0.id).inserted }.map { .readMembers($0) }
    }

    /// A fleet host read the groups of a completed download: the unfinished ones are checked.
    public mutating func memberGroupsRead(_ groups: [DownloadGroup]) -> [Action] {
        groups.filter { $0.state != .finished }.map { .readMembers($0) }
    }

    /// The members of `group` as the store holds them. All completed: its finish is written (or,
    /// with none, it is finished). One missing (its add's save never came, or it was forgotten):
    /// it cannot be finished, and says why; so does one removed (its file will not come). Any
    /// other: it waits for the next completion.
    public mutating func membersRead(_ group: DownloadGroup, _ members: [DownloadRecord]) -> [Action] {
        let statuses = Dictionary(members.map { ($0.id, $0.status) }, uniquingKeysWith: { first, _ in first })
        if let missing = group.members.first(where: { statuses[$0] == nil }) {
            return finishFailed(group, HaulError(.notFound, "download \(missing) of \(group.name) is gone"))
        }
        if let removed = group.members.first(where: { statuses[$0] == .removed }) {
            return finishFailed(group, HaulError(.notFound, "download \(removed) of \(group.name) was removed"))
        }
        if !isFleet, groupBook.groups[group.id] != nil {
            groupBook.notCompleted[group.id] = Set(group.members.filter { statuses[$0] != .completed })
        }
        guard group.members.allSatisfy({ statuses[$0] == .completed }) else { return [] }
        guard group.finish != nil else { return finishWritten(group) }
        return [.writeFinish(group)]
    }

    /// `group`'s finish is written (or it had none): it is finished, stored so, and forgotten here.
    public mutating func finishWritten(_ group: DownloadGroup) -> [Action] {
        var finished = group
        finished.state = .finished
        finished.error = nil
        groupBook.drop(group.id)
        return [.saveGroup(finished)]
    }

    /// `group`'s finish failed: stored failed with why, told as an event of its leader (the
    /// download its add answered with), and tried again at the next completion of a member or
    /// the next start.
    public mutating func finishFailed(_ group: DownloadGroup, _ error: HaulError) -> [Action] {
        var failed = group
        failed.state = .failed
        failed.error = error.message
        if !isFleet { groupBook.keep(failed) }
        let told = group.leader.map {
            [Action.publish(DownloadEvent(id: $0, kind: .finishFailed(group: group.id, name: group.name, error)))]
        }
        return [.saveGroup(failed)] + (told ?? [])
    }

    /// The groups of a batch of adds, their members decided: kept here and saved (before the
    /// batch's new downloads).
    mutating func groupsOfBatch(_ asks: [GroupAsk], records: [DownloadRecord?]) -> [DownloadGroup] {
        asks.map { ask in
            var group = ask.group
            var seen: Set<DownloadID> = []
            group.members = ask.offsets.compactMap { records[$0]?.id }.filter { seen.insert($0).inserted }
            if !isFleet { groupBook.keep(group) }
            return group
        }
    }
}

/// `-N` (wget's `--timestamping`) and `--remote-time` (curl's `-R`): when to ask "modified
/// since?", what a 304 means, how a newer file is published and which time it gets.
extension DownloadStateMachine {
    /// At `start`: only a fresh start asks "modified since?" (the final file's time). Bytes in
    /// the `.part` already mean the server's file was newer; a resume fetches the rest of it.
    mutating func takeFinalModified(_ local: LocalFiles) {
        modifiedSince = record.request.timestamping && completedLength == 0 ? local.finalModified : nil
    }

    /// A 200 or 206: the server's file is newer than the local one (`-N`), or there is none. No
    /// more "modified since?" in this run, and its `Last-Modified` is what the published file gets.
    mutating func noteEntityTime(_ head: ResponseHead) {
        guard head.status == 200 || head.status == 206 else { return }
        modifiedSince = nil
        if let date = head.headers["Last-Modified"].flatMap(HTTPDate.parse) { remoteModified = date }
    }

    /// A 304 to `If-Modified-Since`: the local file is as new as the server's. The run ends
    /// completed without a byte; the final file is left as it is.
    mutating func notModified() -> [Action] {
        record.status = .completed
        state = .completed
        return closeEverything() + [.notify(.notModified), .persist, .finish(.notModified)]
    }

    /// After verification. With `-N` the server's file was newer than the one under the final
    /// name: it replaces that one, now that it is complete and verified. Otherwise an existing
    /// name is refused, as always.
    func publishAction(_ target: VerifyTarget) -> Action {
        record.request.timestamping && target == .part ? .replaceFinal : .publish(target)
    }

    /// After publishing: the file gets the server's `Last-Modified` (`-N` implies it).
    var remoteTimeActions: [Action] {
        guard record.request.timestamping || record.request.remoteTime, let remoteModified else { return [] }
        return [.setModificationTime(remoteModified)]
    }
}

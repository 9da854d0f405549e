import RecSyncModel

/// Client state as files in a directory: one file per name, replaced durably (temp file,
/// fsync, rename, fsync of the directory).
public struct DirectoryClientState: ClientStateStore {
    public let directory: String

    public init(directory: String) { self.directory = directory }

    public func readState(_ name: String) throws(RecSyncError) -> [UInt8]? {
        try FileIO.read(try path(name))
    }

    public func writeState(_ name: String, _ bytes: [UInt8]) throws(RecSyncError) {
        try FileIO.writeAtomically(try path(name), bytes)
    }

    public func describeState(_ name: String) -> String { "\(directory)/\(name)" }

    /// A name is one plain file name: nothing that climbs out of the directory.
    private func path(_ name: String) throws(RecSyncError) -> String {
        guard !name.isEmpty, name != ".", name != "..", !name.contains("/"), !name.contains("\0") else {
            throw .invalidArguments("'\(name)' is not a state name (one file name, no '/')")
        }
        return "\(directory)/\(name)"
    }
}

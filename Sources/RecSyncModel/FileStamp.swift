/// What `stat` says about a file, enough to tell that it has not changed since it was indexed.
public struct FileStamp: Sendable, Hashable, Codable {
    public var size: Int64
    public var mtimeNanos: Int64
    public var inode: UInt64

    public init(size: Int64, mtimeNanos: Int64, inode: UInt64) {
        self.size = size
        self.mtimeNanos = mtimeNanos
        self.inode = inode
    }
}

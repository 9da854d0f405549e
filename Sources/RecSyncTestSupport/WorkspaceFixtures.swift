import Foundation
import RecSyncModel

/// Reads a directory tree into `relative path → bytes`, for comparing workspaces.
public enum TreeSnapshot {
    /// Every file below `root`, except the paths for which `exclude` is true.
    public static func files(_ root: String, exclude: (String) -> Bool = { _ in false }) -> [String: [UInt8]] {
        var result: [String: [UInt8]] = [:]
        guard let enumerator = FileManager.default.enumerator(atPath: root) else { return result }
        while let rel = enumerator.nextObject() as? String {
            if exclude(rel) { continue }
            var isDir: ObjCBool = false
            let path = "\(root)/\(rel)"
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir), !isDir.boolValue else { continue }
            if let data = FileManager.default.contents(atPath: path) { result[rel] = Array(data) }
        }
        return result
    }

    /// Record files and sidecars only (what two converged workspaces must agree on).
    public static func records(_ root: String) -> [String: [UInt8]] {
        files(root) { $0.hasPrefix(".recsync") || $0.hasPrefix(".git") }
    }
}

/// Writes a file for a test, creating directories.
public func writeFile(_ path: String, _ text: String) throws {
    try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
    try text.write(toFile: path, atomically: true, encoding: .utf8)
}

public func readFile(_ path: String) -> String? {
    FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) }
}

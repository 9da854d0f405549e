import Foundation
import RecSyncModel
import RecSyncSystem
import RecSyncWorkspace

import Glibc

/// Asking before something that cannot be undone, as `gh repo delete` does: on a terminal the
/// user types the name of what goes; a script passes `--yes`; anything else is refused before
/// anything is done.
enum Confirmation {
    /// Returns when `--yes` was given or the user typed `name` at the prompt; throws otherwise.
    ///
    /// - Parameters:
    ///   - what: what is about to happen, for the prompt ("delete zone 'todo' and its records").
    ///   - name: what the user must type to confirm.
    ///   - yes: `--yes` was given.
    ///   - input: where the answer comes from (stdin; a test passes a file).
    static func require(_ what: String, typing name: String, yes: Bool, input: Int32 = STDIN_FILENO) throws(RecSyncError) {
        if yes { return }
        guard isatty(input) == 1 else {
            throw .invalidArguments("this would \(what); pass --yes to confirm (stdin is not a terminal, so recsync cannot ask)")
        }
        let prompt = "This will \(what), for every workspace of the store.\nType '\(name)' to confirm: "
        _ = FileIO.writeFully(STDERR_FILENO, Array(prompt.utf8))
        guard let answer = readLine(from: input), answer == name else {
            throw .invalidArguments("not confirmed: nothing was changed (type '\(name)' exactly, or pass --yes)")
        }
    }

    /// One line from a descriptor, without its newline; nil at end of input.
    static func readLine(from fd: Int32) -> String? {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = read(fd, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            guard n == 1 else { return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self) }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
    }
}

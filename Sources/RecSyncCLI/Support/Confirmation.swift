import Foundation
import RecSyncModel
import RecSyncSystem
import RecSyncWorkspace

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
    static func require(_ what: String, typing name: String, yes: Bool, input: StandardStream = .input) throws(RecSyncError) {
        if yes { return }
        guard input.isTerminal else {
            throw .notConfirmed("this would \(what); pass --yes to confirm (stdin is not a terminal, so recsync cannot ask)")
        }
        let prompt = "This will \(what), for every workspace of the store.\nType '\(name)' to confirm: "
        StandardStream.error.write(prompt)
        guard let answer = input.readLine(), answer == name else {
            throw .notConfirmed("not confirmed: nothing was changed (type '\(name)' exactly, or pass --yes)")
        }
    }

}

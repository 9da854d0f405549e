#!/usr/bin/env bash
# Structure rules that the compiler does not keep and that are easy to let slip: each names a
# call or an import and the only places it may appear. `make test` (and so CI) runs it first.
#
#   bash scripts/check-layers.sh          checks Sources/
#   bash scripts/check-layers.sh --self-test
#                                          plants a violation of each rule in a copy of Sources/
#                                          and checks that the check then fails
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
if [ "${1:-}" = "--self-test" ]; then
    plant() {  # plant FILE LINE: a copy of Sources/ with LINE added to FILE must fail the check
        local tmp; tmp="$(mktemp -d)"
        cp -R "$here/Sources" "$tmp/Sources"
        mkdir -p "$(dirname "$tmp/$1")"
        printf '%s\n' "$2" >> "$tmp/$1"
        if ROOT="$tmp" bash "$here/scripts/check-layers.sh" >/dev/null 2>&1; then
            echo "check-layers self-test: '$2' in $1 was not caught" >&2
            rm -rf "$tmp"; exit 1
        fi
        rm -rf "$tmp"
    }
    plant Sources/RecSyncCLI/Commands/ChangesCommand.swift '        _ = try await store.recordZoneChanges(zone: id, since: nil, resultsLimit: 0, desiredKeys: nil)'
    plant Sources/RecSyncEngine/Pull.swift 'let page = try await store.databaseChanges(scope: .private, since: nil, resultsLimit: 0)'
    plant Sources/RecSyncEngine/Doctor.swift 'var feed = ZoneChangeFeed(store: store, zone: zone, since: nil)'
    plant Sources/RecSyncCLI/Commands/ChangesCommand.swift 'var feed = DatabaseChangeFeed(store: store, scope: .private, since: nil)'
    plant Sources/RecSyncEngine/Push.swift '_ = try await store.modifyRecords(saving: [], deleting: [], savePolicy: .allKeys, atomically: true)'
    plant Tests/RecSyncModelTests/Planted.swift '@Suite struct StoreAttackTests {}'
    plant Tests/RecSyncModelTests/Planted.swift '@Suite struct StoreHostileUseTests {}'
    plant Tests/RecSyncModelTests/ReviewFindingsTests.swift '// a file named after how its tests were found'
    plant Sources/RecSyncStore/Planted.swift '// moreComing fixes simulation finding F6'
    plant Sources/RecSyncModel/Planted.swift 'import RecSyncStore'
    plant Sources/RecSyncWorkspace/Planted.swift 'import RecSyncEngine'
    plant Sources/RecSyncEngine/Planted.swift 'import RecSyncCLI'
    plant Sources/RecSyncEngine/Planted.swift 'import RecSyncEncryption'
    plant Sources/RecSyncEngine/Planted.swift 'import RecSyncSubscriptions'
    plant Sources/RecSyncSubscriptions/Planted.swift 'import RecSyncCLI'
    plant Sources/RecSyncStore/Planted.swift 'import RecSyncSubscriptions'
    plant Sources/RecSyncWorkspace/Planted.swift 'import RecSyncEncryption'
    plant Sources/RecSyncSubscriptions/Watcher.swift 'let page = try await store.recordZoneChanges(zone: zone, since: nil, resultsLimit: 0, desiredKeys: nil)'
    plant Sources/RecSyncEncryption/Planted.swift 'import RecSyncEngine'
    plant Sources/RecSyncCLI/Planted.swift 'import RecSyncGit'
    plant Sources/RecSyncWorkspace/Planted.swift 'import RecSyncGit'
    plant Sources/RecSyncModel/Planted.swift 'let m = "no workspace; run '"'"'recsync init'"'"' first"'
    plant Sources/RecSyncEngine/Planted.swift 'let m = "conflict pending; run '"'"'recsync resolve'"'"' first"'
    plant Sources/RecSyncEncryption/Planted.swift 'let m = "no key here; run '"'"'recsync keys init'"'"'"'
    plant Sources/RecSyncCLI/Planted.swift 'import Glibc'
    plant Sources/RecSyncCLI/Planted.swift 'import CRecSyncSys'
    plant Sources/RecSyncCLI/Planted.swift 'let store = try GitStore.open(location: "x", relativeTo: "/", actor: actor)'
    plant Sources/RecSyncCLI/Planted.swift '_ = FileIO.writeFully(1, [])'
    plant Sources/RecSyncCLI/Planted.swift 'if isatty(1) == 1 { }'
    plant Sources/RecSyncEngine/Planted.swift '_ = try GitStore.open(location: remote, relativeTo: "/", actor: actor)'
    plant Sources/RecSyncEngine/Planted.swift 'import RecSyncGit'
    plant Sources/RecSyncEngine/Planted.swift 'import RecSyncSystem'
    plant Sources/RecSyncEngine/Planted.swift 'let there = FileManager.default.fileExists(atPath: path)'
    plant Sources/RecSyncEngine/Planted.swift 'let fd = open(path, O_RDONLY)'
    plant Sources/RecSyncWorkspace/Planted.swift 'while n < 0 && errno == EINTR { n = read(fd, &b, 1) }'
    plant Sources/RecSyncEncryption/EncryptingStore.swift 'let pins = try FileIO.read("/tmp/encrypted-zones")'
    plant Sources/RecSyncEncryption/Planted.swift 'extension EncryptingStore { func pins() throws -> [UInt8]? { try FileIO.read("/tmp/p") } }'
    plant Sources/RecSyncEngine/Planted.swift 'func peek(_ p: String) -> Bool { FileIO.info(p) != nil }'
    plant Sources/RecSyncEngine/Planted.swift '@preconcurrency import RecSyncGit'
    plant Sources/RecSyncEngine/Planted.swift 'let bytes = try Data(contentsOf: URL(fileURLWithPath: path))'
    plant Sources/RecSyncCLI/Planted.swift 'public import CRecSyncSys'
    plant Sources/RecSyncCLI/Planted.swift 'let input = FileHandle.standardInput.readDataToEndOfFile()'
    plant Sources/RecSyncCLI/Planted.swift 'let names = try FileManager.default.contentsOfDirectory(atPath: dir)'
    plant Sources/RecSyncSystem/Planted.swift 'import RecSyncWorkspace'
    ROOT="$here" bash "$here/scripts/check-layers.sh" >/dev/null
    echo "check-layers self-test: ok (every planted violation caught, the tree itself passes)"
    exit 0
fi
root="${ROOT:-$here}"
cd "$root"
failed=0

# Lines of Swift under the given directories matching an extended regex, as "path:line: text".
# Comment lines are left out, and so is a declaration's own signature (`func write(`): what
# follows its `{` on the same line is still checked.
uses() {
    local pattern="$1"; shift
    grep -rnE --include='*.swift' "$pattern" "$@" 2>/dev/null | while IFS= read -r hit; do
        local path="${hit%%:*}" rest="${hit#*:}"
        local line="${rest%%:*}" text="${rest#*:}"
        [[ "$text" =~ ^[[:space:]]*// ]] && continue
        if [[ "$text" =~ (^|[^[:alnum:]_])func[[:space:]]+[A-Za-z_] ]]; then
            [[ "$text" == *"{"* ]] || continue
            text="${text#*\{}"
            printf '%s\n' "$text" | grep -qE "$pattern" || continue
        fi
        printf '%s:%s:%s\n' "$path" "$line" "$text"
    done
}

# An import line, with any attributes and access modifier (`@preconcurrency`, `public import`).
IMPORT='^[[:space:]]*(@[A-Za-z_]+[[:space:]]+)*((public|package|internal|private|fileprivate)[[:space:]]+)?import[[:space:]]+'

# rule NAME WHY LINES: fails with the lines, if any.
rule() {
    local name="$1" why="$2" lines="$3"
    if [ -n "$lines" ]; then
        echo "check-layers: $name: $why" >&2
        echo "$lines" | sed 's/^/  /' >&2
        failed=1
    fi
}

# 1. The store's change feeds are read in one place (ZoneChangeFeed, DatabaseChangeFeed), which
#    every fetch goes through. The command line reads them through the library too. (The
#    encryption decorator, Sources/RecSyncEncryption, is a store: it forwards them.)
rule "one change-feed loop" \
    "recordZoneChanges/databaseChanges called outside Sources/RecSyncEngine/ChangeFeeds.swift (use ZoneChangeFeed or DatabaseChangeFeed)" \
    "$(uses '\b(recordZoneChanges|databaseChanges)\(' Sources/RecSyncEngine Sources/RecSyncSubscriptions Sources/RecSyncCLI \
        | grep -vE '^Sources/RecSyncEngine/ChangeFeeds\.swift:' || true)"

# 2. One engine: RecordSyncEngine runs the fetch and the send for every client (an app, the
#    workspace's pull and push, doctor). A zone's pages are read in its fetch alone, a scope's
#    zone changes in the store conversation its fetch plans with, and records are saved in its
#    send alone; the command line only calls the library's readers.
rule "one fetch" \
    "a zone's change feed read outside RecordSyncEngine's fetch (Sources/RecSyncEngine/Embedded/EngineFetch.swift); run the fetch, or ZoneChangeFeed.read for a raw listing" \
    "$(uses '\bZoneChangeFeed\(' Sources/RecSyncEngine Sources/RecSyncSubscriptions Sources/RecSyncCLI \
        | grep -vE '^Sources/RecSyncEngine/(ChangeFeeds|Embedded/EngineFetch)\.swift:' || true)"
rule "one database feed" \
    "a scope's change feed read outside allDatabaseChanges (Sources/RecSyncEngine/StoreConversations.swift)" \
    "$(uses '\bDatabaseChangeFeed\(' Sources/RecSyncEngine Sources/RecSyncSubscriptions Sources/RecSyncCLI \
        | grep -vE '^Sources/RecSyncEngine/(ChangeFeeds|StoreConversations)\.swift:' || true)"
rule "one send" \
    "records saved outside RecordSyncEngine's send (Sources/RecSyncEngine/Embedded/EngineSend.swift and the store conversation it uses)" \
    "$(uses '\b(modifyRecords|modifyRecognisingOwnSaves)\(' Sources/RecSyncEngine Sources/RecSyncSubscriptions Sources/RecSyncCLI \
        | grep -vE '^Sources/RecSyncEngine/(StoreConversations|Embedded/EngineSend)\.swift:' || true)"

# 3. Arrows point down: Model <- Store, Workspace <- Engine <- Subscriptions <- CLI, and
#    Store, Workspace <- Encryption <- CLI beside the engine: the engine syncs any store, an
#    encrypting one included, and the decorator knows nothing of the engine.
rule "model imports nothing of recsync" "RecSyncModel is the bottom layer" \
    "$(uses "${IMPORT}RecSync" Sources/RecSyncModel)"
rule "the system layer imports only the model" "RecSyncSystem sits under everything but RecSyncModel" \
    "$(uses "${IMPORT}(RecSyncGit|RecSyncStore|RecSyncWorkspace|RecSyncSnapshots|RecSyncEngine|RecSyncEncryption|RecSyncSubscriptions|RecSyncCLI)" Sources/RecSyncSystem)"
rule "the workspace does not import the git wrapper" \
    "RecSyncWorkspace is files on disk; content addressing comes from RecSyncSystem (ContentDigest), store addresses from RecSyncModel" \
    "$(uses "${IMPORT}(RecSyncGit|CLibGit2)" Sources/RecSyncWorkspace)"
rule "store and workspace do not import the engine or the command line" "an arrow points back up" \
    "$(uses "${IMPORT}(RecSyncEngine|RecSyncEncryption|RecSyncSubscriptions|RecSyncCLI|RecSyncSnapshots)" Sources/RecSyncStore Sources/RecSyncWorkspace Sources/RecSyncGit Sources/RecSyncSystem)"
rule "the engine does not import its clients" "an arrow points back up (subscriptions and the command line are clients of the engine)" \
    "$(uses "${IMPORT}(RecSyncSubscriptions|RecSyncCLI)" Sources/RecSyncEngine; uses "${IMPORT}RecSyncCLI" Sources/RecSyncSubscriptions)"
rule "the engine and the encryption decorator do not know each other" \
    "RecordSyncEngine syncs any RemoteStore; encryption is a store around a store (RecSyncEncryption)" \
    "$(uses "${IMPORT}(RecSyncEncryption|RecSyncCLI)" Sources/RecSyncEngine; uses "${IMPORT}(RecSyncEngine|RecSyncCLI)" Sources/RecSyncEncryption)"

# 4. The command line parses, makes library calls and prints: it imports only the argument
#    parser, Foundation, Swift's Synchronization and recsync's library products, and names
#    neither the git backend, nor the system-call layer's internals, nor C.
rule "the command line imports only the parser, Foundation and library products" \
    "Sources/RecSyncCLI may import ArgumentParser, Foundation, Synchronization and the products in Package.swift; what it needs from elsewhere belongs in the library" \
    "$(uses "$IMPORT" Sources/RecSyncCLI \
        | grep -vE ':[[:space:]]*import (ArgumentParser|Foundation|Synchronization|RecSyncModel|RecSyncStore|RecSyncSystem|RecSyncWorkspace|RecSyncEngine|RecSyncEncryption|RecSyncSubscriptions)[[:space:]]*$' || true)"
rule "the command line names no backend or system call" \
    "the command line goes through StoreLocation, StandardStream and InputFile (and the library's operations), not GitStore, FileIO, Syscall or C calls" \
    "$( { uses '\b(GitStore|GitRepository|GitRemoteURL|FileIO|Syscall|Confinement|TempFile|FileHandle|strerror|recsync_[a-z_]+|Glibc)\b|(^|[^.[:alnum:]_])(open|openat|read|write|close|fsync|unlink|unlinkat|rename|renameat|mkdir|lstat|stat|isatty|kill|waitpid|waitid|dup2|pipe|signal|sigaction|fork|execve|getpid)\(' Sources/RecSyncCLI
          uses '\bFileManager\b' Sources/RecSyncCLI | grep -v 'FileManager\.default\.currentDirectoryPath' || true; } )"

# 5. The engine runs the sync protocol against RemoteStore and asks the workspace for files:
#    it names no store backend and makes no file-system call of its own.
rule "the engine names no store backend" \
    "Sources/RecSyncEngine speaks to RemoteStore; a store is opened by its location (StoreLocation), never as a GitStore" \
    "$(uses "\\b(GitStore|GitBackend|MemoryStore|GitRepository|GitRemoteURL)\\b|${IMPORT}(RecSyncGit|CLibGit2)" Sources/RecSyncEngine)"
rule "the engine makes no file-system call" \
    "Sources/RecSyncEngine asks the workspace (Workspace's methods) for what is on disk; FileIO, FileManager and libc calls belong in RecSyncSystem and RecSyncWorkspace" \
    "$(uses "\\b(FileIO|FileManager|Syscall|Confinement|TempFile|FileHandle|Glibc)\\b|${IMPORT}(RecSyncSystem|Glibc|CRecSyncSys)|Data\\(contentsOf|String\\(contentsOfFile|\\.write\\(to:|(^|[^.[:alnum:]_])(open|openat|close|fsync|unlink|unlinkat|renameat|mkdir|lstat|opendir|readdir)\\(" Sources/RecSyncEngine)"

# 5b. The error type speaks of the library: what the command line adds (its commands and flags
#     as hints) is decided in Sources/RecSyncCLI/Support/CommandError.swift.
rule "the model's messages name no command-line command or flag" \
    "RecSyncModel's errors say what happened in the library's terms; put the command-line hint in CommandError.hints" \
    "$(uses "'recsync [a-z]|[^-]--[a-z][a-z-]+|pass -C" Sources/RecSyncModel)"

rule "the library's messages name no recsync command" \
    "the library's errors say what happened and carry remedies (RecSyncError.Remedy); the command line words each remedy as a command in CommandError.hint" \
    "$(uses "'recsync [a-z-]" Sources/RecSyncStore Sources/RecSyncGit Sources/RecSyncWorkspace Sources/RecSyncEngine Sources/RecSyncEncryption Sources/RecSyncSubscriptions Sources/RecSyncSnapshots Sources/RecSyncSystem)"

# 6. The encryption decorator remembers its pins through its client's state store
#    (ClientStateStore: the workspace, an app's directory, memory), not through paths it writes.
rule "the encrypting store writes no files of its own" \
    "RecSyncEncryption keeps its state through ClientStateStore (readState/writeState); only the user's key files (UserKeyStore.swift, EncryptionKeys.swift) are files it writes" \
    "$(uses '\b(FileIO|FileManager|FileHandle|Syscall)\b|Data\(contentsOf|\.write\(to:' Sources/RecSyncEncryption \
        | grep -vE '^Sources/RecSyncEncryption/(UserKeyStore|EncryptionKeys)\.swift:' || true)"

# 6b. One system-call layer: EINTR is retried in RecSyncSystem (Syscall.attempt) alone.
rule "one EINTR loop" \
    "a call retried on EINTR outside Sources/RecSyncSystem; make the call through Syscall.attempt or retrying" \
    "$(uses '\bEINTR\b' Sources | grep -vE '^Sources/RecSyncSystem/' || true)"

# 7. The product speaks of the product: how a bug was found (an issue number, a finding's ID,
#    an attack or review pass) belongs in the commit message, not in code, test names or files
#    at the root.
rule "no issue numbers, finding IDs or attack passes in the tree" \
    "say what the code or test does, in the product's terms; how it was found goes in the commit message" \
    "$( { grep -rnE --include='*.swift' '\b[Ii]ssue[- ]?[0-9]+|[Aa]ttack|\b[Rr]eview (pass|finding)|finding [FA][0-9]+|\((F|A)[0-9]{1,2}\)' \
            Sources Tests Examples/Notes/Sources Examples/Notes/Tests 2>/dev/null || true
          ls | grep -iE 'finding|attack|review' || true; } )"
rule "suites and test files named by their subject" \
    "name a suite and its file after what it covers (AssetTransferTests), not after the pass that wrote it (hostile use, a review)" \
    "$( { grep -rnE --include='*.swift' '\b(struct|class|enum|extension) [A-Za-z0-9]*([Hh]ostile|[Rr]eview|[Ff]inding|[Ii]ssue[0-9])[A-Za-z0-9]*Tests\b' \
            Tests Examples/Notes/Tests 2>/dev/null || true
          find Tests Examples/Notes/Tests -name '*.swift' 2>/dev/null | grep -iE 'hostile|attack|review|finding|issue[0-9]' || true; } )"

if [ "$failed" != 0 ]; then
    echo "check-layers: failed; see the rules in scripts/check-layers.sh" >&2
    exit 1
fi
echo "check-layers: ok"

import ArgumentParser
import Foundation
import NotesService

/// `notes`: the example service from a shell.
///
///     notes create-store /tmp/store.git --user alice
///     notes add --db laptop.sqlite --store /tmp/store.git --user alice "Groceries" "milk"
///     notes sync --db laptop.sqlite --store /tmp/store.git --user alice
///     notes list --db laptop.sqlite --store /tmp/store.git --user alice
///     notes attach --db laptop.sqlite --store /tmp/store.git --user alice ID scan.pdf
///     notes attachment --db phone.sqlite --store /tmp/store.git --user alice --device phone ID
@main
struct Notes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A notes service kept in SQLite and synced through a recsync store.",
        subcommands: [CreateStore.self, Add.self, Edit.self, Remove.self, Attach.self, Attachment.self, List.self, Sync.self])
}

struct Connection: ParsableArguments {
    @Option(help: "The notes database (SQLite); created if missing.") var db: String
    @Option(help: "The store: a local path or a network remote.") var store: String
    @Option(help: "The user the notes belong to.") var user: String
    @Option(help: "This device's name (one per database).") var device = "notes"

    func open() async throws -> NotesService {
        let store = try NotesService.openStore(store, user: user, databasePath: db, device: device)
        // One command, then the process ends: it syncs when asked (`notes sync`), not by itself.
        return try await NotesService(databasePath: db, store: store, automaticallySync: false)
    }
}

struct CreateStore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Creates an empty store at a local path.")
    @Argument var path: String
    @Option var user: String
    func run() async throws { try NotesService.createStore(at: path, user: user) }
}

struct Add: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Adds a note and prints its ID.")
    @OptionGroup var connection: Connection
    @Argument var title: String
    @Argument var body = ""
    func run() async throws { print(try await connection.open().add(title: title, body: body)) }
}

struct Edit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Changes a note's title or body.")
    @OptionGroup var connection: Connection
    @Argument var id: String
    @Option var title: String?
    @Option var body: String?
    func run() async throws { try await connection.open().edit(id, title: title, body: body) }
}

struct Remove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "rm", abstract: "Deletes a note.")
    @OptionGroup var connection: Connection
    @Argument var id: String
    func run() async throws { try await connection.open().delete(id) }
}

struct Attach: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Attaches a copy of a file to a note (sent on the next sync).")
    @OptionGroup var connection: Connection
    @Argument var id: String
    @Argument var file: String
    func run() async throws { try await connection.open().attach(id, fileAt: file) }
}

struct Attachment: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Prints the path of a note's attachment, downloading it first if needed.")
    @OptionGroup var connection: Connection
    @Argument var id: String
    func run() async throws {
        guard let path = try await connection.open().attachmentFile(of: id) else {
            FileHandle.standardError.write(Data("notes: note \(id) has no attachment\n".utf8))
            throw ExitCode.failure
        }
        print(path)
    }
}

struct List: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Prints every note: ID, title, body.")
    @OptionGroup var connection: Connection
    func run() async throws {
        for note in try await connection.open().notes() { print("\(note.id)\t\(note.title)\t\(note.body)") }
    }
}

struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Fetches others' changes, then sends this database's.")
    @OptionGroup var connection: Connection
    func run() async throws { try await connection.open().sync() }
}

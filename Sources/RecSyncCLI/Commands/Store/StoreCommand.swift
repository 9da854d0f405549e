import ArgumentParser

/// `recsync store`: commands on a store itself.
struct StoreCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "Create and inspect stores.",
        subcommands: [StoreInitCommand.self, StoreDoctorCommand.self])
}

import RecSyncCLI

await RecSyncCommand.main()

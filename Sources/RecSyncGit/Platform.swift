// recsync is Linux-only for now: its durable writes and confinement use Glibc and Linux calls
// (`st_mtim`, `syncfs`, `openat` without following links, inotify) directly.
#if !os(Linux)
    #error("recsync builds on Linux (Glibc) only; see README.md, Platform")
#endif

import CRecSyncSys

/// How the process's heap gives memory back, set once at start-up by the command line.
///
/// glibc's malloc keeps an arena per thread that allocates (up to eight per core), each
/// holding on to what was freed in it, and returns the top of the heap to the system only
/// above a threshold it raises as large blocks come and go. A clone of 100,000 records peaked
/// at 109 MB resident with about 25 MB of it in live allocations. Two arenas and a fixed
/// threshold of 128 KiB keep the resident size nearer what is used.
package enum HeapTuning {
    package static func keepHeapCompact() {
        recsync_keep_heap_compact()
    }
}

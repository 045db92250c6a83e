import NotesWork
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Work that prefers the background executor runs on its threads, which give way to the
/// event loops (nice 10), and comes back with its result.
@Suite struct BackgroundExecutorTests {
    /// The calling thread's nice value (on Linux it belongs to the thread).
    static func threadNice() -> Int32 {
        #if os(Linux)
            return getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        #else
            return 0
        #endif
    }

    @Test func workThatPrefersItRunsOnItsLowerPriorityThreads() async {
        let executor = BackgroundExecutor(threads: 2)
        let outside = Self.threadNice()
        let (nice, sum) = await withTaskExecutorPreference(executor) {
            await Task.yield()
            // Child tasks inherit the preference.
            let sum = await withTaskGroup(of: Int.self) { group in
                for value in 1...100 { group.addTask { value } }
                return await group.reduce(0, +)
            }
            return (Self.threadNice(), sum)
        }
        #expect(sum == 5_050)
        #if os(Linux)
            #expect(nice == Blocking.backgroundNice)
            #expect(outside != Blocking.backgroundNice)
        #endif
    }
}

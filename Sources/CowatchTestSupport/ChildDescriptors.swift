import Foundation

// Descriptors that reach no child but the one they are given to.
//
// Foundation's `Process.run()` keeps the test process's descriptors out of its child only by
// listing those open just before it spawns and closing them in the child; one made by another
// thread in between is inherited. Foundation's `Pipe()` and a plain `accept` are not
// close-on-exec, so a pipe or a connection made beside a launch went to that child too: a
// `redis-cli` query's output pipe, made while a test next to it launched a daemon, reached the
// daemon, and the query waited for an end of file until the daemon exited minutes later (the
// cluster test's move "took" 160 and 404 s). What is made here is made while no launch is under
// way (`Process.launching`) and close-on-exec at once.

extension Pipe {
    /// A pipe for a child's standard stream. Its two descriptors are close-on-exec; the child's
    /// standard streams are copies of them, made without the flag, so the child still gets them.
    public static func forChild() -> Pipe {
        Process.launching.withLock {
            let pipe = Pipe()
            for descriptor in [pipe.fileHandleForReading.fileDescriptor, pipe.fileHandleForWriting.fileDescriptor] {
                _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            }
            return pipe
        }
    }
}

/// `accept(listener, nil, nil)` whose connection no child can inherit: waits for a connection
/// without holding the launch lock, then accepts it (without blocking) and marks it close-on-exec
/// while no launch is under way. Blocks like `accept`; returns the descriptor, or −1 with `errno`
/// set (a listener that was shut down or closed: `EINVAL`, `EBADF`).
///
/// (Glibc's `accept4` with `SOCK_CLOEXEC` would do it in one call, but Swift's Glibc module does
/// not declare it.)
public func acceptClosedOnExec(_ listener: Int32) -> Int32 {
    let flags = fcntl(listener, F_GETFL)
    if flags >= 0 && flags & O_NONBLOCK == 0 { _ = fcntl(listener, F_SETFL, flags | O_NONBLOCK) }
    while true {
        var ready = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
        if poll(&ready, 1, -1) < 0 {
            if errno == EINTR { continue }
            return -1
        }
        let (connection, error) = Process.launching.withLock { () -> (Int32, Int32) in
            let connection = accept(listener, nil, nil)
            let error = errno
            if connection >= 0 { _ = fcntl(connection, F_SETFD, FD_CLOEXEC) }
            return (connection, error)
        }
        if connection >= 0 { return connection }
        // Taken back by its client before we got to it, or another signal: wait again.
        if error == EAGAIN || error == EWOULDBLOCK || error == EINTR || error == ECONNABORTED { continue }
        errno = error
        return -1
    }
}

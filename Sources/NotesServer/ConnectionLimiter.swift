import NIOCore
import Synchronization

/// Closes a new TCP connection when its address already holds
/// `Limits.maxConnectionsPerClient`: one client cannot take every socket notesd has.
/// (Unix-socket connections have no address and are not counted.)
final class ConnectionLimiter: Sendable {
    private let open = Mutex<[String: Int]>([:])
    let limit: Int

    init(limit: Int) { self.limit = limit }

    /// Counts a connection in; false if its address is at the limit.
    func admit(_ address: String) -> Bool {
        open.withLock { open in
            guard open[address, default: 0] < limit else { return false }
            open[address, default: 0] += 1
            return true
        }
    }

    func release(_ address: String) {
        open.withLock { open in
            let left = open[address, default: 1] - 1
            open[address] = left > 0 ? left : nil
        }
    }

    /// The channel handler that applies it, one per connection.
    func handler() -> Handler { Handler(limiter: self) }

    final class Handler: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = NIOAny
        let limiter: ConnectionLimiter
        private var counted: String?

        init(limiter: ConnectionLimiter) { self.limiter = limiter }

        func handlerAdded(context: ChannelHandlerContext) {
            guard let address = context.channel.remoteAddress?.ipAddress else { return }
            if limiter.admit(address) {
                counted = address
            } else {
                context.close(promise: nil)
            }
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            if let counted { limiter.release(counted) }
            counted = nil
        }
    }
}

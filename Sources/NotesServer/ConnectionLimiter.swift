import NIOCore
import Synchronization

/// Closes a new connection when its client already holds `Limits.maxConnectionsPerClient`:
/// one client cannot take every descriptor notesd has. A TCP client is its address; on
/// the Unix socket, its Unix user.
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

        private var decided = false

        func handlerAdded(context: ChannelHandlerContext) {
            if context.channel.isActive { decide(context: context) }
        }

        func channelActive(context: ChannelHandlerContext) {
            decide(context: context)
            context.fireChannelActive()
        }

        /// Counts the connection in once its addresses are known (it is active).
        private func decide(context: ChannelHandlerContext) {
            guard !decided else { return }
            decided = true
            if let address = context.channel.remoteAddress?.ipAddress {
                admit(address, context: context)
            } else if let uid = PeerCredentials.uidFuture(of: context.channel) {
                // (completed on this channel's event loop, as the handler's calls are)
                let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                uid.whenSuccess { uid in
                    let (handler, context) = loopBound.value
                    handler.admit("uid:\(uid)", context: context)
                }
            }
        }

        private func admit(_ client: String, context: ChannelHandlerContext) {
            guard context.channel.isActive else { return }
            if limiter.admit(client) {
                counted = client
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

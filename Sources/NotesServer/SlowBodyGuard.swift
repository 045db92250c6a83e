import NIOHTTPTypes
import NIOCore

/// Closes a connection whose request body arrives too slowly: the idle timeout only
/// counts while no request is under way, so without this a client sending one byte a
/// second would hold its connection (and a request handler) for ever.
///
/// The body must end within `graceSeconds` plus one second for every
/// `minimumBytesPerSecond` bytes received so far; the deadline moves with each chunk.
/// One handler per connection, on its event loop.
final class SlowBodyGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private let grace: TimeAmount
    private let minimumBytesPerSecond: Int
    private var started: NIODeadline?
    private var received = 0
    private var timer: Scheduled<Void>?

    init(graceSeconds: Int, minimumBytesPerSecond: Int) {
        self.grace = .seconds(Int64(graceSeconds))
        self.minimumBytesPerSecond = max(1, minimumBytesPerSecond)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            started = .now()
            received = 0
            schedule(context: context)
        case .body(let buffer):
            received += buffer.readableBytes
            schedule(context: context)
        case .end:
            timer?.cancel()
            timer = nil
            started = nil
        }
        context.fireChannelRead(data)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    /// (Re)arms the timer at the deadline the bytes so far have earned.
    private func schedule(context: ChannelHandlerContext) {
        guard let started else { return }
        timer?.cancel()
        let earned = TimeAmount.nanoseconds(Int64(received / minimumBytesPerSecond) * 1_000_000_000)
        let loopBound = NIOLoopBound(context, eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: started + grace + earned) {
            loopBound.value.close(promise: nil)
        }
    }
}

import NIOCore
import NIOHTTPTypes

/// Tells when what was written on a connection has left notesd: when its bytes waiting
/// to be sent are back under the channel's low-water mark, or the connection closed.
///
/// A response body's writer returns as soon as the connection has taken its bytes, and
/// a connection takes a whole buffer whenever it was writable when offered: it learns
/// that it no longer is only once its event loop has tried to send it. So "written" is
/// asked here, on the event loop, after the writes before it: an answer of 12 MiB that
/// the client does not read counts as written only once it has left, not while it waits
/// in notesd's memory (which on a busy machine, with the event loop running late, it
/// always did). One handler per connection, on its event loop.
final class DrainSignal: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart

    private var waiting: [EventLoopPromise<Void>] = []

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { release() }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        release()
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        release()
    }

    private func release() {
        let waiting = waiting
        self.waiting = []
        for promise in waiting { promise.succeed() }
    }

    /// Returns once what was written on `channel` so far has left notesd, or the
    /// connection closed (at once on a channel without this handler).
    static func drained(_ channel: any Channel) async {
        let drained = channel.eventLoop.flatSubmit { () -> EventLoopFuture<Void> in
            guard channel.isActive, !channel.isWritable, let handler = try? channel.pipeline.syncOperations.handler(type: DrainSignal.self) else {
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            let promise = channel.eventLoop.makePromise(of: Void.self)
            handler.waiting.append(promise)
            return promise.futureResult
        }
        _ = try? await drained.get()
    }
}

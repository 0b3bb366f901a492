import { Channel, type ChannelCredentials, type ChannelInterface, type ChannelOptions } from '@grpc/grpc-js';

/**
 * etcd3 makes a gRPC client for each etcd service it calls (KV, Watch, Lease, Auth), each with a
 * channel of its own: with a local subchannel pool (see `createEtcdClient`), a TCP connection each.
 * A source reading and watching its key held two connections to etcd, so 10,000 agents made 20,000,
 * past etcd's descriptors on a host with a limit of 20,000 (it stopped accepting, its `/health`
 * with it). These options make the clients of one etcd3 instance to one etcd endpoint share one
 * channel, as etcd's own Go client does (one `grpc.ClientConn`).
 *
 * etcd3 closes every client of an endpoint to reconnect (`resetAllServices`) or to end; so a
 * channel takes no new client once one of its clients has closed (the next ones get a new
 * channel), and closes when its last client does.
 */
export function sharedChannelOptions(options: ChannelOptions): ChannelOptions {
  const current = new Map<string, SharedChannel>();
  const channelFor = (address: string, credentials: ChannelCredentials): ChannelInterface => {
    let shared = current.get(address);
    if (shared === undefined || shared.retired) {
      shared = new SharedChannel(new Channel(address, credentials, { ...options }));
      current.set(address, shared);
    }
    return shared.use();
  };
  return { ...options, channelFactoryOverride: channelFor };
}

/** One channel, handed to each client as a view whose `close` gives up that client's share only. */
class SharedChannel {
  retired = false;
  private users = 0;

  constructor(private readonly channel: Channel) {}

  use(): ChannelInterface {
    this.users += 1;
    let released = false;
    const close = () => {
      if (released) return;
      released = true;
      this.retired = true;
      this.users -= 1;
      if (this.users === 0) this.channel.close();
    };
    return new Proxy(this.channel, {
      get: (target, key) => {
        if (key === 'close') return close;
        const value: unknown = Reflect.get(target, key);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }
}

package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/internal/backoff"
	"github.com/gorilla/websocket"
)

// Run implements channels.Channel: it connects to the gateway, delivers the
// accepted messages to sink in the order they were posted, reconnects with
// backoff after any drop (resuming the session, so messages posted meanwhile
// are replayed) and returns nil when ctx ends. It returns an error only when
// Discord refuses the bot for good: ErrInvalidAuth, ErrDisallowedIntents,
// ErrGatewayRefused.
func (a *Adapter) Run(ctx context.Context, sink channels.Sink) error {
	if sink == nil {
		return errors.New("run discord adapter: nil sink")
	}
	if !a.running.CompareAndSwap(false, true) {
		return ErrAlreadyRunning
	}
	defer a.running.Store(false)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Messages are queued as read from the gateway and filtered on the way
	// out: the filter may look a channel up over REST, which must not hold
	// up the gateway's read loop. Discord does not send a read message
	// again, so what is left when Run stops is handed over.
	var out *channels.Delivery[item]
	out = channels.NewDelivery(channels.DeliveryConfig[item]{
		Sink: sink,
		Accept: func(ctx context.Context, it item) (channels.Inbound, bool) {
			if it.i != nil {
				return a.acceptInteraction(ctx, it.i, out.Notify)
			}
			return a.accept(ctx, it.m, out.Notify)
		},
		Send: a.Send,
		Stop: cancel,
		Log:  a.log,
	})
	drops := make(chan struct{}, 1)
	for _, remove := range a.addHandlers(ctx, out, drops) {
		defer remove()
	}
	delivered := make(chan struct{})
	go func() {
		defer close(delivered)
		out.Run(ctx)
	}()

	a.health.Set(channels.StateConnecting, "")
	err := a.connect(ctx, drops) // the session is closed when it returns
	cancel()
	<-delivered
	out.HandOver(ctx)
	a.bg.Wait()
	if err != nil {
		a.health.Set(channels.StateFailed, err.Error())
		return fmt.Errorf("run discord adapter: %w", err)
	}
	a.health.Set(channels.StateStopped, "")
	return nil
}

// item is what the gateway reader queues: a message or a slash command.
type item struct {
	m *discordgo.Message
	i *discordgo.Interaction
}

// addHandlers registers the gateway handlers of one Run and returns their
// removers. They run in discordgo's read loop (SyncEvents), so they only
// copy and hand over.
func (a *Adapter) addHandlers(ctx context.Context, out *channels.Delivery[item], drops chan<- struct{}) []func() {
	return append(a.serverHandlers(),
		a.session.AddHandler(func(_ *discordgo.Session, r *discordgo.Ready) {
			if r.User != nil {
				a.botID.Store(r.User.ID)
			}
			a.log.Debug("discord: ready", "guilds", len(r.Guilds))
		}),
		a.session.AddHandler(func(_ *discordgo.Session, _ *discordgo.Resumed) {
			a.log.Debug("discord: session resumed")
		}),
		a.session.AddHandler(func(_ *discordgo.Session, _ *discordgo.Disconnect) {
			select {
			case drops <- struct{}{}:
			default:
			}
		}),
		a.session.AddHandler(func(_ *discordgo.Session, m *discordgo.MessageCreate) {
			if m.Message == nil {
				return
			}
			// Also while Run is stopping: the hand-over still delivers it.
			out.Put(ctx, item{m: m.Message})
			if a.onQueued != nil {
				a.onQueued(m.ID)
			}
		}),
		a.session.AddHandler(func(_ *discordgo.Session, i *discordgo.InteractionCreate) {
			a.onInteraction(ctx, i.Interaction, out)
		}),
	)
}

// connect keeps a gateway connection up until ctx ends. It returns nil then,
// or the error that makes reconnecting pointless.
func (a *Adapter) connect(ctx context.Context, drops <-chan struct{}) error {
	defer a.closeSession()
	failures := 0 // since the last healthy connection
	wait := func() bool {
		d := backoff.Jitter(backoff.Delay(failures, a.tune.backoffBase, a.tune.backoffMax))
		failures++
		return backoff.Sleep(ctx, d) == nil
	}
	// Until the first connection the state stays "connecting".
	retrying := channels.StateConnecting

	// A bad token is the common unrecoverable mistake; REST says so plainly,
	// before any websocket.
	for {
		err := a.checkToken(ctx)
		if err == nil {
			break
		}
		if errors.Is(err, ErrInvalidAuth) {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
		a.log.Warn("discord: cannot reach the API", "err", err)
		a.health.Set(retrying, "cannot reach the Discord API")
		if !wait() {
			return nil
		}
	}

	count, err := a.setShards(ctx)
	if err != nil {
		return err
	}
	for {
		lost, ok := a.holdShard(ctx, count)
		if !ok {
			return nil
		}
		// One process declares the commands: shard 0's (or the only one).
		if a.shardID == 0 {
			rctx, cancel := context.WithTimeout(ctx, a.tune.openTimeout)
			if err := a.registerCommands(rctx); err != nil && ctx.Err() == nil {
				a.log.Warn("discord: declaring slash commands failed; @bot /command still works", "err", err)
			}
			cancel()
		}
		err := a.serve(ctx, drops, lost, retrying)
		if !errors.Is(err, errShardLost) {
			a.releaseShard()
			return err
		}
		a.log.Warn("discord: lost the shard's lease (the store connection ended); standing by", "shard", a.shardID)
		a.closeSession()
		retrying = channels.StateReconnecting
	}
}

// serve keeps the shard's gateway connection up until ctx ends (nil), a
// refusal makes reconnecting pointless, or lost closes (errShardLost).
func (a *Adapter) serve(ctx context.Context, drops <-chan struct{}, lost <-chan struct{}, retrying string) error {
	failures := 0 // since the last healthy connection
	wait := func() bool {
		d := backoff.Jitter(backoff.Delay(failures, a.tune.backoffBase, a.tune.backoffMax))
		failures++
		return backoff.Sleep(ctx, d) == nil
	}
	for {
		select { // a drop of the previous connection, already handled
		case <-drops:
		default:
		}
		if err := a.open(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if fatal := fatalClose(err); fatal != nil {
				return fatal
			}
			a.log.Warn("discord: gateway connection failed", "err", err)
			a.health.Set(retrying, "gateway connection failed")
			if !wait() {
				return nil
			}
			continue
		}
		since := time.Now()
		retrying = channels.StateReconnecting
		a.health.Set(channels.StateConnected, "")
		a.log.Info("discord: connected to the gateway")
		select {
		case <-ctx.Done():
			return nil
		case <-lost:
			return errShardLost
		case <-drops:
		}
		if time.Since(since) >= a.tune.healthyAfter {
			failures = 0
		}
		a.log.Info("discord: gateway connection lost; reconnecting")
		a.health.Set(channels.StateReconnecting, "connection lost")
		if !wait() {
			return nil
		}
	}
}

// setShards sets the shard this process identifies as and returns the
// count; with AutoShards the count is Discord's recommendation. With
// ShardLeases the shard is the one leased (holdShard).
func (a *Adapter) setShards(ctx context.Context) (int, error) {
	count := a.shardCount
	if count == AutoShards {
		gb, err := a.session.GatewayBot(discordgo.WithContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return 0, nil
			}
			return 0, fmt.Errorf("get recommended shard count: %w", err)
		}
		count = max(gb.Shards, 1)
		a.log.Info("discord: shard count recommended by Discord", "shards", count)
	}
	if count <= 1 && a.wantShard <= 0 {
		a.shardID = 0
		return count, nil
	}
	if a.wantShard >= count {
		return 0, fmt.Errorf("%w: shard %d of %d", ErrShardOutOfRange, a.wantShard, count)
	}
	if a.wantShard >= 0 {
		a.shardID = a.wantShard
	}
	a.session.ShardID, a.session.ShardCount = a.shardID, count
	return count, nil
}

// open runs one bounded gateway handshake. discordgo sends RESUME when it
// has a session (so missed events are replayed), IDENTIFY otherwise.
func (a *Adapter) open(ctx context.Context) error {
	octx, cancel := context.WithTimeout(ctx, a.tune.openTimeout)
	defer cancel()
	a.watch.begin(octx)
	err := a.session.Open()
	a.watch.end()
	if errors.Is(err, discordgo.ErrWSAlreadyOpen) {
		// A second Disconnect from the same teardown; the link is up.
		return nil
	}
	return err
}

// closeSession ends the gateway connection, if any. discordgo waits a second
// after the close frame.
func (a *Adapter) closeSession() {
	if err := a.session.Close(); err != nil {
		a.log.Debug("discord: close gateway", "err", err)
	}
}

// checkToken asks who the bot is; it learns the bot id on the way.
func (a *Adapter) checkToken(ctx context.Context) error {
	u, err := a.session.User("@me", discordgo.WithContext(ctx))
	if err != nil {
		var rest *discordgo.RESTError
		if errors.As(err, &rest) && rest.Response != nil && rest.Response.StatusCode == http.StatusUnauthorized {
			return ErrInvalidAuth
		}
		return fmt.Errorf("get current user: %w", err)
	}
	if u != nil && u.ID != "" {
		a.botID.Store(u.ID)
	}
	return nil
}

// fatalClose maps the gateway close codes after which reconnecting cannot
// help to an error; nil for anything else.
func fatalClose(err error) error {
	var ce *websocket.CloseError
	if !errors.As(err, &ce) {
		return nil
	}
	switch ce.Code {
	case 4004:
		return ErrInvalidAuth
	case 4013, 4014:
		return fmt.Errorf("%w (close %d)", ErrDisallowedIntents, ce.Code)
	case 4010, 4011, 4012:
		return fmt.Errorf("%w: close %d %s", ErrGatewayRefused, ce.Code, ce.Text)
	}
	return nil
}

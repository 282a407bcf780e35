package discord

import "errors"

// ErrInvalidConfig is wrapped by every configuration error New returns; the
// message names the field, e.g. `discord.groupPolicy: must be one of ...`.
var ErrInvalidConfig = errors.New("invalid discord configuration")

// ErrInvalidAuth is returned by Run when Discord rejects the bot token (HTTP
// 401, or gateway close 4004). Retrying cannot help.
var ErrInvalidAuth = errors.New("discord rejected the bot token")

// ErrDisallowedIntents is returned by Run when the gateway refuses the
// intents (close 4013/4014): the Message Content intent (or, with
// guildMembers on, the Server Members intent) is not enabled for the bot in
// the developer portal.
var ErrDisallowedIntents = errors.New("discord refused the gateway intents: enable the Message Content intent (and Server Members, with guildMembers on) for the bot in the Discord developer portal")

// ErrGatewayRefused is returned by Run for other gateway close codes that no
// reconnect can fix (invalid shard, sharding required, invalid API version).
var ErrGatewayRefused = errors.New("discord gateway refused the connection")

// ErrAlreadyRunning is returned by Run when the adapter is already running.
var ErrAlreadyRunning = errors.New("discord adapter is already running")

// ErrRejected is wrapped by Send errors for requests Discord refused for
// good (4xx other than 429: missing permissions, unknown channel, bad form);
// they are not retried.
var ErrRejected = errors.New("discord rejected the request")

// ErrNoTarget is returned by Send and ignored by StartTyping when an Outbound
// names no channel.
var ErrNoTarget = errors.New("no discord channel to send to")

// ErrEmptyMessage is returned by Send for a message with no visible text,
// which Discord refuses.
var ErrEmptyMessage = errors.New("empty discord message")

// ErrShardOutOfRange is returned by Run when shardID is not below the shard
// count (with "auto", Discord recommended fewer shards than expected).
var ErrShardOutOfRange = errors.New("discord shard id out of range")

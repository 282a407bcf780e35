// Package slack is the Slack adapter of the gateway: it connects over Socket
// Mode (no public URL), turns app_mention and message events into
// channels.Inbound (filtered: own messages, edits and other subtypes,
// duplicates, allowFrom, allowChannels, group policy; bot mention stripped;
// one session per thread), and sends channels.Outbound with chat.postMessage
// (Markdown converted to mrkdwn, tables as aligned code blocks, split at
// Slack's limit, rate limits honoured). The "eyes" reaction is its typing
// indicator. It also makes the gateway feel native in Slack: slash
// commands (slash_commands envelopes, answered through response_url),
// the earlier messages of a thread it is mentioned in (Inbound.Context),
// text files shared with a post read into the turn, and answers streamed
// into a message edited with chat.update. Each Inbound carries its
// audience (a DM, a guest's DM, a private or public channel of one
// workspace, a shared channel), from the envelope, from who the sender is
// (users.info) and from what the channel is and who is in it
// (conversations.info, conversations.members), kept until Slack announces
// a change (the events manifest.yaml subscribes to).
//
// slack-go's types never leave this package. Of ours it imports only the
// channels contract (with its shared Delivery) and the audience and
// internal/backoff leaves; channels/slack/fakeslack is its fake server for
// tests.
package slack

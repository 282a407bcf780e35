// Package slack is the Slack adapter of the gateway: it connects over Socket
// Mode (no public URL), turns app_mention and message events into
// channels.Inbound (filtered: own messages, edits and other subtypes,
// duplicates, allowFrom, allowChannels, group policy; bot mention stripped;
// one session per thread), and sends channels.Outbound with chat.postMessage
// (Markdown converted to mrkdwn, split at Slack's limit, rate limits
// honoured). The "eyes" reaction is its typing indicator.
//
// slack-go's types never leave this package. Of ours it imports only the
// channels contract (with its shared Delivery) and the internal/backoff
// leaf; channels/slack/fakeslack is its fake server for tests.
package slack

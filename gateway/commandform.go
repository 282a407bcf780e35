package gateway

import "github.com/dreamgate/dreamgate/channels"

// commandForms is implemented by channels where a command is typed in
// another form than "/name" (a Slack slash command under a prefix, or
// "@bot /status" where the platform keeps the name for itself). /help
// shows that form, so what it lists works where it is read.
type commandForms interface {
	// CommandForm returns how a person types the command name ("/dream")
	// on this channel.
	CommandForm(name string) string
	// CommandNote is one line /help ends with on this channel, "" for none.
	CommandNote() string
}

// commandUsage is how in's sender types the command name.
func (g *Gateway) commandUsage(in channels.Inbound, name string) string {
	if f, ok := g.channel(in.Channel).(commandForms); ok {
		if form := f.CommandForm(name); form != "" {
			return form
		}
	}
	return name
}

// commandNote is the channel's closing line for /help, "" for none.
func (g *Gateway) commandNote(in channels.Inbound) string {
	if f, ok := g.channel(in.Channel).(commandForms); ok {
		return f.CommandNote()
	}
	return ""
}

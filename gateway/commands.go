package gateway

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/internal/editdist"
)

// command is one slash command: a small handler with its help line.
// Authorization is checked in runCommand, in one place.
type command struct {
	name string
	args string // argument hint for /help, "" when it takes none
	help string
	// admin commands are refused to anyone not in config admins (the local
	// terminal user always is one).
	admin bool
	// priority commands skip the session queue so they work during a turn.
	priority bool
	run      func(ctx context.Context, g *Gateway, req cmdRequest) string
}

type cmdRequest struct {
	in   channels.Inbound
	args string
	// later, set by a command that answers from the background (/dream),
	// says its answer is not out when run returns: the background work
	// records it answered once it is.
	later *bool
}

func commandList() []*command {
	return []*command{
		cmdHelp(), cmdNew(), cmdStatus(), cmdStop(),
		cmdDream(), cmdDreamLog(), cmdDreamRestore(), cmdWhy(), cmdWebLink(),
	}
}

func commandTable() map[string]*command {
	list := commandList()
	m := make(map[string]*command, len(list))
	for _, c := range list {
		m[c.name] = c
	}
	return m
}

// Commands lists the chat commands for adapters that declare them to their
// platform, in /help's order.
func Commands() []channels.Command {
	list := commandList()
	out := make([]channels.Command, 0, len(list))
	for _, c := range list {
		// The platform's one option is the first argument ("sha"); what
		// follows it ("keep|all") is typed after it in the same text.
		arg := ""
		if f := strings.Fields(c.args); len(f) > 0 {
			arg = strings.Trim(f[0], "[]<> ")
		}
		out = append(out, channels.Command{Name: strings.TrimPrefix(c.name, "/"), Description: c.help, Arg: arg, Admin: c.admin})
	}
	return out
}

type parsedCommand struct {
	name string // with the slash, lower case
	args string
}

// commandWord matches "/name" and "/name@bot" (the suffix some clients add).
// It is compiled on first use: every run of the binary would pay for it at
// start-up, and most never see a command.
var commandWord = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^/([A-Za-z][A-Za-z0-9_-]*)(@\S+)?$`)
})

// parseCommand recognises "/word args". Text that merely starts with a
// slash, like a path ("/etc/hosts is missing"), is not a command and goes to
// the model.
func parseCommand(text string) *parsedCommand {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, "/") {
		return nil
	}
	word, args, _ := strings.Cut(text, " ")
	if i := strings.IndexAny(word, "\n\t"); i >= 0 {
		word, args = word[:i], strings.TrimSpace(text[i:])
	}
	m := commandWord().FindStringSubmatch(word)
	if m == nil {
		return nil
	}
	// Telegram-style underscores (/dream_log) mean the hyphenated command.
	name := "/" + strings.ReplaceAll(strings.ToLower(m[1]), "_", "-")
	return &parsedCommand{name: name, args: strings.TrimSpace(args)}
}

func (g *Gateway) runCommand(ctx context.Context, in channels.Inbound, pc *parsedCommand) Result {
	c := g.commands[pc.name]
	var reply string
	later := false
	switch {
	case c == nil:
		reply = g.unknownCommand(in, pc.name)
	case c.admin && !g.isAdmin(in):
		g.logger.Info("admin command refused", "command", pc.name, "channel", in.Channel, "sender", in.SenderID)
		reply = refuseAdmin(pc.name, in)
	case c.args == "" && pc.args != "":
		reply = fmt.Sprintf("%s takes no arguments. Try %s.", pc.name, pc.name)
	default:
		reply = c.run(ctx, g, cmdRequest{in: in, args: pc.args, later: &later})
	}
	// Counted before its reply goes out: whoever reads the reply and then
	// the metrics finds it counted.
	g.commandDone(in.Channel, c)
	if reply != "" {
		g.send(channels.ReplyTo(in, channels.KindReply, reply))
	}
	if g.recordsCommand(pc) && !later {
		g.markAnswered(in)
	}
	return Result{Reply: reply}
}

// recordsCommand says whether the command pc is kept in the inbox until
// answered, as a chat message is, so that a restart (or, on a shared
// database, another process) runs a command accepted before it: every
// command the conversation's queue runs (a /dream the gateway died in,
// a Slack or Discord slash command whose answer still has its
// response_url or interaction token), not the priority ones, answered at
// once, nor a word that names no command.
func (g *Gateway) recordsCommand(pc *parsedCommand) bool {
	c := g.commandFor(pc)
	return c != nil && !c.priority
}

// recordedCommand is the command a message of the inbox asks for, nil
// when it is a chat message (or a command the inbox does not keep).
func (g *Gateway) recordedCommand(in channels.Inbound) *parsedCommand {
	if pc := parseCommand(in.Text); g.recordsCommand(pc) {
		return pc
	}
	return nil
}

// unknownCommand suggests the nearest command in the form that works on
// in's channel (a Slack prefix, "@bot /status"), as /help lists them.
func (g *Gateway) unknownCommand(in channels.Inbound, name string) string {
	best, bestDist := "", 3
	names := make([]string, 0, len(g.commands))
	for n := range g.commands {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if d := editdist.Distance(name, n); d < bestDist {
			best, bestDist = n, d
		}
	}
	if best == "" {
		for _, n := range names {
			if len(name) > 2 && (strings.HasPrefix(n, name) || strings.HasPrefix(name, n)) {
				best = n
				break
			}
		}
	}
	if best != "" {
		return fmt.Sprintf("Unknown command %s. Did you mean %s?", name, g.commandUsage(in, best))
	}
	return fmt.Sprintf("Unknown command %s. Try %s for the list.", name, g.commandUsage(in, "/help"))
}

// refuseAdmin says who may run an admin command and how to become one:
// the operator lists the sender's id under "admins" in the config.
func refuseAdmin(name string, in channels.Inbound) string {
	return fmt.Sprintf("Not allowed: %s is for admins only. Whoever runs this gateway can make you one by adding %q to \"admins\" in its config.",
		name, in.Channel+":"+in.SenderID)
}

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

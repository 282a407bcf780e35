package store

import "time"

// Many processes on one store (the PostgreSQL engine) act as one
// assistant: each joins the store as a Process, and a conversation is
// worked on by the one process that holds its claim, while work that must
// happen once at a time across processes (a Discord shard's connection, a
// scope's Dream) is held under a lease. A claim and a lease live as long
// as their holder's connection to the store: a process that dies releases
// everything it held, and another takes it over. The embedded engine has
// one process and needs neither.

// Claims share the conversations of a store between its processes. A
// process answers a conversation's messages only while it holds its claim,
// so replies stay in order per conversation while conversations spread
// over the processes.
type Claims interface {
	// Claim takes the conversation key for this process without waiting.
	// ok is false when another process holds it; takenOver says the last
	// holder died holding it.
	Claim(key string) (ok, takenOver bool, err error)
	// Release lets key go; other processes are told (Wake).
	Release(key string) error
	// HeldElsewhere reports whether another live process holds key,
	// without taking or letting go of anything.
	HeldElsewhere(key string) (bool, error)
	// Waiting returns the messages of key that were accepted (by any
	// process) and not answered, in the order they were sent (by the
	// platform's time; those sent at once in the order they were
	// accepted): another process may record a conversation's message
	// after this one recorded the next.
	Waiting(key string) ([]InboxMessage, error)
	// Claimable lists up to n conversations of the given platforms with
	// messages waiting that no live process holds, the one waiting longest
	// first: one a process died holding at once, one no process claimed
	// yet once it waited unclaimed (the process that received it takes it
	// first).
	Claimable(platforms []string, unclaimed time.Duration, n int) ([]string, error)
	// Notify tells the other processes that key has work they may take
	// (Wake).
	Notify(key string) error
	// Wake receives the keys another process released or announced (""
	// for any).
	Wake() <-chan string
	// Lost is closed when this process's claims and leases ended with its
	// connection: every conversation it holds may be another's now. The
	// next Claim or Lease starts a new connection.
	Lost() <-chan struct{}
}

// Leases hold what only one process may do at a time, by name (a Discord
// shard, a scope's Dream). Each taking of a lease raises its epoch, which
// the store checks on the holder's writes, so a holder that lost its lease
// (its connection ended while it went on) cannot write over its successor.
type Leases interface {
	// Lease takes name without waiting; ok is false when another process
	// holds it. epoch is this holding's, higher than every earlier one;
	// takenOver says the last holder died holding it.
	Lease(name string) (epoch int64, ok, takenOver bool, err error)
	// Unlease lets name go.
	Unlease(name string) error
}

// Held is one claim or lease a process holds.
type Held struct {
	Name  string
	Since time.Time
	// Epoch is a lease's (0 for a claim).
	Epoch int64
}

// ProcessStatus is one live process of a store, as the store sees it.
type ProcessStatus struct {
	ID      int64
	Host    string
	PID     int
	Version string
	Started time.Time
	// Claims are the conversations it holds; Leases its leases.
	Claims []Held
	Leases []Held
}

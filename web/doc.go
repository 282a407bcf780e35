// Package web is the memory page: server-rendered pages over what the
// assistant remembers, for the people allowed to read it. The overview
// (models, channels, Dream's schedule, last and next run, backlog, recent
// problems), the memory of each scope (its files as they are now, each fact
// with its priority, date and the history entries it came from, its cold
// memory, and its hot-memory budget), the timeline of the memory
// repository (Dreams, deep Dreams, hand edits, restores, each with its
// diff, and a restore for admins after a confirmation naming what it also
// undoes), and the recall search.
//
// Access follows chat's rules (audience.Readable): the operator reads every
// scope; a person signed in with the link /web-link sent to their DM reads
// what that DM reads. Whatever a viewer may not read answers as what does
// not exist. No secret, key or token is ever written into a page.
//
// Pages are typed templates (*.templ) that templ turns into Go
// (*_templ.go, committed: building needs no generator; `make templ` after
// an edit, and TestTemplatesGenerated fails while they differ), with
// embedded CSS and no script at all, so they work offline and under a
// strict Content-Security-Policy. They use no reflection: html/template's
// reflect.Value.MethodByName made the linker keep every exported method of
// every type in the binary. Each page is
// bounded: the timeline is paged by commit (gitstore.LogBefore), cold
// memory by lines, search by matches.
//
// It ranks just below cmd: it reads Dream (dream), the memory repository
// (gitstore), the history (history), the prompt's budget (gateway) and the
// recall index through small interfaces cmd fills, and is imported by cmd
// alone.
package web

// Package eval holds the pure parts of `dreamgate eval`, the command that
// measures how well the assistant remembers on a given model: the scenario
// format (parsing and validation, with errors that name the file, the
// scenario and the field), the checks run on the memory files and on the
// answers to questions, the scores, the spread over repeated runs, and the
// report as a table or JSON. The scenarios shipped with dreamgate are
// embedded (Builtin).
//
// Playing a scenario through the real pipeline (gateway, consolidator,
// Dream) is not done here: cmd/dreamgate implements Player. This package
// imports nothing of ours, so it never reaches into the gateway.
package eval

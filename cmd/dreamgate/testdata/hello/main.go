// Command hello is the floor BenchmarkHelp measures `dreamgate --help`
// against: a Go program that starts, prints a few lines and exits.
package main

import "os"

func main() {
	_, _ = os.Stdout.WriteString("Usage: hello\n")
}

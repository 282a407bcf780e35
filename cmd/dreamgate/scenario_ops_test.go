package main

import (
	"bufio"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// metric NAME FAMILY OP VALUE
//
// Reads gateway NAME's /metrics and compares the sum of FAMILY's series
// with VALUE (OP: ==, >=, <=).
func cmdScenarioMetric(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: metric NAME FAMILY ==|>=|<= VALUE")
	}
	g := scenarioOf(ts).gateway(ts, args[0])
	want, err := strconv.ParseFloat(args[3], 64)
	ts.Check(err)
	resp, err := http.Get(g.health + "/metrics")
	ts.Check(err)
	defer resp.Body.Close()
	sum, found := 0.0, false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		name, rest, _ := strings.Cut(line, " ")
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name, rest = line[:i], line[strings.LastIndexByte(line, ' ')+1:]
		}
		if name != args[1] {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		ts.Check(err)
		sum, found = sum+v, true
	}
	ts.Check(sc.Err())
	if !found {
		ts.Fatalf("%s serves no %s", args[0], args[1])
	}
	ok := map[string]bool{"==": sum == want, ">=": sum >= want, "<=": sum <= want}[args[2]]
	if !ok {
		ts.Fatalf("%s's %s is %g, want %s %g", args[0], args[1], sum, args[2], want)
	}
	ts.Logf("%s's %s is %g", args[0], args[1], sum)
}

// healthz NAME
//
// Writes gateway NAME's /healthz to stdout.
func cmdScenarioHealthz(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: healthz NAME")
	}
	g := scenarioOf(ts).gateway(ts, args[0])
	resp, err := http.Get(g.health + "/healthz")
	ts.Check(err)
	defer resp.Body.Close()
	_, err = io.Copy(ts.Stdout(), resp.Body)
	ts.Check(err)
}

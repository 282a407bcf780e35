package metrics

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A strict reader of the Prometheus text format (0.0.4), stricter than
// Prometheus itself where this package has a rule of its own: a test
// fails on anything the writer must never produce.

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	types      = map[string]bool{"counter": true, "gauge": true, "histogram": true, "summary": true, "untyped": true}
)

// expoFamily is one family as read.
type expoFamily struct {
	name, typ, help string
	hasHelp         bool
	samples         []expoSample
}

// expoSample is one sample line.
type expoSample struct {
	name   string            // with its suffix (_bucket, _sum, _count)
	labels map[string]string // unescaped values
	order  []string          // label names as written
	key    string            // the line up to the value, as written
	value  float64
}

// exposition is a whole scrape as read.
type exposition struct {
	families []*expoFamily
	values   map[string]float64 // sample key -> value
}

// parseExposition reads r strictly: every line is a HELP, a TYPE or a
// sample; HELP then TYPE open a family, once per name, in ascending name
// order; every sample belongs to the family opened last and has a name
// that family's type allows; label values are escaped; no series twice.
// Then each histogram and summary is checked for its shape.
func parseExposition(r io.Reader) (*exposition, error) {
	e := &exposition{values: map[string]float64{}}
	seen := map[string]bool{}
	var cur *expoFamily
	var pendingHelp *expoFamily
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		fail := func(format string, a ...any) error {
			return fmt.Errorf("line %d %q: %s", n, line, fmt.Sprintf(format, a...))
		}
		switch {
		case line == "":
			return nil, fail("empty line")
		case strings.HasPrefix(line, "# HELP "):
			name, help, ok := strings.Cut(line[len("# HELP "):], " ")
			if !ok || !metricName.MatchString(name) {
				return nil, fail("bad HELP")
			}
			if strings.ContainsAny(help, "\\") && !validHelpEscapes(help) {
				return nil, fail("bad escape in HELP")
			}
			if seen[name] {
				return nil, fail("family %s again", name)
			}
			pendingHelp = &expoFamily{name: name, help: help, hasHelp: true}
		case strings.HasPrefix(line, "# TYPE "):
			f := strings.Split(line[len("# TYPE "):], " ")
			if len(f) != 2 || !metricName.MatchString(f[0]) || !types[f[1]] {
				return nil, fail("bad TYPE")
			}
			if seen[f[0]] {
				return nil, fail("family %s typed twice", f[0])
			}
			if cur != nil && f[0] <= cur.name {
				return nil, fail("family %s after %s: not in name order", f[0], cur.name)
			}
			switch {
			case pendingHelp == nil:
				cur = &expoFamily{name: f[0]}
			case pendingHelp.name != f[0]:
				return nil, fail("HELP of %s, then TYPE of %s", pendingHelp.name, f[0])
			default:
				cur = pendingHelp
			}
			pendingHelp = nil
			cur.typ = f[1]
			seen[cur.name] = true
			e.families = append(e.families, cur)
		case strings.HasPrefix(line, "#"):
			return nil, fail("a comment this writer never writes")
		default:
			if pendingHelp != nil {
				return nil, fail("HELP of %s without its TYPE", pendingHelp.name)
			}
			s, err := parseSample(line)
			if err != nil {
				return nil, fail("%v", err)
			}
			if cur == nil || !sampleNameFits(cur, s.name) {
				return nil, fail("sample of no family opened (the last is %v)", cur)
			}
			if _, dup := e.values[s.key]; dup {
				return nil, fail("series written twice")
			}
			e.values[s.key] = s.value
			cur.samples = append(cur.samples, s)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if pendingHelp != nil {
		return nil, fmt.Errorf("HELP of %s without its TYPE at the end", pendingHelp.name)
	}
	for _, f := range e.families {
		if len(f.samples) == 0 {
			return nil, fmt.Errorf("family %s has no sample", f.name)
		}
		if err := checkShape(f); err != nil {
			return nil, fmt.Errorf("family %s: %w", f.name, err)
		}
	}
	return e, nil
}

func validHelpEscapes(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			if i+1 >= len(s) || (s[i+1] != '\\' && s[i+1] != 'n') {
				return false
			}
			i++
		}
	}
	return true
}

// sampleNameFits says whether a sample named name belongs to f.
func sampleNameFits(f *expoFamily, name string) bool {
	switch f.typ {
	case "histogram":
		return name == f.name+"_bucket" || name == f.name+"_sum" || name == f.name+"_count"
	case "summary":
		return name == f.name || name == f.name+"_sum" || name == f.name+"_count"
	}
	return name == f.name
}

// parseSample reads `name{l="v",…} value`: one space before the value,
// no timestamp, no trailing comma, only the three escapes.
func parseSample(line string) (expoSample, error) {
	s := expoSample{labels: map[string]string{}}
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return s, fmt.Errorf("no value")
	}
	s.name = line[:i]
	if !metricName.MatchString(s.name) {
		return s, fmt.Errorf("bad name %q", s.name)
	}
	if line[i] == '{' {
		i++
		for {
			eq := strings.IndexByte(line[i:], '=')
			if eq < 0 {
				return s, fmt.Errorf("label without =")
			}
			ln := line[i : i+eq]
			if !labelName.MatchString(ln) {
				return s, fmt.Errorf("bad label name %q", ln)
			}
			if _, dup := s.labels[ln]; dup {
				return s, fmt.Errorf("label %s twice", ln)
			}
			i += eq + 1
			if i >= len(line) || line[i] != '"' {
				return s, fmt.Errorf("label value not quoted")
			}
			i++
			var v strings.Builder
			for {
				if i >= len(line) {
					return s, fmt.Errorf("label value not closed")
				}
				c := line[i]
				if c == '"' {
					i++
					break
				}
				if c == '\\' {
					if i+1 >= len(line) {
						return s, fmt.Errorf("escape at the end")
					}
					switch line[i+1] {
					case '\\':
						v.WriteByte('\\')
					case '"':
						v.WriteByte('"')
					case 'n':
						v.WriteByte('\n')
					default:
						return s, fmt.Errorf("bad escape \\%c", line[i+1])
					}
					i += 2
					continue
				}
				v.WriteByte(c)
				i++
			}
			s.labels[ln] = v.String()
			s.order = append(s.order, ln)
			if i >= len(line) {
				return s, fmt.Errorf("labels not closed")
			}
			if line[i] == '}' {
				i++
				break
			}
			if line[i] != ',' {
				return s, fmt.Errorf("want , or } after a label")
			}
			i++
		}
	}
	if i >= len(line) || line[i] != ' ' {
		return s, fmt.Errorf("want one space before the value")
	}
	s.key = line[:i]
	val := line[i+1:]
	if strings.ContainsAny(val, " \t") {
		return s, fmt.Errorf("more than a value (a timestamp?)")
	}
	v, err := strconv.ParseFloat(val, 64)
	if err != nil {
		return s, fmt.Errorf("bad value: %v", err)
	}
	// ParseFloat takes spellings the format does not ("inf", "Infinity").
	if (math.IsInf(v, 0) || math.IsNaN(v)) && val != "+Inf" && val != "-Inf" && val != "NaN" {
		return s, fmt.Errorf("value %q not spelt +Inf, -Inf or NaN", val)
	}
	s.value = v
	return s, nil
}

// checkShape checks that every series of f has the same label names
// (besides le and quantile); and for a histogram, that each series has
// buckets in ascending le order, cumulative, the last +Inf and equal to
// _count, then _sum and _count; for a summary, quantiles then _sum and
// _count.
func checkShape(f *expoFamily) error {
	var labelSet []string
	for _, s := range f.samples {
		names := slices.DeleteFunc(slices.Clone(s.order), func(n string) bool { return n == "le" || n == "quantile" })
		slices.Sort(names)
		if labelSet == nil {
			labelSet = append([]string{}, names...)
		} else if !slices.Equal(labelSet, names) {
			return fmt.Errorf("labels %v beside %v", names, labelSet)
		}
	}
	switch f.typ {
	case "histogram":
		return checkHistogram(f)
	case "summary":
		return checkSummary(f)
	}
	for _, s := range f.samples {
		if f.typ == "counter" && (s.value < 0 || math.IsNaN(s.value)) {
			return fmt.Errorf("counter %s = %v", s.key, s.value)
		}
	}
	return nil
}

// seriesOf is a sample's labels other than le and quantile, as one key.
func seriesOf(s expoSample) string {
	var b strings.Builder
	for _, n := range s.order {
		if n != "le" && n != "quantile" {
			fmt.Fprintf(&b, "%s=%q,", n, s.labels[n])
		}
	}
	return b.String()
}

func checkHistogram(f *expoFamily) error {
	type state struct {
		lastLE, lastCount float64
		inf, sum, count   bool
		infValue          float64
	}
	series := map[string]*state{}
	for _, s := range f.samples {
		k := seriesOf(s)
		st := series[k]
		if st == nil {
			st = &state{lastLE: math.Inf(-1)}
			series[k] = st
		}
		switch s.name {
		case f.name + "_bucket":
			le, ok := s.labels["le"]
			if !ok {
				return fmt.Errorf("%s has no le", s.key)
			}
			if st.inf {
				return fmt.Errorf("%s after +Inf", s.key)
			}
			bound, err := strconv.ParseFloat(le, 64)
			if err != nil || (math.IsInf(bound, 1) && le != "+Inf") {
				return fmt.Errorf("bad le in %s", s.key)
			}
			if bound <= st.lastLE {
				return fmt.Errorf("%s: le not ascending", s.key)
			}
			if s.value < st.lastCount || s.value != math.Trunc(s.value) {
				return fmt.Errorf("%s = %v: buckets not cumulative (the one below is %v)", s.key, s.value, st.lastCount)
			}
			st.lastLE, st.lastCount = bound, s.value
			if math.IsInf(bound, 1) {
				st.inf, st.infValue = true, s.value
			}
		case f.name + "_sum":
			if !st.inf || st.sum || st.count {
				return fmt.Errorf("%s out of place", s.key)
			}
			st.sum = true
		case f.name + "_count":
			if !st.sum || st.count {
				return fmt.Errorf("%s out of place", s.key)
			}
			if s.value != st.infValue {
				return fmt.Errorf("%s = %v, +Inf bucket %v", s.key, s.value, st.infValue)
			}
			st.count = true
		}
		if s.name != f.name+"_bucket" {
			if _, ok := s.labels["le"]; ok {
				return fmt.Errorf("%s has le", s.key)
			}
		}
	}
	for k, st := range series {
		if !st.inf || !st.sum || !st.count {
			return fmt.Errorf("series {%s}: +Inf %v, _sum %v, _count %v", k, st.inf, st.sum, st.count)
		}
	}
	return nil
}

func checkSummary(f *expoFamily) error {
	sum, count := map[string]bool{}, map[string]bool{}
	for _, s := range f.samples {
		k := seriesOf(s)
		switch s.name {
		case f.name:
			q, ok := s.labels["quantile"]
			if v, err := strconv.ParseFloat(q, 64); !ok || err != nil || v < 0 || v > 1 {
				return fmt.Errorf("%s: bad quantile", s.key)
			}
			if sum[k] {
				return fmt.Errorf("%s after _sum", s.key)
			}
		case f.name + "_sum":
			sum[k] = true
		case f.name + "_count":
			if !sum[k] {
				return fmt.Errorf("%s before _sum", s.key)
			}
			count[k] = true
		}
	}
	for k := range sum {
		if !count[k] {
			return fmt.Errorf("series {%s} has no _count", k)
		}
	}
	return nil
}

package metrics

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// The Prometheus text exposition format (version 0.0.4), as far as this
// package needs it: a "# HELP" and a "# TYPE" line per family, then its
// samples, `name{label="value",…} value` one a line.

// appendHeader appends a family's HELP and TYPE lines. help is one of our
// constants, written without the backslash and newline the format would
// want escaped.
func appendHeader(b []byte, name, typ, help string) []byte {
	b = append(b, "# HELP "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, help...)
	b = append(b, "\n# TYPE "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, typ...)
	return append(b, '\n')
}

// appendSample appends one sample line: name+suffix, the labels of pairs
// whose name is not empty, and v.
func appendSample(b []byte, name, suffix string, pairs [2][2]string, v float64) []byte {
	b = appendName(b, name, suffix, pairs, "", "")
	b = append(b, ' ')
	b = appendValue(b, v)
	return append(b, '\n')
}

// appendName appends name+suffix and its labels: those of pairs whose name
// is not empty, then extra=extraValue if extra is not empty.
func appendName(b []byte, name, suffix string, pairs [2][2]string, extra, extraValue string) []byte {
	b = append(b, name...)
	b = append(b, suffix...)
	sep := byte('{')
	for _, p := range pairs {
		if p[0] == "" {
			continue
		}
		b = append(b, sep)
		b = appendLabel(b, p[0], p[1])
		sep = ','
	}
	if extra != "" {
		b = append(b, sep)
		b = appendLabel(b, extra, extraValue)
		sep = ','
	}
	if sep == ',' {
		b = append(b, '}')
	}
	return b
}

// appendLabel appends name="value", escaping the value as the format
// wants (backslash, double quote, newline); bytes that are not UTF-8
// become U+FFFD, as the format is UTF-8.
func appendLabel(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, `="`...)
	for _, r := range value {
		switch r {
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		case '\n':
			b = append(b, `\n`...)
		default:
			b = utf8.AppendRune(b, r)
		}
	}
	return append(b, '"')
}

// appendHistogram appends one histogram series: a cumulative _bucket per
// bound and +Inf, then _sum and _count. counts are per bucket, not
// cumulative, with one more than bounds (the +Inf bucket).
func appendHistogram(b []byte, name string, pairs [2][2]string, bounds []float64, counts []uint64, sum float64) []byte {
	var cum uint64
	var le []byte
	for i, n := range counts {
		cum += n
		le = le[:0]
		if i < len(bounds) {
			le = appendValue(le, bounds[i])
		} else {
			le = append(le, "+Inf"...)
		}
		b = appendName(b, name, "_bucket", pairs, "le", string(le))
		b = append(b, ' ')
		b = strconv.AppendUint(b, cum, 10)
		b = append(b, '\n')
	}
	b = appendSample(b, name, "_sum", pairs, sum)
	b = appendName(b, name, "_count", pairs, "", "")
	b = append(b, ' ')
	b = strconv.AppendUint(b, cum, 10)
	return append(b, '\n')
}

// appendValue appends v as the format wants it: integers in full (a byte
// count reads better as 8527872 than as 8.527872e+06), anything else in
// the shortest form that reads back the same, without an exponent from a
// million up (a start time reads 1795519746.08), and +Inf, -Inf, NaN.
func appendValue(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case v == math.Trunc(v) && math.Abs(v) < 1<<53:
		return strconv.AppendInt(b, int64(v), 10)
	case math.Abs(v) >= 1e6 && math.Abs(v) < 1e21:
		return strconv.AppendFloat(b, v, 'f', -1, 64)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

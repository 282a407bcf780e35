// Command vocabgen writes internal/tokens' cl100k_base.tokens from the
// cl100k_base vocabulary of github.com/tiktoken-go/tokenizer, so that the
// product counts tokens without linking that library's vocabulary (a Go map
// literal of 100,256 strings: about 3.5 MB of binary, and 6.8 MB of memory
// once built). Run it through go generate in internal/tokens after the
// library changes; the package's tests fail while the file is stale.
//
// The file holds the length of every token in rank order (ranks are dense,
// from 0), one byte each, then their bytes in the same order.
package main

import (
	"bytes"
	"fmt"
	"os"

	"github.com/tiktoken-go/tokenizer/codec"
)

// ranks is cl100k_base's number of ordinary tokens; the special tokens
// after them never come out of a count.
const ranks = 100256

func main() {
	out := "cl100k_base.tokens"
	if len(os.Args) > 1 {
		out = os.Args[1]
	}
	data, err := vocabulary()
	if err == nil {
		err = os.WriteFile(out, data, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vocabgen:", err)
		os.Exit(1)
	}
}

func vocabulary() ([]byte, error) {
	c := codec.NewCl100kBase()
	var lengths, buf bytes.Buffer
	for r := range uint(ranks) {
		tok, err := c.Decode([]uint{r})
		if err != nil {
			return nil, fmt.Errorf("rank %d: %w", r, err)
		}
		if len(tok) == 0 || len(tok) > 255 {
			return nil, fmt.Errorf("rank %d: a token of %d bytes does not fit one byte of length", r, len(tok))
		}
		lengths.WriteByte(byte(len(tok)))
		buf.WriteString(tok)
	}
	if _, err := c.Decode([]uint{ranks}); err == nil {
		return nil, fmt.Errorf("a token past rank %d: the vocabulary grew", ranks-1)
	}
	return append(lengths.Bytes(), buf.Bytes()...), nil
}

package workspace

import "testing"

func TestDefaultHotTokens(t *testing.T) {
	for _, c := range []struct{ window, want int }{
		{2048, 1000}, {8192, 1024}, {32000, 4000}, {128000, 12000}, {1000000, 12000},
	} {
		if got := DefaultHotTokens(c.window); got != c.want {
			t.Errorf("DefaultHotTokens(%d) = %d, want %d", c.window, got, c.want)
		}
	}
}

package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDelayDoublesToTheCap(t *testing.T) {
	want := []time.Duration{1, 2, 4, 8, 16, 30, 30, 30}
	for n, w := range want {
		if got := Delay(n, time.Second, 30*time.Second); got != w*time.Second {
			t.Errorf("Delay(%d) = %v, want %v", n, got, w*time.Second)
		}
	}
	if got := Delay(1000, time.Second, 30*time.Second); got != 30*time.Second {
		t.Errorf("Delay(1000) = %v, want the cap", got)
	}
	if got := Delay(3, time.Minute, 30*time.Second); got != 30*time.Second {
		t.Errorf("Delay with base over the cap = %v, want the cap", got)
	}
}

func TestJitterTakesAtMostAQuarter(t *testing.T) {
	for _, d := range []time.Duration{0, 3, time.Second, 30 * time.Second} {
		for range 100 {
			if got := Jitter(d); got > d || got < d-d/4 {
				t.Fatalf("Jitter(%v) = %v, want within [%v, %v]", d, got, d-d/4, d)
			}
		}
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	// An hour: only the done context can end it.
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep on a done context = %v, want context.Canceled", err)
	}
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep(0) on a done context = %v, want context.Canceled", err)
	}
	if err := Sleep(t.Context(), 0); err != nil {
		t.Errorf("Sleep(0) = %v", err)
	}
	if err := Sleep(t.Context(), time.Nanosecond); err != nil {
		t.Errorf("Sleep(1ns) = %v", err)
	}
}

package dream

import (
	"context"
	"errors"
	"time"

	"github.com/dreamgate/dreamgate/internal/backoff"
)

// Pause runs f while holding the Dream lock, so that no Dream, restore,
// move or retention pass — of this process or another — changes the memory
// files, the memory repository, the ledger or the archive's compaction
// meanwhile: a backup copies them as one moment. Unlike a Dream, which is
// refused at once, it waits for the one that runs, trying again until ctx
// ends; waiting says so through waiting (once).
func (l *Ledger) Pause(ctx context.Context, waiting func(since time.Time), f func() error) error {
	said := false
	for attempt := 0; ; attempt++ {
		release, err := l.lock.acquire(time.Now())
		var busy *BusyError
		if errors.As(err, &busy) {
			if !said && waiting != nil {
				waiting(busy.Since)
				said = true
			}
			if err := backoff.Sleep(ctx, backoff.Jitter(backoff.Delay(attempt, 100*time.Millisecond, 5*time.Second))); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		defer release()
		return f()
	}
}

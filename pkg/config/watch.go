package config

import (
	"bytes"
	"context"
	"os"
	"time"
)

// Watch polls file every interval and sends on the returned channel when
// its content changed, until ctx ends. Polling the content needs no
// dependency and also sees edits through bind mounts and editors that
// replace the file, which inotify watches of the old inode miss. A file
// that is briefly missing while an editor replaces it is read again on the
// next tick. The channel holds one pending change, so a slow receiver
// never blocks the watcher and never misses the last edit.
func Watch(ctx context.Context, file string, interval time.Duration) <-chan struct{} {
	changed := make(chan struct{}, 1)
	last, _ := os.ReadFile(file)
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			data, err := os.ReadFile(file)
			if err != nil || bytes.Equal(data, last) {
				continue
			}
			last = data
			select {
			case changed <- struct{}{}:
			default:
			}
		}
	}()
	return changed
}

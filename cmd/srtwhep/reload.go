package main

import (
	"context"
	"crypto/sha256"
	"maps"
	"os"
	"os/signal"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/srtwhep/srtwhep/pkg/config"
)

// reloader watches the config file. Polling the file's size, mtime and hash
// needs no dependency and also sees edits through bind mounts and editors
// that replace the file, which inotify watches of the old inode miss.
type reloader struct {
	configFile  string
	reloadEvery time.Duration
	stamp       fileStamp // last file state seen; only the watcher touches it
}

type fileStamp struct {
	size  int64
	mtime time.Time
	hash  [sha256.Size]byte
}

// defaultReloadEvery keeps a saved edit live within about a second.
const defaultReloadEvery = time.Second

func (s *server) initReloader(file string) {
	s.configFile = file
	s.reloadEvery = defaultReloadEvery
	if file != "" {
		s.stamp, _ = stampFile(file, fileStamp{})
	}
}

// stampFile stats file and hashes it only when size or mtime moved.
func stampFile(file string, prev fileStamp) (fileStamp, error) {
	fi, err := os.Stat(file)
	if err != nil {
		return prev, err
	}
	st := fileStamp{size: fi.Size(), mtime: fi.ModTime(), hash: prev.hash}
	if st.size == prev.size && st.mtime.Equal(prev.mtime) {
		return st, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return prev, err
	}
	st.hash = sha256.Sum256(data)
	return st, nil
}

// watchConfig reloads on SIGHUP and when the config file's content changes,
// until ctx ends.
func (s *server) watchConfig(ctx context.Context) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var tick <-chan time.Time
	if s.configFile != "" {
		t := time.NewTicker(s.reloadEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-hup:
			s.stamp, _ = stampFile(s.configFile, s.stamp)
			s.reload("SIGHUP")
		case <-tick:
			st, err := stampFile(s.configFile, s.stamp)
			if err != nil || st.hash == s.stamp.hash {
				// A file that is briefly missing while an editor replaces
				// it is read again on the next tick.
				s.stamp = st
				continue
			}
			s.stamp = st
			s.reload("file changed")
		}
	}
}

// liveKeys may change without a restart: everything that is read through
// config() when a publisher or viewer arrives. Other keys configure
// listeners and components at start-up.
var liveKeys = []string{"srt.passphrase", "readers.maxTotal", "api", "authHook", "pathDefaults", "paths"}

func isLive(key string) bool {
	for _, k := range liveKeys {
		if key == k || strings.HasPrefix(key, k+".") || strings.HasPrefix(key, k+"[") {
			return true
		}
	}
	return false
}

// reload loads the file again; an invalid file changes nothing. Keys that
// need a restart keep their running values, so config() always describes
// what the server actually does.
func (s *server) reload(trigger string) {
	next, err := config.Load(s.configFile)
	if err != nil {
		s.log.Error("config reload refused; still running on the previous config", "trigger", trigger, "err", err)
		return
	}
	cur := s.config()
	var live, restart []string
	for _, k := range diffConfig(cur, next) {
		if isLive(k.key) {
			live = append(live, k.key)
			continue
		}
		restart = append(restart, k.key)
		dst := reflect.ValueOf(next).Elem().FieldByIndex(k.index)
		dst.Set(reflect.ValueOf(cur).Elem().FieldByIndex(k.index))
	}
	if len(restart) > 0 {
		s.log.Warn("restart needed for: "+strings.Join(restart, ", "), "trigger", trigger,
			"hint", "these keys keep their running values until srtwhep restarts")
	}
	s.applyHook(next.AuthHook)
	s.conf.Store(next)
	changed := strings.Join(live, ", ")
	if changed == "" {
		changed = "nothing"
	}
	s.log.Info("config reloaded", "trigger", trigger, "changed", changed)
}

type configKey struct {
	key   string
	index []int // field index in config.Config; nil for paths[NAME]
}

// diffConfig lists the keys whose values differ, as dotted YAML keys
// (paths[NAME] per path), in schema order.
func diffConfig(a, b *config.Config) []configKey {
	var out []configKey
	av, bv := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	var walk func(t reflect.Type, prefix string, index []int)
	walk = func(t reflect.Type, prefix string, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || name == "" {
				continue
			}
			key := name
			if prefix != "" {
				key = prefix + "." + name
			}
			idx := append(slices.Clone(index), i)
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type, key, idx)
				continue
			}
			if f.Type == reflect.TypeFor[map[string]config.Path]() {
				out = append(out, diffPaths(a.Paths, b.Paths)...)
				continue
			}
			if !reflect.DeepEqual(av.FieldByIndex(idx).Interface(), bv.FieldByIndex(idx).Interface()) {
				out = append(out, configKey{key: key, index: idx})
			}
		}
	}
	walk(av.Type(), "", nil)
	return out
}

func diffPaths(a, b map[string]config.Path) []configKey {
	names := map[string]bool{}
	for n := range a {
		names[n] = true
	}
	for n := range b {
		names[n] = true
	}
	var out []configKey
	for _, n := range slices.Sorted(maps.Keys(names)) {
		pa, oka := a[n]
		pb, okb := b[n]
		if oka != okb || !reflect.DeepEqual(pa, pb) {
			out = append(out, configKey{key: "paths[" + n + "]"})
		}
	}
	return out
}

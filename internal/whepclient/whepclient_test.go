package whepclient

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func testLogger(t *testing.T) *slog.Logger { return testkit.TestLogger(t, slog.LevelWarn) }

func TestReceivesClip(t *testing.T) {
	c := makeClip(t)
	for _, tc := range []struct {
		name   string
		decode bool
		nack   bool
	}{
		{"light", false, false},
		{"decode", true, false},
		{"decode+nack", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newWHEPServer(t, c, false)
			var mu sync.Mutex
			var aus []AccessUnit
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()

			sess, err := Dial(ctx, srv.endpoint(), Options{
				Decode: tc.decode,
				NACK:   tc.nack,
				OnAccessUnit: func(au AccessUnit) {
					mu.Lock()
					aus = append(aus, au)
					mu.Unlock()
				},
				BearerToken:   "s3cret",
				SettingEngine: testkit.LoopbackOnly,
				Logger:        testLogger(t),
			})
			if err != nil {
				t.Fatalf("Dial: %v", err)
			}
			closed := false
			defer func() {
				if !closed {
					_ = sess.Close()
				}
			}()
			if err := sess.WaitConnected(ctx); err != nil {
				t.Fatalf("WaitConnected: %v", err)
			}
			select {
			case <-srv.sent:
			case <-ctx.Done():
				t.Fatal("server never finished sending the clip")
			}
			want := uint64(len(c.aus))
			testkit.WaitFor(t, 10*time.Second, "all frames", func() bool { return sess.Stats().Frames >= want })

			st := sess.Stats()
			if st.Frames != want || st.SeqGaps != 0 || st.Reordered != 0 || st.Duplicates != 0 {
				t.Errorf("frames=%d gaps=%d reordered=%d dups=%d, want frames=%d and no loss",
					st.Frames, st.SeqGaps, st.Reordered, st.Duplicates, want)
			}
			if st.Keyframes != uint64(c.idrs) {
				t.Errorf("keyframes=%d, want %d", st.Keyframes, c.idrs)
			}
			if st.Packets <= want || st.Bytes <= st.Packets*12 {
				t.Errorf("packets=%d bytes=%d look wrong for %d frames", st.Packets, st.Bytes, want)
			}
			if st.ConnectedAt.IsZero() || st.FirstPacketAt.IsZero() || st.FirstIDRAt.IsZero() {
				t.Errorf("timestamps not set: %+v", st)
			}
			if st.FirstIDRAt.Before(st.FirstPacketAt) {
				t.Errorf("first IDR %v before first packet %v", st.FirstIDRAt, st.FirstPacketAt)
			}

			if tc.decode {
				if st.Width != 320 || st.Height != 240 {
					t.Errorf("size %dx%d, want 320x240", st.Width, st.Height)
				}
				if st.DecodedAUs != want || st.IDRs != uint64(c.idrs) || st.BrokenAUs != 0 {
					t.Errorf("decoded=%d idrs=%d broken=%d, want %d, %d, 0", st.DecodedAUs, st.IDRs, st.BrokenAUs, want, c.idrs)
				}
				mu.Lock()
				got := aus
				mu.Unlock()
				if len(got) != len(c.aus) {
					t.Fatalf("got %d access units, want %d", len(got), len(c.aus))
				}
				if !got[0].IDR {
					t.Error("first access unit is not an IDR")
				}
				for i, au := range got {
					if !equalNALUs(au.NALUs, c.aus[i]) {
						t.Fatalf("access unit %d differs from the clip", i)
					}
					if i == 0 {
						continue
					}
					// WriteSample's 1/30 s duration rounds to 2999 or 3000 ticks.
					d := au.RTPTimestamp - got[i-1].RTPTimestamp
					if d < 2999 || d > 3000 || au.FirstSeq != got[i-1].LastSeq+1 {
						t.Fatalf("access unit %d: ts %d seq %d after ts %d seq %d", i,
							au.RTPTimestamp, au.FirstSeq, got[i-1].RTPTimestamp, got[i-1].LastSeq)
					}
				}
			} else if st.DecodedAUs != 0 || st.Width != 0 || len(aus) != 0 {
				t.Errorf("light mode decoded: %+v", st)
			}

			if err := sess.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
			closed = true
			select {
			case <-sess.Done():
			default:
				t.Error("Done not closed after Close")
			}
			if !errors.Is(sess.Err(), ErrClosed) {
				t.Errorf("Err after Close = %v, want ErrClosed", sess.Err())
			}
			srv.mu.Lock()
			defer srv.mu.Unlock()
			if len(srv.deletes) != 1 || sess.SessionURL() != srv.srv.URL+"/live/cam1/session/"+srv.deletes[0] {
				t.Errorf("deletes=%v session URL %s", srv.deletes, sess.SessionURL())
			}
			for _, a := range srv.auth {
				if a != "Bearer s3cret" {
					t.Errorf("Authorization %q, want Bearer s3cret", a)
				}
			}
			if len(srv.auth) != 2 {
				t.Errorf("server saw %d requests, want POST and DELETE", len(srv.auth))
			}
		})
	}
}

func TestServerHangUpEndsSession(t *testing.T) {
	srv := newWHEPServer(t, makeClip(t), true)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sess, err := Dial(ctx, srv.endpoint(), Options{SettingEngine: testkit.LoopbackOnly, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	select {
	case <-sess.Done():
	case <-ctx.Done():
		_ = sess.Close()
		t.Fatal("session did not end after the server closed its peer")
	}
	t.Logf("session ended: %v", sess.Err())
	if err := sess.Err(); err == nil || errors.Is(err, ErrClosed) {
		t.Errorf("Err = %v, want the remote end's reason", err)
	}
	// The server already forgot the session, so DELETE reports 404.
	var he *HTTPError
	if err := sess.Close(); !errors.As(err, &he) || he.StatusCode != http.StatusNotFound {
		t.Errorf("Close = %v, want HTTPError 404", err)
	}
}

func TestHTTPErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/full/whep":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "path full: 2 readers max\n")
		case "/nolocation/whep":
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, "v=0\r\n")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	opt := Options{SettingEngine: testkit.LoopbackOnly, HTTPClient: srv.Client()}

	_, err := Dial(ctx, srv.URL+"/full/whep", opt)
	var he *HTTPError
	if !errors.As(err, &he) {
		t.Fatalf("Dial = %v, want *HTTPError", err)
	}
	if he.StatusCode != 503 || he.Body != "path full: 2 readers max" || he.RetryAfter != "7" {
		t.Errorf("HTTPError = %+v", he)
	}

	_, err = Dial(ctx, srv.URL+"/missing/whep", opt)
	if !errors.As(err, &he) || he.StatusCode != 404 || he.RetryAfter != "" {
		t.Errorf("Dial unknown path = %v, want HTTPError 404", err)
	}

	_, err = Dial(ctx, srv.URL+"/nolocation/whep", opt)
	if err == nil || errors.As(err, &he) {
		t.Errorf("Dial without Location = %v, want a non-HTTP error", err)
	}
	srv.Client().CloseIdleConnections()
}

package srt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/haivision/srtgo"

	"github.com/srtwhep/srtwhep/pkg/hub"
)

func TestRejections(t *testing.T) {
	var srvp atomic.Pointer[Server]
	serve, sessions := recordingServe(&srvp, 4096, nil)
	r := startServer(t, Config{
		Serve: serve,
		Admit: func(req Request) error {
			switch req.StreamID.Path {
			case "live/busy":
				return fmt.Errorf("admit live/busy: %w", hub.ErrPathBusy)
			case "live/auth":
				if req.StreamID.User != "alice" || req.StreamID.Pass != "pw" {
					return RejectError{Reason: srtgo.RejectionReasonUnauthorized, Msg: "wrong user or password for live/auth"}
				}
			case "live/denied":
				return errors.New("publishing to live/denied is not allowed")
			}
			return nil
		},
	})
	srv := r.srv
	srvp.Store(srv)

	cases := []struct {
		name, streamid string
		reason         int
		path           string // the path attribute of the WARN line
		logHas         string
		syntaxHint     bool // the log line repeats the streamid syntax
	}{
		{"no streamid", "", srtgo.RejectionReasonBadRequest, "", "sent no streamid", true},
		{"garbage", "hello", srtgo.RejectionReasonBadRequest, "", `unknown action "hello"`, true},
		{"bad path", "publish:a//b", srtgo.RejectionReasonBadRequest, "", "empty segment", true},
		{"bad path with password", "publish:a//b:alice:hunter2", srtgo.RejectionReasonBadRequest, "", "empty segment", true},
		{"read mode", "read:live/t", srtgo.RejectionReasonBadMode, "live/t", "use WHEP at http://HOST:8889/PATH/whep", true},
		{"keyed request mode", "#!::r=live/t", srtgo.RejectionReasonBadMode, "live/t", `mode "request"`, true},
		{"busy", "publish:live/busy", RejectionReasonConflict, "live/busy", hub.ErrPathBusy.Error(), false},
		{"unauthorized", "#!::r=live/auth,m=publish,u=alice,s=nope", srtgo.RejectionReasonUnauthorized, "live/auth", "wrong user or password", false},
		{"forbidden", "publish:live/denied", srtgo.RejectionReasonForbidden, "live/denied", "not allowed", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sock, err := dialCaller(srv.Addr(), DialConfig{StreamID: tc.streamid})
			if err == nil {
				closeCaller(sock)
				t.Fatalf("connect with streamid %q succeeded, want a rejection", tc.streamid)
			}
			var rej *DialError
			if !errors.As(err, &rej) || !errors.Is(err, srtgo.EConnRej) {
				t.Fatalf("connect error %v, want a rejected connection", err)
			}
			if rej.Reason != tc.reason {
				t.Fatalf("caller saw reject reason %d, want %d (%s)", rej.Reason, tc.reason, reasonName(tc.reason))
			}
			line := r.log.wait(t, 5*time.Second, "rejection of "+tc.streamid, func(l logLine) bool {
				return l.msg == "srt publisher rejected" && l.attrs["streamid"] == redactStreamID(tc.streamid)
			})
			if line.level != slog.LevelWarn || line.attrs["path"] != tc.path ||
				line.attrs["reason"] != reasonName(tc.reason) || !strings.Contains(line.attrs["err"], tc.logHas) ||
				(line.attrs["expected"] == streamIDSyntax) != tc.syntaxHint || !strings.HasPrefix(line.attrs["remote"], "127.0.0.1:") {
				t.Fatalf("rejection log %s %v", line.level, line.attrs)
			}
		})
	}
	if strings.Contains(r.log.dump(), "s=nope") || strings.Contains(r.log.dump(), "hunter2") {
		t.Fatal("a rejected password reached the log")
	}

	// The same server still admits a good publisher afterwards.
	sock, err := dialCaller(srv.Addr(), DialConfig{StreamID: "#!::u=alice,s=pw,m=publish,r=live/auth"})
	if err != nil {
		t.Fatalf("good credentials: %v", err)
	}
	if _, err := sock.Write(tsMessage(1)); err != nil {
		t.Fatalf("write: %v", err)
	}
	// Close only once the message arrived: a caller closed at once may
	// vanish before its shutdown reaches the server on a loaded machine,
	// leaving the server to wait out the peer idle timeout.
	waitBytes(t, srv, int64(len(tsMessage(1))))
	closeCaller(sock)
	s := waitSession(t, sessions, 10*time.Second)
	if s.id.Path != "live/auth" || s.id.User != "alice" || s.err != io.EOF {
		t.Fatalf("session %+v", s)
	}
}

func TestPassphrase(t *testing.T) {
	const pass = "correct horse battery"
	var srvp atomic.Pointer[Server]
	// 188-byte reads exercise the path that splits an SRT message.
	serve, sessions := recordingServe(&srvp, 188, nil)
	r := startServer(t, Config{
		Serve: serve,
		Passphrase: func(path string) string {
			if path == "live/secret" {
				return pass
			}
			return ""
		},
		PBKeyLen: 16,
	})
	srv := r.srv
	srvp.Store(srv)

	for _, tc := range []struct {
		name, pass string
		path       string
		reason     int
	}{
		{"wrong passphrase", "incorrect horse battery", "live/secret", rejBadSecret},
		{"missing passphrase", "", "live/secret", rejUnsecure},
		{"passphrase on an open path", pass, "live/open", rejUnsecure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock, err := dialCaller(srv.Addr(), DialConfig{StreamID: "publish:" + tc.path, Passphrase: tc.pass})
			if err == nil {
				closeCaller(sock)
				t.Fatal("handshake succeeded, want it to fail")
			}
			var rej *DialError
			if !errors.As(err, &rej) || rej.Reason != tc.reason {
				t.Fatalf("connect error %v, want reject reason %d", err, tc.reason)
			}
		})
	}

	sock, err := dialCaller(srv.Addr(), DialConfig{StreamID: "publish:live/secret", Passphrase: pass})
	if err != nil {
		t.Fatalf("correct passphrase: %v", err)
	}
	var want []byte
	for i := range 20 {
		m := tsMessage(byte(i))
		want = append(want, m...)
		if _, err := sock.Write(m); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	// Close only after the data was delivered, so the test checks content.
	waitBytes(t, srv, int64(len(want)))
	closeCaller(sock)
	s := waitSession(t, sessions, 10*time.Second)
	if s.err != io.EOF || s.n != int64(len(want)) || s.badSync != 0 || !bytes.Equal(s.head, want[:188]) {
		t.Fatalf("session read %d bytes (want %d), err %v, badSync %d", s.n, len(want), s.err, s.badSync)
	}
	if len(sessions) != 0 {
		t.Fatal("a failed handshake reached Serve")
	}
	// libsrt's own account of the failure is routed into the server's log.
	r.log.wait(t, 5*time.Second, "from libsrt about the bad passphrase", func(l logLine) bool {
		return l.attrs["component"] == "libsrt" && l.level == slog.LevelWarn && strings.Contains(l.msg, "Incorrect passphrase")
	})
}

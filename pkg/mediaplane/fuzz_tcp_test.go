package mediaplane

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"testing/iotest"
	"time"

	"github.com/srtwhep/srtwhep/internal/testkit"
)

// frame4571 frames each datagram as an ICE-TCP peer does (RFC 4571).
func frame4571(datagrams ...[]byte) []byte {
	var out []byte
	for _, d := range datagrams {
		out = binary.BigEndian.AppendUint16(out, uint16(len(d)))
		out = append(out, d...)
	}
	return out
}

// tcpSeeds are ICE-TCP streams: what a viewer sends (checks, DTLS,
// SRTCP) one frame at a time and several in one segment, a stream cut
// inside a frame, an empty frame, and a length no datagram has.
func tcpSeeds(t testing.TB) [][]byte {
	ds := demuxSeeds(t)
	seeds := [][]byte{frame4571(ds[0]), frame4571(ds...), frame4571(ds[4], ds[6])}
	cut := frame4571(ds[0], ds[1])
	seeds = append(seeds, cut[:len(cut)-5], frame4571(nil, ds[3]))
	huge := binary.BigEndian.AppendUint16(nil, maxDatagram+1)
	return append(seeds, append(huge, ds[0]...), frame4571(ds[0])[:1], nil)
}

// framesOf is the reference reading of an ICE-TCP stream: the complete
// frames before the stream ends or a length over maxDatagram (tooLarge)
// loses the framing.
func framesOf(stream []byte) (frames [][]byte, tooLarge bool) {
	for len(stream) >= 2 {
		n := int(binary.BigEndian.Uint16(stream))
		if n > maxDatagram {
			return frames, true
		}
		if len(stream)-2 < n {
			break
		}
		frames = append(frames, stream[2:2+n])
		stream = stream[2+n:]
	}
	return frames, false
}

// FuzzICETCPFraming reads arbitrary bytes as an ICE-TCP stream. readFrame,
// given them a byte per read as a worst-case segmentation, returns
// exactly the reference's frames, then io.EOF only at a frame boundary,
// io.ErrUnexpectedEOF inside one, errFrameTooLarge for a length no
// datagram has. Sent to a real server's ICE-TCP listener over loopback,
// the connection is dispatched exactly one datagram per frame (and one
// for a length too large) and then closed by the server.
func FuzzICETCPFraming(f *testing.F) {
	for _, s := range tcpSeeds(f) {
		f.Add(s)
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	srv, _ := newServer(f, func(c *Config) {
		c.TCPListener = ln
		c.Logger = slog.New(slog.DiscardHandler) // one line per connection adds up
	})
	buf := make([]byte, maxDatagram)
	f.Fuzz(func(t *testing.T, stream []byte) {
		want, tooLarge := framesOf(stream)
		r := iotest.OneByteReader(bytes.NewReader(stream))
		var hdr [2]byte
		var got [][]byte
		var end error
		for range len(stream)/2 + 1 { // bounded: a frame takes two bytes at least
			frame, err := readFrame(r, &hdr, buf)
			if err != nil {
				end = err
				break
			}
			got = append(got, bytes.Clone(frame))
		}
		if len(got) != len(want) {
			t.Fatalf("%d frames read, want %d (end %v)", len(got), len(want), end)
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("frame %d: % x, want % x", i, got[i], want[i])
			}
		}
		consumed := 2*len(want) + len(bytes.Join(want, nil))
		wantEnd := io.EOF
		switch {
		case tooLarge:
			wantEnd = errFrameTooLarge
		case consumed < len(stream):
			wantEnd = io.ErrUnexpectedEOF
		}
		if !errors.Is(end, wantEnd) {
			t.Fatalf("stream ended with %v, want %v", end, wantEnd)
		}

		before := srv.Stats().Datagrams
		c, err := net.Dial("tcp4", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// A write error is the server closing first (a frame too large):
		// what it read is checked below all the same.
		_, _ = c.Write(stream)
		_ = c.(*net.TCPConn).CloseWrite()
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
		_, err = io.Copy(io.Discard, c) // answers to checks, if any, then the close
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatal("the server kept the connection open after the stream ended")
		}
		dispatched := len(want)
		if tooLarge {
			dispatched++
		}
		if got := srv.Stats().Datagrams - before; got != uint64(dispatched) {
			t.Fatalf("%d datagrams dispatched, want %d", got, dispatched)
		}
	})
}

// TestFuzzCorpusICETCPFraming writes the seeds as the checked-in corpus
// when asked to (see testkit.SeedCorpus).
func TestFuzzCorpusICETCPFraming(t *testing.T) {
	testkit.SeedCorpusBytes(t, "FuzzICETCPFraming", tcpSeeds(t))
}

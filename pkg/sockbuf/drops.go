package sockbuf

import (
	"fmt"
	"syscall"

	"github.com/prometheus/procfs"
)

// Drops reads a UDP socket's kernel drop counter (datagrams that arrived
// to a full receive buffer, among others) from /proc/net/udp and udp6, by
// the socket's inode. It is cheap enough for a scrape: the files list one
// line per UDP socket and every viewer shares one.
type Drops struct {
	inode uint64
	fs    procfs.FS
}

// NewDrops prepares the reads for c.
func NewDrops(c syscall.Conn) (*Drops, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var st syscall.Stat_t
	var statErr error
	if err := rc.Control(func(fd uintptr) { statErr = syscall.Fstat(int(fd), &st) }); err != nil {
		return nil, err
	}
	if statErr != nil {
		return nil, fmt.Errorf("fstat: %w", statErr)
	}
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return nil, err
	}
	return &Drops{inode: st.Ino, fs: fs}, nil
}

// Count returns the socket's drops so far.
func (d *Drops) Count() (uint64, error) {
	for _, read := range []func() (procfs.NetUDP, error){d.fs.NetUDP, d.fs.NetUDP6} {
		lines, err := read()
		if err != nil {
			continue // no IPv6 in this kernel or namespace
		}
		for _, l := range lines {
			if l.Inode == d.inode && l.Drops != nil {
				return *l.Drops, nil
			}
		}
	}
	return 0, fmt.Errorf("socket inode %d not in /proc/net/udp or udp6", d.inode)
}

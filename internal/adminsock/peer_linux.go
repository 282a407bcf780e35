package adminsock

import (
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// peerChecked closes, unread, a connection from an account other than this
// process's own or root: the socket's mode already keeps them out, and this
// holds even where the state directory was opened to others.
func peerChecked(ln net.Listener) net.Listener {
	return &peerListener{Listener: ln, uid: uint32(os.Getuid())}
}

type peerListener struct {
	net.Listener
	uid uint32
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if uc, ok := c.(*net.UnixConn); ok && l.allowed(uc) {
			return c, nil
		}
		c.Close()
	}
}

func (l *peerListener) allowed(c *net.UnixConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return false
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || cerr != nil {
		return false
	}
	return cred.Uid == l.uid || cred.Uid == 0
}

//go:build linux && !purego

package netio

// The kernel's socket addresses (epoll and io_uring): resolving an
// address to a sockaddr, and converting sockaddrs back to net.Addr.

import (
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// inAddr is a TCP address kept inline (no allocation per connection);
// whether it is IPv4 is kept beside it (sock.kf, lsock.local4).
type inAddr struct {
	ip   [16]byte
	port uint16
}

func inAddrOf(sa unix.Sockaddr) (ia inAddr, v4 bool) {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		ia = inAddr{port: uint16(a.Port)}
		copy(ia.ip[:], a.Addr[:])
		return ia, true
	case *unix.SockaddrInet6:
		return inAddr{ip: a.Addr, port: uint16(a.Port)}, false
	}
	return inAddr{}, false
}

// tcp builds the address; v4 says it is an IPv4 one.
func (a *inAddr) tcp(v4 bool) net.Addr {
	if v4 {
		return &net.TCPAddr{IP: net.IPv4(a.ip[0], a.ip[1], a.ip[2], a.ip[3]).To4(), Port: int(a.port)}
	}
	ip := make(net.IP, net.IPv6len)
	copy(ip, a.ip[:])
	return &net.TCPAddr{IP: ip, Port: int(a.port)}
}

// sockaddrOf resolves address for network.
func sockaddrOf(op, network, address string, listen bool) (unix.Sockaddr, int, error) {
	if network == "unix" {
		return &unix.SockaddrUnix{Name: address}, unix.AF_UNIX, nil
	}
	ta, err := net.ResolveTCPAddr(network, address)
	if err != nil {
		return nil, 0, &net.OpError{Op: op, Net: network, Err: err}
	}
	ip := ta.IP
	switch {
	case network == "tcp4" || (ip != nil && ip.To4() != nil && network != "tcp6"):
		sa := &unix.SockaddrInet4{Port: ta.Port}
		if ip != nil {
			if ip.To4() == nil {
				return nil, 0, &net.OpError{Op: op, Net: network, Err: &net.AddrError{Err: "not an IPv4 address", Addr: address}}
			}
			copy(sa.Addr[:], ip.To4())
		}
		return sa, unix.AF_INET, nil
	case ip == nil && network == "tcp" && !listen:
		sa := &unix.SockaddrInet4{Port: ta.Port} // dial ":port": the local system
		copy(sa.Addr[:], net.IPv4(127, 0, 0, 1).To4())
		return sa, unix.AF_INET, nil
	case ip == nil && network == "tcp" && !ipv6ok():
		return &unix.SockaddrInet4{Port: ta.Port}, unix.AF_INET, nil
	default:
		sa := &unix.SockaddrInet6{Port: ta.Port}
		if ip != nil {
			copy(sa.Addr[:], ip.To16())
		}
		if ta.Zone != "" {
			if ifi, err := net.InterfaceByName(ta.Zone); err == nil {
				sa.ZoneId = uint32(ifi.Index)
			}
		}
		return sa, unix.AF_INET6, nil
	}
}

// ipv6ok reports whether the system can open IPv6 sockets.
var ipv6ok = sync.OnceValue(func() bool {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
})

func opErr(op, network, address, call string, err error) error {
	return &net.OpError{Op: op, Net: network, Addr: strAddr{network, address}, Err: os.NewSyscallError(call, err)}
}

type strAddr struct{ net, s string }

func (a strAddr) Network() string { return a.net }
func (a strAddr) String() string  { return a.s }

// netAddr converts a socket address.
func netAddr(network string, sa unix.Sockaddr) net.Addr {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IPv4(a.Addr[0], a.Addr[1], a.Addr[2], a.Addr[3]).To4(), Port: a.Port}
	case *unix.SockaddrInet6:
		ip := make(net.IP, net.IPv6len)
		copy(ip, a.Addr[:])
		zone := ""
		if a.ZoneId != 0 {
			if ifi, err := net.InterfaceByIndex(int(a.ZoneId)); err == nil {
				zone = ifi.Name
			}
		}
		return &net.TCPAddr{IP: ip, Port: a.Port, Zone: zone}
	case *unix.SockaddrUnix:
		return &net.UnixAddr{Name: a.Name, Net: "unix"}
	}
	if network == "unix" {
		return &net.UnixAddr{Net: "unix"}
	}
	return &net.TCPAddr{}
}

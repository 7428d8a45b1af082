package transport

// Test hooks for the external tests (package transport_test), which use
// transporttest and so cannot be in this package.

// FDOf is c's descriptor, for a test that asks the kernel about the
// socket.
func FDOf(c *Conn) int { return c.fd }

// RingMappedOf reports whether c still maps the ring it moved onto.
func RingMappedOf(c *Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ring.Load().mem != nil
}

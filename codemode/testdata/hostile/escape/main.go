// Command escape is a program vetting would refuse: it tries to write a
// host file, dial a host listener and read a host secret, printing one
// line per attempt ("ok" or the error). The end-to-end tests build it
// without vetting, run it in the run jail (every attempt must fail) and
// directly (the control: every attempt succeeds).
package main

import (
	"fmt"
	"net"
	"os"
)

func main() {
	write, dial, secret := os.Args[1], os.Args[2], os.Args[3]
	report := func(what string, err error) {
		if err != nil {
			fmt.Printf("%s: %v\n", what, err)
			return
		}
		fmt.Printf("%s: ok\n", what)
	}
	report("write", os.WriteFile(write, []byte("escaped"), 0o644))
	c, err := net.Dial("tcp", dial)
	if err == nil {
		c.Close()
	}
	report("dial", err)
	_, err = os.ReadFile(secret)
	report("read", err)
}

// Command flood abuses its capability channel at fd 5, as argument 1
// says: "garbage" writes bytes that are no frame; "noread" sends valid
// kv.get calls as fast as it can and never reads an answer; "dup" sends
// two calls under one id while the first is still in flight. It is built without vetting by the end-to-end
// tests, which check the host ends the execution and is never held.
package main

import (
	"encoding/binary"
	"os"
	"time"
)

// frame encodes {v:1, id, kind:"cap_call", body:{cap:"kv.get", args:{key:"k"}}}
// by hand: the program may not link the prelude's codec.
func frame(id uint32) []byte { return callFrame(id, false) }

// slowFrame is a proc.run of "sleep 5": a call that stays in flight.
func slowFrame(id uint32) []byte { return callFrame(id, true) }

func callFrame(id uint32, slow bool) []byte {
	var b []byte
	str := func(s string) { b = append(b, 0xa0|byte(len(s))); b = append(b, s...) }
	b = append(b, 0x84)
	str("v")
	b = append(b, 0x01)
	str("id")
	b = append(b, 0xce)
	b = binary.BigEndian.AppendUint32(b, id)
	str("kind")
	str("cap_call")
	str("body")
	b = append(b, 0x82)
	str("cap")
	if slow {
		str("proc.run")
		str("args")
		b = append(b, 0x81)
		str("argv")
		b = append(b, 0x92)
		str("sleep")
		str("5")
	} else {
		str("kv.get")
		str("args")
		b = append(b, 0x81)
		str("key")
		str("k")
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

func main() {
	ch := os.NewFile(5, "channel")
	switch os.Args[1] {
	case "garbage":
		junk := make([]byte, 4096)
		for i := range junk {
			junk[i] = byte(i*7 + 3)
		}
		for {
			if _, err := ch.Write(junk); err != nil {
				os.Exit(3)
			}
		}
	case "noread":
		for id := uint32(1); ; id++ {
			if _, err := ch.Write(frame(id)); err != nil {
				time.Sleep(time.Hour) // the host stopped reading: wait to be killed
			}
		}
	case "dup":
		ch.Write(slowFrame(7))
		ch.Write(slowFrame(7))
		time.Sleep(time.Hour)
	}
}

// Command flood abuses its capability channel at fd 5, as argument 1
// says: "garbage" writes bytes that are no frame; "noread" sends valid
// kv.get calls as fast as it can and never reads an answer; "dup" sends
// two proc.run calls under one id. It is built without vetting by the
// end-to-end tests, which check the host ends the execution and is never
// held.
package main

import (
	"encoding/binary"
	"os"
	"time"
)

// frame encodes {v:1, id, kind:"cap_call", body:{cap:"kv.get", args:{key:"k"}}}
// by hand: the program may not link the prelude's codec.
func frame(id uint32) []byte {
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
	str("kv.get")
	str("args")
	b = append(b, 0x81)
	str("key")
	str("k")
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

// slowFrame encodes a cap_call of proc.run ["sleep", "5"] by hand: a
// call still in flight when the next frame arrives.
func slowFrame(id uint32) []byte {
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
	str("proc.run")
	str("args")
	b = append(b, 0x81)
	str("argv")
	b = append(b, 0x92)
	str("sleep")
	str("5")
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
		// kv calls are answered before the next frame is read, so two
		// under one id are never in flight at once: a proc.run is.
		ch.Write(slowFrame(7))
		ch.Write(slowFrame(7))
		time.Sleep(time.Hour)
	}
}

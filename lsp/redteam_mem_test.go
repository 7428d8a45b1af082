package lsp

import (
	"runtime"
	"sync/atomic"
	"time"
)

type runtimeMem struct {
	base uint64
	max  atomic.Uint64
	stop chan struct{}
}

func (m *runtimeMem) start() {
	runtime.GC()
	var s runtime.MemStats
	runtime.ReadMemStats(&s)
	m.base = s.HeapAlloc
	m.stop = make(chan struct{})
	go func() {
		for {
			select {
			case <-m.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			var s runtime.MemStats
			runtime.ReadMemStats(&s)
			if s.HeapAlloc > m.max.Load() {
				m.max.Store(s.HeapAlloc)
			}
		}
	}()
}

func (m *runtimeMem) peak() uint64 {
	close(m.stop)
	if m.max.Load() < m.base {
		return 0
	}
	return m.max.Load() - m.base
}

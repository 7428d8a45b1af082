package codemode

import (
	"context"
	"testing"
	"time"

	"github.com/agentloom/loom/codemode/internal/transport"
	"github.com/agentloom/loom/codemode/internal/transport/transporttest"
)

// Helpers of the red team's ring tests (redteam_ring_*_test.go) beside
// transporttest's: a channel whose *channel a test can end itself.

// rtChannel is testChannel keeping the *channel, so a test can end it
// while the program is still there (testChannel's finish waits for
// serve first).
func rtChannel(t *testing.T, route router) (*guest, *transport.Conn, *channel, <-chan error) {
	t.Helper()
	host, conn := transporttest.Ends(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch := newChannel(ctx, host, route, newRecorder(time.Now))
	served := make(chan error, 1)
	go func() { served <- ch.serve() }()
	return &guest{conn: conn}, host, ch, served
}

package sqlite

import (
	"context"
	"database/sql"
)

// checkpointEntries is how many entries the writer adds between requests
// to the background checkpointer. A batch of this size writes a few
// thousand WAL pages; smaller writes accumulate until they reach it.
const checkpointEntries = 4096

// The background checkpointer. Under WAL every commit appends pages to the
// log, and a checkpoint copies them back into the database file. Left to
// the writer (SQLite's autocheckpoint), that copy runs inside a commit and
// stalls ingest; here a goroutine with its own connection runs a PASSIVE
// checkpoint, which never waits for the writer or for readers, whenever
// the writer has added checkpointEntries entries since its last request,
// so the copy overlaps the next batch on another core. A checkpoint that
// fails or finds the log busy is simply retried at the next request, and
// the writer's own autocheckpoint (walCheckpointPages) stays in place as
// the bound on the log when requests stop or fall behind.

// checkpointer owns the background checkpoint goroutine and its
// connection.
type checkpointer struct {
	db    *sql.DB
	kick  chan struct{} // capacity 1: a request pending or not
	done  chan struct{} // closed when the goroutine has exited
	since int           // entries added since the last request; guarded by Store.mu
}

// startCheckpointer opens the checkpoint connection (lazily, on its first
// use) with dsn and starts the goroutine.
func startCheckpointer(dsn string) (*checkpointer, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	c := &checkpointer{db: db, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go c.run()
	return c, nil
}

func (c *checkpointer) run() {
	defer close(c.done)
	for range c.kick {
		// The answer (busy flag, log and checkpointed page counts) is
		// not needed: a partial or failed checkpoint is retried at the
		// next request.
		var busy, log, done int
		_ = c.db.QueryRowContext(context.Background(), `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done)
	}
}

// added records n entries committed by the writer and requests a
// checkpoint once checkpointEntries have accumulated. It never blocks:
// while a request is pending, another adds nothing. Called under Store.mu.
func (c *checkpointer) added(n int) {
	c.since += n
	if c.since < checkpointEntries {
		return
	}
	c.since = 0
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// close stops the goroutine, letting a running checkpoint finish, and
// closes the connection. Called once, under Store.mu.
func (c *checkpointer) close() error {
	close(c.kick)
	<-c.done
	return c.db.Close()
}
